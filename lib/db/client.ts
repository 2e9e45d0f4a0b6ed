import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

export interface DynamoClientOptions {
  readonly region: string;
  readonly endpoint?: string | undefined;
}

/**
 * Timeouts are set so that the SDK gives up well inside the Lambda timeout (see
 * infra/config.ts): 3 attempts × 1.5 s plus back-off stays under 6 s, and the caller then
 * answers 503 instead of the function being killed mid-request.
 */
export const DYNAMODB_MAX_ATTEMPTS = 3;
export const DYNAMODB_REQUEST_TIMEOUT_MS = 1500;
export const DYNAMODB_CONNECTION_TIMEOUT_MS = 500;

export function createDocumentClient(options: DynamoClientOptions): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: options.region,
    maxAttempts: DYNAMODB_MAX_ATTEMPTS,
    requestHandler: {
      requestTimeout: DYNAMODB_REQUEST_TIMEOUT_MS,
      connectionTimeout: DYNAMODB_CONNECTION_TIMEOUT_MS,
    },
    ...(options.endpoint
      ? {
          endpoint: options.endpoint,
          // The local engine accepts any credentials; real ones must never be needed locally.
          credentials: { accessKeyId: "local", secretAccessKey: "local" },
        }
      : {}),
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
}
