/**
 * `npm start`: the whole API on this machine. Starts the embedded DynamoDB (dynalite, persisted
 * under .data/ unless --in-memory), creates the table, makes sure an API key exists, serves
 * http://127.0.0.1:3000/v1 (and the reference at /docs) and prints how to call it.
 * Options and environment: `npm start -- --help` (./startOptions.ts).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { API_BASE_PATH } from "../lib/routes";
import { DOCS_PATH, OPENAPI_PATH } from "./apiDocs";
import { DataFolderInUseError, type EmbeddedDynamo, ensureTable, startEmbeddedDynamo } from "./dynamo";
import { type LocalKeySource, localApiKey } from "./localKey";
import { type Announcement, announceNpmStart } from "./npmStartMarker";
import { type LocalApi, startLocalApi } from "./server";
import { LOCAL_DATA_DIR, LOCAL_HOST, LOCAL_KEY_FILE, LOCAL_REGION, silenceSdkNodeVersionWarning } from "./settings";
import { createStartLog } from "./startLog";
import { parseStartArguments, START_USAGE, type StartOptions, StartupError } from "./startOptions";

silenceSdkNodeVersionWarning();

function isAddressInUse(error: unknown): boolean {
  return (error as { code?: unknown })?.code === "EADDRINUSE";
}

const keyDescriptions: Record<LocalKeySource, string> = {
  pinned: "from PETSTORE_API_KEY",
  saved: `the one saved in ${LOCAL_KEY_FILE}, the same at every start`,
  new: `new, saved in ${LOCAL_KEY_FILE} for the next starts`,
  replaced: `new (the one saved in ${LOCAL_KEY_FILE} was revoked or unreadable), saved there for the next starts`,
  "in-memory": "new for this in-memory run",
};

function storageDescription(options: StartOptions, endpoint: string): string {
  if (options.dynamoEndpoint) return endpoint;
  return options.inMemory ? "embedded dynalite, in memory" : `embedded dynalite, data in ${LOCAL_DATA_DIR}`;
}

/** What a person reads first. The key appears once, in the line meant to be pasted. */
function banner(options: StartOptions, api: LocalApi, endpoint: string, key: string, source: LocalKeySource): string {
  const origin = api.baseUrl.slice(0, -API_BASE_PATH.length);
  return [
    `Pet Store API on ${api.baseUrl}`,
    `Reference: ${origin}${DOCS_PATH} (OpenAPI document: ${origin}${OPENAPI_PATH})`,
    `DynamoDB: ${storageDescription(options, endpoint)} (table ${options.tableName})`,
    ...(options.inMemoryFromNpm
      ? ["In memory as asked: npm kept --in-memory as its own setting and passed it on as npm_config_in_memory."]
      : []),
    `API key: ${keyDescriptions[source]}`,
    "",
    "Paste into a shell to call the API (the README's examples use $BASE and $KEY):",
    `  export BASE=${api.baseUrl} KEY=${key}`,
    `  curl -H "Authorization: Bearer $KEY" "$BASE/pets?limit=5"`,
    `  curl -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"name":"Rex","categoryId":1}' "$BASE/pets"`,
    "",
    "Ctrl-C stops the server.",
  ].join("\n");
}

async function main(): Promise<void> {
  const command = parseStartArguments(process.argv.slice(2), process.env, Boolean(process.stdout.isTTY));
  if (command.help) {
    console.log(START_USAGE);
    return;
  }
  const { options } = command;
  const log = createStartLog(options.logFormat);
  let embedded: EmbeddedDynamo | undefined;
  let api: LocalApi | undefined;
  let announcement: Announcement | undefined;

  const shutdown = async (signal: string) => {
    log.stopping(signal);
    await api?.close();
    await announcement?.withdraw();
    await embedded?.close();
    log.stopped();
    process.exit(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));

  let endpoint = options.dynamoEndpoint;
  if (!endpoint) {
    try {
      embedded = await startEmbeddedDynamo({
        host: LOCAL_HOST,
        port: options.dynamoPort,
        ...(options.inMemory ? {} : { path: LOCAL_DATA_DIR }),
      });
    } catch (error) {
      if (error instanceof DataFolderInUseError) {
        throw new StartupError(
          `The data folder ${LOCAL_DATA_DIR} is in use by another npm start (or npm run keys); stop it, or start this one with: npm start -- --in-memory`,
        );
      }
      if (isAddressInUse(error)) {
        throw new StartupError(
          `Port ${options.dynamoPort} for the embedded DynamoDB is in use (another npm start?); stop it or set DYNAMODB_PORT.`,
        );
      }
      throw error;
    }
    endpoint = embedded.endpoint;
  }

  // The handlers read their configuration once, when first imported by startLocalApi.
  Object.assign(process.env, {
    PETSTORE_LOG_FORMAT: options.logFormat,
    PETS_TABLE_NAME: options.tableName,
    PETSTORE_STAGE: "local",
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: process.env.AWS_REGION || LOCAL_REGION,
  });
  const client = new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    await ensureTable(client, options.tableName);
    // So that `npm run keys` can tell this npm start's database from whatever else answers on its port.
    if (embedded) {
      announcement = await announceNpmStart(client, {
        endpoint,
        tableName: options.tableName,
        dataDir: options.inMemory ? null : LOCAL_DATA_DIR,
      });
    }
    const { key, source } = await localApiKey(
      new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), options.tableName),
      { pinned: options.pinnedKey, keyFile: options.inMemory ? undefined : LOCAL_KEY_FILE },
    );
    api = await startLocalApi({
      host: LOCAL_HOST,
      port: options.apiPort,
      onRequest: log.request,
      onHandlerFailure: log.handlerFailed,
    });
    console.log(banner(options, api, endpoint, key, source));
  } catch (error) {
    await announcement?.withdraw();
    await embedded?.close();
    if (isAddressInUse(error))
      throw new StartupError(
        `Port ${options.apiPort} is in use; stop what uses it, or choose another with --port or PORT.`,
      );
    throw error;
  }
}

main().catch((error: unknown) => {
  // A configuration the handlers refuse (LOG_LEVEL, for one) is as fixable as our own checks.
  const fixable = error instanceof StartupError || (error as Error)?.name === "ConfigError";
  console.error(fixable ? `npm start: ${(error as Error).message}` : error);
  process.exit(1);
});
