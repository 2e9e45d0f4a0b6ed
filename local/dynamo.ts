/** The embedded DynamoDB engine (dynalite) and table creation from the shared definition. */
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
} from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { createTableInput } from "../lib/db/table";
import { listen } from "./listen";

export interface EmbeddedDynamo {
  readonly endpoint: string;
  close(): Promise<void>;
}

/**
 * Starts dynalite on host:port (0 = any free port). With `path` it persists to LevelDB there;
 * without, it keeps everything in memory.
 */
export async function startEmbeddedDynamo(options: {
  host: string;
  port: number;
  path?: string;
}): Promise<EmbeddedDynamo> {
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
  for (let attempt = 0; attempt < 100; attempt++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === "ACTIVE") return outcome;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`Table ${tableName} did not become ACTIVE.`);
}
