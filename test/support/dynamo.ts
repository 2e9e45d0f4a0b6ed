import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

export function tableName(): string {
  const name = process.env.PETS_TABLE_NAME;
  if (!name) throw new Error("integrationEnv.ts did not run");
  return name;
}

export function rawClient(): DynamoDBClient {
  return new DynamoDBClient({
    region: "us-east-1",
    endpoint: process.env.DYNAMODB_ENDPOINT,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

export function documentClient(client = rawClient()): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

/** Records what each DynamoDB call read, as reported by DynamoDB itself. */
export interface ReadLog {
  readonly calls: { command: string; scannedCount?: number; count?: number; capacityUnits?: number }[];
  itemsRead(): number;
  reset(): void;
}

export function recordReads(client: DynamoDBDocumentClient): ReadLog {
  const log: ReadLog = {
    calls: [],
    itemsRead: () =>
      log.calls.reduce((sum, call) => sum + (call.scannedCount ?? (call.command === "GetCommand" ? 1 : 0)), 0),
    reset: () => {
      log.calls.length = 0;
    },
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const output = result.output as {
        ScannedCount?: number;
        Count?: number;
        ConsumedCapacity?: { CapacityUnits?: number };
      };
      log.calls.push({
        command: String(context.commandName),
        ...(output.ScannedCount !== undefined ? { scannedCount: output.ScannedCount } : {}),
        ...(output.Count !== undefined ? { count: output.Count } : {}),
        ...(output.ConsumedCapacity?.CapacityUnits !== undefined
          ? { capacityUnits: output.ConsumedCapacity.CapacityUnits }
          : {}),
      });
      return result;
    },
    { step: "initialize", name: "recordReads" },
  );
  return log;
}
