/** The embedded DynamoDB engine (dynalite) and table creation from the shared definition. */

import { createRequire } from "node:module";
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { createTableInput } from "../lib/db/table";
import { listen } from "./listen";

interface LevelDatabase {
  open(): Promise<void>;
  close(): Promise<void>;
}
// The LevelDB binding dynalite persists with, resolved from dynalite itself so that it is the very
// same one (it is dynalite's dependency, not ours).
const { Level } = createRequire(createRequire(import.meta.url).resolve("dynalite"))("level") as {
  Level: new (path: string) => LevelDatabase;
};

/** The data folder is held by another process (LevelDB allows one at a time). */
export class DataFolderInUseError extends Error {
  override readonly name = "DataFolderInUseError";
  constructor(readonly path: string) {
    super(`The data folder ${path} is in use by another process.`);
  }
}

/**
 * LevelDB locks its folder for one process. dynalite opens it lazily and, when the lock is taken,
 * throws "Database is closed" from a callback on the first request, which nothing can catch; so
 * the folder is opened once here first, where the lock error can be told apart.
 */
async function assertDataFolderFree(path: string): Promise<void> {
  const database = new Level(path);
  try {
    await database.open();
  } catch (error) {
    if ((error as { cause?: { code?: unknown } }).cause?.code === "LEVEL_LOCKED") throw new DataFolderInUseError(path);
    throw error;
  } finally {
    await database.close();
  }
}

export interface EmbeddedDynamo {
  readonly endpoint: string;
  close(): Promise<void>;
}

/**
 * Starts dynalite on host:port (0 = any free port). With `path` it persists to LevelDB there
 * (DataFolderInUseError when another process holds it); without, it keeps everything in memory.
 */
export async function startEmbeddedDynamo(options: {
  host: string;
  port: number;
  path?: string;
}): Promise<EmbeddedDynamo> {
  if (options.path) await assertDataFolderFree(options.path);
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.path ? { path: options.path } : {}),
  });
  const port = await listen(server, options.port, options.host);
  return {
    endpoint: `http://${options.host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Creates the table unless it exists, and waits until it is usable. */
export async function ensureTable(client: DynamoDBClient, tableName: string): Promise<"created" | "existed"> {
  let outcome: "created" | "existed" = "created";
  try {
    await client.send(new CreateTableCommand(createTableInput(tableName)));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    outcome = "existed";
  }
  await waitUntilActive(client, tableName);
  return outcome;
}

/**
 * Waits until a new table accepts reads and writes: dynalite answers ResourceNotFoundException
 * while a table is CREATING, even with createTableMs 0 (it flips the state on a timer).
 */
export async function waitUntilActive(client: DynamoDBClient, tableName: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === "ACTIVE") return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Table ${tableName} did not become ACTIVE.`);
}
