/**
 * The local DynamoDB a command (`npm run keys`) should use, found the way `npm start` chose its own
 * (local/settings.ts: DYNAMODB_ENDPOINT, else the embedded one on DYNAMODB_PORT), and checked
 * before anything is written:
 * - DYNAMODB_ENDPOINT (or --endpoint): it must answer as DynamoDB and already hold this project's
 *   table (`npm start` with the same endpoint creates it); a table is never created there.
 * - Otherwise, this folder's running `npm start` on that port, recognised by its note and the
 *   instance tag on its table (local/npmStartMarker.ts), never just whatever listens on the port.
 * - Otherwise, this folder's running `npm start` on another port, found by its note and checked the
 *   same way (the one holding the data folder, else the only one running): used at once, and said
 *   in a notice, rather than asking to run again with its port.
 * - Otherwise, no `npm start` of this folder runs: the data folder, opened directly.
 */
import {
  DescribeTableCommand,
  DynamoDBClient,
  ResourceNotFoundException,
  type TableDescription,
} from "@aws-sdk/client-dynamodb";
import { isPetTable } from "../lib/db/table";
import { ensureTable, startEmbeddedDynamo } from "./dynamo";
import { instanceTag, type NpmStartMarker, runningNpmStarts } from "./npmStartMarker";
import { LOCAL_DATA_DIR, LOCAL_HOST, LOCAL_REGION, LOCAL_RUN_DIR, type LocalDynamoSetting } from "./settings";

/** The local database cannot be used; the message says why, in one line. Nothing was written. */
export class LocalDatabaseError extends Error {}

export interface LocalDatabase {
  readonly client: DynamoDBClient;
  /** What it is, for messages: "the data folder .data/dynamodb", "this folder's npm start (DynamoDB port 8000)", the endpoint. */
  readonly description: string;
  close(): Promise<void>;
}

/** A client for a local DynamoDB: quick to give up, since a local database answers at once or not at all. */
export function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 5000, throwOnRequestTimeout: true },
  });
}

const unreachableCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT"]);

/** Whether `error` says that nothing answered at all (refused, unknown host, timed out). */
function isUnreachable(error: unknown): boolean {
  const { code, name } = error as { code?: string; name?: string };
  return (code !== undefined && unreachableCodes.has(code)) || name === "TimeoutError";
}

/**
 * Why a call to `where` failed, as one line, for anything but a missing table; `fix` says what to
 * do, `unreachable` (when given) what to do when nothing answered at all.
 */
export function notDynamo(error: unknown, where: string, fix: string, unreachable = fix): LocalDatabaseError {
  const { code, $metadata } = error as { code?: string; $metadata?: { httpStatusCode?: number } };
  if (isUnreachable(error)) {
    return new LocalDatabaseError(`cannot reach ${where} (${code ?? "no answer"}); ${unreachable}.`);
  }
  const status = $metadata?.httpStatusCode ? ` (HTTP ${$metadata.httpStatusCode})` : "";
  return new LocalDatabaseError(`${where} does not answer as DynamoDB${status}; ${fix}.`);
}

/** The table, if `where` answers as DynamoDB and holds this project's table under that name. */
async function petTableAt(
  client: DynamoDBClient,
  tableName: string,
  where: string,
  fix: { unusable: string; missing: string; unreachable?: string },
): Promise<TableDescription> {
  let table: TableDescription | undefined;
  try {
    ({ Table: table } = await client.send(new DescribeTableCommand({ TableName: tableName })));
  } catch (error) {
    if (error instanceof ResourceNotFoundException)
      throw new LocalDatabaseError(`${where} has no table ${tableName}; ${fix.missing}.`);
    throw notDynamo(error, where, fix.unusable, fix.unreachable);
  }
  if (!table || !isPetTable(table)) {
    throw new LocalDatabaseError(
      `table ${tableName} at ${where} is not a Pet Store table (other keys); ${fix.missing}.`,
    );
  }
  return table;
}

async function namedEndpoint(endpoint: string, tableName: string, source: string): Promise<LocalDatabase> {
  const client = localClient(endpoint);
  const where = endpoint;
  try {
    await petTableAt(client, tableName, where, {
      unusable: `check ${source}`,
      missing: `npm start with the same ${source} creates it, or set PETS_TABLE_NAME`,
      unreachable: `start the DynamoDB there, or correct or unset ${source}`,
    });
  } catch (error) {
    client.destroy();
    throw error;
  }
  return { client, description: where, close: async () => client.destroy() };
}

async function runningNpmStart(marker: NpmStartMarker, tableName: string): Promise<LocalDatabase> {
  if (marker.tableName !== tableName) {
    throw new LocalDatabaseError(
      `this folder's npm start (pid ${marker.pid}) uses table ${marker.tableName}, not ${tableName}: set PETS_TABLE_NAME=${marker.tableName}.`,
    );
  }
  const client = localClient(marker.endpoint);
  const where = `the DynamoDB on port ${marker.port}`;
  const unusable = `it is not this folder's npm start (pid ${marker.pid}); stop what uses port ${marker.port}, then restart npm start`;
  try {
    const table = await petTableAt(client, tableName, where, { unusable, missing: unusable });
    let tag: string | undefined;
    try {
      tag = await instanceTag(client, table.TableArn ?? "");
    } catch (error) {
      throw notDynamo(error, where, unusable);
    }
    if (tag !== marker.instance)
      throw new LocalDatabaseError(`${where} is not this folder's npm start (pid ${marker.pid}).`);
  } catch (error) {
    client.destroy();
    throw error;
  }
  return {
    client,
    description: `this folder's npm start (DynamoDB port ${marker.port})`,
    close: async () => client.destroy(),
  };
}

async function dataFolder(dataDir: string, tableName: string): Promise<LocalDatabase> {
  const embedded = await startEmbeddedDynamo({ host: LOCAL_HOST, port: 0, path: dataDir });
  const client = localClient(embedded.endpoint);
  try {
    // Our own data: the table is created on first use, as npm start would.
    await ensureTable(client, tableName);
  } catch (error) {
    client.destroy();
    await embedded.close();
    throw error;
  }
  return {
    client,
    description: `the data folder ${dataDir}`,
    close: async () => {
      client.destroy();
      await embedded.close();
    },
  };
}

function severalRunning(markers: readonly NpmStartMarker[]): LocalDatabaseError {
  const ports = markers.map((marker) => marker.port).join(", ");
  return new LocalDatabaseError(
    `several npm start of this folder are running (DynamoDB ports ${ports}): set DYNAMODB_PORT to one.`,
  );
}

export interface OpenLocalDatabaseOptions {
  /** Where an endpoint setting came from, for messages (default DYNAMODB_ENDPOINT). */
  readonly endpointSource?: string;
  /** Receives one line when the database used is not the one the settings named (another port's npm start). */
  readonly notice?: (line: string) => void;
}

/** Paths are relative to the working folder. */
export async function openLocalDatabase(
  setting: LocalDynamoSetting,
  tableName: string,
  options: OpenLocalDatabaseOptions = {},
): Promise<LocalDatabase> {
  if (setting.kind === "endpoint")
    return namedEndpoint(setting.endpoint, tableName, options.endpointSource ?? "DYNAMODB_ENDPOINT");

  const running = await runningNpmStarts(LOCAL_RUN_DIR);
  // Port 0 lets npm start take any free port; then any of this folder's npm start will do.
  const onPort = running.filter((marker) => setting.port === 0 || marker.port === setting.port);
  if (onPort.length > 1) throw severalRunning(onPort);
  const [marker] = onPort;
  if (marker) return runningNpmStart(marker, tableName);
  // None on that port. The one holding the data folder has the data this command would otherwise
  // open (it cannot: one process at a time); else a single one running is the one meant.
  const elsewhere =
    running.find((candidate) => candidate.dataDir !== null) ?? (running.length === 1 ? running[0] : undefined);
  if (elsewhere) {
    const database = await runningNpmStart(elsewhere, tableName);
    options.notice?.(
      `using this folder's npm start (pid ${elsewhere.pid}), whose DynamoDB is on port ${elsewhere.port}.`,
    );
    return database;
  }
  if (running.length > 1) throw severalRunning(running);
  return dataFolder(LOCAL_DATA_DIR, tableName);
}
