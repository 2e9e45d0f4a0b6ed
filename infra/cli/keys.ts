/**
 * `npm run keys -- <create|list|revoke>`: manages API keys. A new key is printed once and only
 * its hash is stored. Talks to the local DynamoDB unless --stage names a deployed one.
 *
 *   npm run keys -- create --name NAME [--quiet]
 *   npm run keys -- list
 *   npm run keys -- revoke KEY_ID
 */
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { KEY_CACHE_TTL_MS } from "../../lib/auth/verifier";
import type { StageName } from "../../lib/config";
import { ensureTable, startEmbeddedDynamo } from "../local/dynamo";
import { DEFAULT_DYNAMODB_PORT, LOCAL_DATA_DIR, LOCAL_HOST, LOCAL_REGION, LOCAL_TABLE_NAME } from "../local/settings";

const usage = `Usage:
  npm run keys -- create --name NAME [--quiet]   issue a key; prints it once (--quiet: only the key)
  npm run keys -- list                           list keys (id, name, created, revoked)
  npm run keys -- revoke KEY_ID                  revoke a key; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s
Options:
  --endpoint URL   a DynamoDB-compatible endpoint (default: DYNAMODB_ENDPOINT, or the local one)
  --table NAME     the table (default: PETS_TABLE_NAME, or ${LOCAL_TABLE_NAME})`;

class UsageError extends Error {}

/** The local DynamoDB: the running `npm start` one, or the data folder opened directly. */
async function localDynamo(endpoint: string | undefined): Promise<{ endpoint: string; close: () => Promise<void> }> {
  if (endpoint) return { endpoint, close: async () => undefined };
  const running = `http://${LOCAL_HOST}:${DEFAULT_DYNAMODB_PORT}`;
  try {
    await fetch(running, { method: "POST", signal: AbortSignal.timeout(500) });
    return { endpoint: running, close: async () => undefined };
  } catch {
    const embedded = await startEmbeddedDynamo({ host: LOCAL_HOST, port: 0, path: LOCAL_DATA_DIR });
    return embedded;
  }
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      quiet: { type: "boolean", default: false },
      endpoint: { type: "string" },
      table: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(usage);
    return;
  }
  const stage: StageName = "local";
  const tableName = values.table ?? process.env.PETS_TABLE_NAME ?? LOCAL_TABLE_NAME;
  const dynamo = await localDynamo(values.endpoint ?? process.env.DYNAMODB_ENDPOINT);
  try {
    const client = new DynamoDBClient({
      region: LOCAL_REGION,
      endpoint: dynamo.endpoint,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    await ensureTable(client, tableName);
    const store = new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), tableName);
    switch (command) {
      case "create": {
        if (!values.name) throw new UsageError("create needs --name NAME (who or what the key is for).");
        const { key, record } = await issueApiKey(store, stage, values.name);
        if (values.quiet) console.log(key);
        else console.log(`Created ${record.keyId} (${record.name}). The key is shown once; store it now:\n${key}`);
        return;
      }
      case "list": {
        const records = await store.list();
        if (records.length === 0) console.log("No keys.");
        for (const record of records) {
          console.log(
            [
              record.keyId,
              record.createdAt,
              record.revokedAt ? `revoked ${record.revokedAt}` : "active",
              record.name,
            ].join("\t"),
          );
        }
        return;
      }
      case "revoke": {
        const keyId = rest[0];
        if (!keyId) throw new UsageError("revoke needs the key id (see: npm run keys -- list).");
        if (!(await store.revoke(keyId, new Date()))) throw new UsageError(`No key has id ${keyId}.`);
        console.log(`Revoked ${keyId}; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s.`);
        return;
      }
      default:
        throw new UsageError(`Unknown command "${command}".\n${usage}`);
    }
  } finally {
    await dynamo.close();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(
    error instanceof UsageError || error instanceof TypeError ? `keys: ${(error as Error).message}` : error,
  );
  process.exit(1);
});
