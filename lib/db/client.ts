import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

export interface DynamoClientOptions {
  readonly region: string;
  readonly endpoint?: string | undefined;
}

/**
 * Timeouts are set so that the SDK gives up well inside the Lambda timeout (10 s, see
 * infra/config.ts) and the caller answers 503 instead of the function being killed mid-request.
 * One call's worst case: 3 attempts of at most 0.5 s to connect and 1.5 s without an answer,
 * plus the SDK's back-off between them (standard mode, full jitter; throttling starts at 1 s and
 * doubles, so at most 1 s + 2 s), about 9 s. Whatever its calls, a request gives up 1 s before the
 * Lambda timeout: its calls are aborted at its deadline (lib/http/middleware/requestDeadline.ts), also a 503.
 */
export const DYNAMODB_MAX_ATTEMPTS = 3;
export const DYNAMODB_REQUEST_TIMEOUT_MS = 1500;
export const DYNAMODB_CONNECTION_TIMEOUT_MS = 500;
/** The SDK's largest back-off before retry n (0-based) after throttling: 1 s × 2^n. */
const THROTTLING_BACKOFF_CAP_MS = (retry: number) => 1000 * 2 ** retry;
export const DYNAMODB_CALL_WORST_CASE_MS =
  DYNAMODB_MAX_ATTEMPTS * (DYNAMODB_CONNECTION_TIMEOUT_MS + DYNAMODB_REQUEST_TIMEOUT_MS) +
  Array.from({ length: DYNAMODB_MAX_ATTEMPTS - 1 }, (_, retry) => THROTTLING_BACKOFF_CAP_MS(retry)).reduce(
    (sum, ms) => sum + ms,
    0,
  );

export function createDocumentClient(options: DynamoClientOptions): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: options.region,
    maxAttempts: DYNAMODB_MAX_ATTEMPTS,
    requestHandler: {
      requestTimeout: DYNAMODB_REQUEST_TIMEOUT_MS,
      // Without it the SDK only logs a warning when requestTimeout passes and keeps waiting: a
      // store that accepts the connection but never answers would hold the function until Lambda kills it.
      throwOnRequestTimeout: true,
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
