/**
 * `npm start`: the whole API on this machine. Starts the embedded DynamoDB (dynalite, persisted
 * under .data/ unless --in-memory), creates the table, issues a key (or uses the pinned one), serves
 * http://127.0.0.1:3000/v1 (and the reference at /docs) and prints how to call it.
 * Options and environment: `npm start -- --help` (./startOptions.ts).
 */
import { createServer } from "node:net";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { API_BASE_PATH } from "../lib/routes";
import { DOCS_PATH, OPENAPI_PATH } from "./apiDocs";
import { DataFolderInUseError, type EmbeddedDynamo, ensureTable, startEmbeddedDynamo } from "./dynamo";
import { localClient, notDynamo } from "./localDatabase";
import { deleteKeyFileOfEarlierVersions, KEY_FILE_OF_EARLIER_VERSIONS, type LocalKey, localApiKey } from "./localKey";
import { type Announcement, announceNpmStart } from "./npmStartMarker";
import { type LocalApi, startLocalApi } from "./server";
import { LOCAL_DATA_DIR, LOCAL_HOST, LOCAL_REGION, silenceSdkNodeVersionWarning } from "./settings";
import { createStartLog } from "./startLog";
import { apiPortNote, parseStartArguments, START_USAGE, type StartOptions, StartupError } from "./startOptions";

silenceSdkNodeVersionWarning();

function isAddressInUse(error: unknown): boolean {
  return (error as { code?: unknown })?.code === "EADDRINUSE";
}

/** Whether something already listens on the port (a listen attempt, closed at once). */
function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (error) => resolve(isAddressInUse(error)));
    probe.listen(port, host, () => probe.close(() => resolve(false)));
  });
}

/**
 * The first port above `port` that nothing listens on and that is not in `avoid` (the other port
 * of the suggestion); 0 (any free port) if none is near.
 */
async function nextFreePort(port: number, avoid: readonly number[]): Promise<number> {
  for (let candidate = port + 1; candidate <= Math.min(port + 100, 65535); candidate++) {
    if (!avoid.includes(candidate) && !(await portInUse(LOCAL_HOST, candidate))) return candidate;
  }
  return 0;
}

/**
 * What a start whose data folder another npm start holds should do. `--in-memory` alone only helps
 * when that other start is on other ports; usually it is on the same (the defaults), which
 * --in-memory would meet next. Each port suggested instead is free now and differs from the other
 * (a blind +1 could land on the other start's DynamoDB port).
 */
async function dataFolderInUseHint(options: StartOptions): Promise<string> {
  const apiTaken = await portInUse(LOCAL_HOST, options.apiPort);
  const dynamoTaken = await portInUse(LOCAL_HOST, options.dynamoPort);
  const folder = `The data folder ${LOCAL_DATA_DIR} is in use by another npm start (or npm run keys)`;
  if (!apiTaken && !dynamoTaken) return `${folder}; stop it, or start this one with: npm start -- --in-memory`;
  const taken = [...(apiTaken ? [options.apiPort] : []), ...(dynamoTaken ? [options.dynamoPort] : [])];
  const apiPort = apiTaken ? await nextFreePort(options.apiPort, [options.dynamoPort]) : options.apiPort;
  const dynamoPort = dynamoTaken ? await nextFreePort(options.dynamoPort, [options.apiPort, apiPort]) : undefined;
  const command = [
    "npm start -- --in-memory",
    ...(apiTaken ? [`--port ${apiPort}`] : []),
    ...(dynamoPort === undefined ? [] : [`--dynamodb-port ${dynamoPort}`]),
  ].join(" ");
  return (
    `${folder}, and so ${taken.length === 1 ? "is port" : "are ports"} ${taken.join(" and ")}; stop it, or start ` +
    `this one on other ports with its own data: ${command}`
  );
}

const LASTING_KEY = "npm run keys -- create --name me";

/** What the banner says of the key: where it came from, and what the next start does to it. */
function keyLines(options: StartOptions, localKey: LocalKey): string[] {
  if (localKey.source === "pinned") {
    return localKey.madeByNpmStart
      ? [
          "API key: from PETSTORE_API_KEY, a key an earlier npm start made: the next start without PETSTORE_API_KEY revokes it",
          `  (a key that lasts: ${LASTING_KEY})`,
        ]
      : ["API key: from PETSTORE_API_KEY"];
  }
  if (options.inMemory && !options.dynamoEndpoint) return ["API key: new for this in-memory run"];
  const { revoked } = localKey;
  const what =
    revoked === 0
      ? "new; the next npm start revokes it and makes another"
      : revoked === 1
        ? "new; the previous start's key was revoked"
        : `new; the ${revoked} keys earlier starts made were revoked`;
  return [
    `API key: ${what}`,
    `  (to keep one key across restarts: PETSTORE_API_KEY=<a key from ${LASTING_KEY}> npm start)`,
  ];
}

/** Where the data is, the table, and the endpoint (which `npm run keys` and other tools can use). */
function storageDescription(options: StartOptions, endpoint: string): string {
  if (options.dynamoEndpoint) return `${endpoint} (table ${options.tableName})`;
  const engine = options.inMemory ? "embedded dynalite, in memory" : `embedded dynalite, data in ${LOCAL_DATA_DIR}`;
  return `${engine} (table ${options.tableName}) at ${endpoint}`;
}

/** What a person reads first. The key appears once, in the line meant to be pasted. */
function banner(
  options: StartOptions,
  api: LocalApi,
  endpoint: string,
  localKey: LocalKey,
  deletedKeyFile: boolean,
): string {
  const origin = api.baseUrl.slice(0, -API_BASE_PATH.length);
  return [
    `Pet Store API on ${api.baseUrl} ${apiPortNote(options.apiPortSource)}`,
    `Reference: ${origin}${DOCS_PATH} (OpenAPI document: ${origin}${OPENAPI_PATH})`,
    `DynamoDB: ${storageDescription(options, endpoint)}`,
    ...(options.inMemoryFromNpm
      ? ["In memory as asked: npm kept --in-memory as its own setting and passed it on as npm_config_in_memory."]
      : []),
    ...(deletedKeyFile
      ? [
          `Deleted ${KEY_FILE_OF_EARLIER_VERSIONS}, where an earlier version kept its key in plain text: keys are not kept on disk.`,
        ]
      : []),
    ...keyLines(options, localKey),
    "",
    "Paste into a shell to call the API (the README's examples use $BASE and $KEY):",
    `  export BASE=${api.baseUrl} KEY=${localKey.key}`,
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
  // Before anything else, so that no failure further on leaves an old key on disk.
  const deletedKeyFile = await deleteKeyFileOfEarlierVersions();
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
        throw new StartupError(await dataFolderInUseHint(options));
      }
      if (isAddressInUse(error)) {
        throw new StartupError(
          `Port ${options.dynamoPort} for the embedded DynamoDB is in use (another npm start?); stop it, or choose another with --dynamodb-port or DYNAMODB_PORT.`,
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
  const client = localClient(endpoint);
  try {
    await ensureTable(client, options.tableName).catch((error: unknown) => {
      // Someone else's DynamoDB: say which and what to do, in one line, rather than the SDK's error.
      if (!options.dynamoEndpoint) throw error;
      const problem = notDynamo(
        error,
        options.dynamoEndpoint,
        "check DYNAMODB_ENDPOINT, or unset it to use the embedded one",
        "start the DynamoDB there, or correct DYNAMODB_ENDPOINT (unset, npm start runs its own)",
      );
      throw new StartupError(problem.message);
    });
    // So that `npm run keys` can tell this npm start's database from whatever else answers on its port.
    if (embedded) {
      announcement = await announceNpmStart(client, {
        endpoint,
        tableName: options.tableName,
        dataDir: options.inMemory ? null : LOCAL_DATA_DIR,
      });
    }
    const localKey = await localApiKey(new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), options.tableName), {
      pinned: options.pinnedKey,
    });
    api = await startLocalApi({
      host: LOCAL_HOST,
      port: options.apiPort,
      onRequest: log.request,
      onHandlerFailure: log.handlerFailed,
    });
    console.log(banner(options, api, endpoint, localKey, deletedKeyFile));
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
