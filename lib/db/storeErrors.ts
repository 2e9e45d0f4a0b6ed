import { ServiceUnavailableError } from "../errors";
import type { Deadline } from "./deadline";

/** Errors that mean "DynamoDB cannot answer right now", after the SDK's own retries. */
const transientNames = new Set([
  "ThrottlingException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "LimitExceededException",
  "InternalServerError",
  "ServiceUnavailable",
  "ServiceUnavailableException",
  "TimeoutError",
  "RequestTimeout",
  "RequestTimeoutException",
  "TransactionConflictException",
  // The request's deadline aborted the call (./deadline.ts): the store did not answer in time.
  "AbortError",
]);
const networkCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
]);

export const RETRY_AFTER_SECONDS = 1;

export function isTransientStoreError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { name } = error;
  const code = (error as { code?: unknown }).code;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return (
    transientNames.has(name) ||
    (typeof code === "string" && networkCodes.has(code)) ||
    (typeof status === "number" && status >= 500) ||
    (error as { $retryable?: unknown }).$retryable !== undefined
  );
}

/** The SDK's per-call options (`client.send(command, options)`). */
export interface CallOptions {
  readonly abortSignal?: AbortSignal;
}

/**
 * Runs one store operation, aborted at the request's deadline if it has one, and turns a transient
 * DynamoDB failure into ServiceUnavailableError, keeping the original as `cause` for the log.
 * Anything else (a bug, a permission error) passes through and becomes a 500.
 */
export async function storeCall<T>(
  operation: (options: CallOptions) => Promise<T>,
  deadline?: Deadline | undefined,
): Promise<T> {
  try {
    return await operation(deadline ? { abortSignal: deadline.signal } : {});
  } catch (error) {
    if (isTransientStoreError(error)) throw new ServiceUnavailableError(RETRY_AFTER_SECONDS, { cause: error });
    throw error;
  }
}
