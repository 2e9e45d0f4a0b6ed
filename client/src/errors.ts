import type { components } from "./schema.js";

/** The codes the API answers with (its `Error.code`). */
export type ErrorCode = components["schemas"]["Error"]["code"];

/** A non-2xx answer that does not carry the API's error body (e.g. an HTML page from a proxy in between). */
export const UNEXPECTED_RESPONSE = "unexpected_response";

export interface PetStoreApiErrorDetails {
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE;
  readonly status: number;
  readonly message: string;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
  readonly attempts: number;
}

/**
 * The API answered with an error (every non-2xx answer, after any retries). Branch on `code`;
 * `message` is for people; quote `requestId` (the answer's `X-Request-Id`) when reporting a problem.
 */
export class PetStoreApiError extends Error {
  override readonly name = "PetStoreApiError";
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE;
  /** The HTTP status. */
  readonly status: number;
  /** The answer's `X-Request-Id`; absent when something in front of the API (e.g. the edge firewall) answered. */
  readonly requestId: string | undefined;
  /** How long the API asked to wait (`Retry-After`), in milliseconds, when it said. */
  readonly retryAfterMs: number | undefined;
  /** Requests sent for this call, retries included. */
  readonly attempts: number;

  constructor(details: PetStoreApiErrorDetails) {
    super(details.message);
    this.code = details.code;
    this.status = details.status;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts;
  }
}

/**
 * No answer came back (connection refused or reset, DNS failure, …) on any of the attempts. `cause`
 * is the last error `fetch` threw. A create may still have happened: retrying it with the same
 * `idempotencyKey` is safe.
 */
export class PetStoreNetworkError extends Error {
  override readonly name = "PetStoreNetworkError";
  readonly attempts: number;

  constructor(attempts: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`No answer from the Pet Store API after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${reason}`, {
      cause,
    });
    this.attempts = attempts;
  }
}
