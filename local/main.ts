/**
 * `npm start`: the whole API on this machine. Starts the embedded DynamoDB (dynalite, persisted
 * under .data/ unless --in-memory), creates the table, makes sure an API key exists, serves
 * http://127.0.0.1:3000/v1 (and the reference at /docs) and prints how to call it.
 *
 * Environment: PORT (3000), DYNAMODB_PORT (8000), DYNAMODB_ENDPOINT (use that DynamoDB instead of
 * the embedded one), PETSTORE_API_KEY (pin the local key), PETS_TABLE_NAME (petstore-local).
 */
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { apiKeyPrefix, hasApiKeyShape, hashApiKey, issueApiKey } from "../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { API_BASE_PATH } from "../lib/routes";
import { DOCS_PATH, OPENAPI_PATH } from "./apiDocs";
import { type EmbeddedDynamo, ensureTable, startEmbeddedDynamo } from "./dynamo";
import { type LocalApi, startLocalApi } from "./server";
import {
  DEFAULT_API_PORT,
  DEFAULT_DYNAMODB_PORT,
  LOCAL_DATA_DIR,
  LOCAL_HOST,
  LOCAL_REGION,
  LOCAL_TABLE_NAME,
} from "./settings";

// The SDK's notice about Node 20 concerns this machine, not the API: the deployed functions run on
// Node 24. Left on, it is the first thing a developer reads after `npm start`.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

class StartupError extends Error {}

function portFrom(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new StartupError(`${name} must be a port number, not "${raw}".`);
  return port;
}

function isAddressInUse(error: unknown): boolean {
  return (error as { code?: unknown })?.code === "EADDRINUSE";
}

/** Ensures a usable local key: the pinned one (stored if new), or a fresh one. */
async function localApiKey(store: DynamoApiKeyStore): Promise<{ key: string; pinned: boolean }> {
  const pinned = process.env.PETSTORE_API_KEY;
  if (pinned) {
    if (!hasApiKeyShape(pinned, "local")) {
      throw new StartupError(
        `PETSTORE_API_KEY must look like ${apiKeyPrefix("local")}<43 letters or digits>; make one with: npm run keys -- create --name me`,
      );
    }
    const existing = await store.findByHash(hashApiKey(pinned));
    if (existing?.revokedAt)
      throw new StartupError("PETSTORE_API_KEY was revoked; create another with: npm run keys -- create --name me");
    if (!existing) await issueApiKey(store, "local", "PETSTORE_API_KEY", new Date(), pinned);
    return { key: pinned, pinned: true };
  }
  const { key } = await issueApiKey(store, "local", `npm start ${new Date().toISOString()}`);
  return { key, pinned: false };
}

async function main(): Promise<void> {
  let values: { "in-memory": boolean };
  try {
    ({ values } = parseArgs({ options: { "in-memory": { type: "boolean", default: false } } }));
  } catch (error) {
    throw new StartupError(`${(error as Error).message}. Usage: npm start [-- --in-memory]`);
  }
  const apiPort = portFrom("PORT", DEFAULT_API_PORT);
  const tableName = process.env.PETS_TABLE_NAME || LOCAL_TABLE_NAME;
  let embedded: EmbeddedDynamo | undefined;
  let api: LocalApi | undefined;

  const shutdown = async (signal: string) => {
    console.log(`\n${signal}: finishing requests in flight, then closing the database...`);
    await api?.close();
    await embedded?.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));

  let endpoint = process.env.DYNAMODB_ENDPOINT;
  if (!endpoint) {
    const dynamoPort = portFrom("DYNAMODB_PORT", DEFAULT_DYNAMODB_PORT);
    try {
      embedded = await startEmbeddedDynamo({
        host: LOCAL_HOST,
        port: dynamoPort,
        ...(values["in-memory"] ? {} : { path: LOCAL_DATA_DIR }),
      });
    } catch (error) {
      if (isAddressInUse(error)) {
        throw new StartupError(
          `Port ${dynamoPort} for the embedded DynamoDB is in use (another npm start?); stop it or set DYNAMODB_PORT.`,
        );
      }
      throw error;
    }
    endpoint = embedded.endpoint;
  }

  // On a terminal, one readable line per request; otherwise the JSON the deployed stages log.
  const pretty = Boolean(process.stdout.isTTY);
  // The handlers read their configuration once, when first imported by startLocalApi.
  Object.assign(process.env, {
    PETSTORE_LOG_FORMAT: pretty ? "pretty" : "json",
    PETS_TABLE_NAME: tableName,
    PETSTORE_STAGE: "local",
    DYNAMODB_ENDPOINT: endpoint,
    AWS_REGION: process.env.AWS_REGION || LOCAL_REGION,
  });
  const client = new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  await ensureTable(client, tableName);
  const { key, pinned } = await localApiKey(new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), tableName));

  try {
    api = await startLocalApi({
      host: LOCAL_HOST,
      port: apiPort,
      onRequest: (entry) =>
        console.log(
          pretty
            ? `${entry.method} ${entry.path} ${entry.status} ${entry.durationMs.toFixed(1)}ms ${entry.requestId}`
            : JSON.stringify({ timestamp: new Date().toISOString(), level: "INFO", message: "gateway", ...entry }),
        ),
    });
  } catch (error) {
    await embedded?.close();
    if (isAddressInUse(error))
      throw new StartupError(`Port ${apiPort} is in use; stop what uses it or set PORT to another port.`);
    throw error;
  }

  const origin = api.baseUrl.slice(0, -API_BASE_PATH.length);
  const storage = embedded
    ? values["in-memory"]
      ? "embedded dynalite, in memory"
      : `embedded dynalite, data in ${LOCAL_DATA_DIR}`
    : endpoint;
  console.log(
    [
      `Pet Store API on ${api.baseUrl}`,
      `Reference: ${origin}${DOCS_PATH} (OpenAPI document: ${origin}${OPENAPI_PATH})`,
      `DynamoDB: ${storage} (table ${tableName})`,
      `API key${pinned ? " (from PETSTORE_API_KEY)" : " (new for this run; pin one with PETSTORE_API_KEY)"}: ${key}`,
      "",
      "Try:",
      `  curl -H 'Authorization: Bearer ${key}' '${api.baseUrl}/pets?limit=5'`,
      `  curl -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '{"name":"Rex","categoryId":1}' '${api.baseUrl}/pets'`,
      "",
      "Ctrl-C stops the server.",
    ].join("\n"),
  );
}

main().catch((error: unknown) => {
  console.error(error instanceof StartupError ? `npm start: ${error.message}` : error);
  process.exit(1);
});
