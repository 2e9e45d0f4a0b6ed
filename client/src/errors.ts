import type { components } from "./schema.js";

/** The codes the API answers with (its `Error.code`). */
export type ErrorCode = components["schemas"]["Error"]["code"];

/**
 * An answer that is not what the API sends: a non-2xx without the API's error body, or a 2xx whose
 * body is not JSON (e.g. an HTML page from a proxy in between, or an empty body).
 */
export const UNEXPECTED_RESPONSE = "unexpected_response";

/** What every error of a call says about the call, whatever went wrong. */
interface CallFacts {
  /** Requests sent for this call, retries included. */
  readonly attempts: number;
  /** The `Idempotency-Key` a create sent on every attempt (undefined for other operations). */
  readonly idempotencyKey?: string | undefined;
}

export interface PetStoreApiErrorDetails extends CallFacts {
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE;
  readonly status: number;
  readonly message: string;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
}

/**
 * The API answered with an error (every non-2xx answer, after any retries), or with a 2xx that is
 * not JSON (`unexpected_response`). Branch on `code`; `message` is for people; quote `requestId`
 * (the answer's `X-Request-Id`) when reporting a problem.
 */
export class PetStoreApiError extends Error {
  // A string, not the literal, so that a subclass (PetStoreInsufficientScopeError) can name itself.
  override readonly name: string = "PetStoreApiError";
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE;
  /** The HTTP status. */
  readonly status: number;
  /** The answer's `X-Request-Id`; absent when something in front of the API (e.g. the edge firewall) answered. */
  readonly requestId: string | undefined;
  /** How long the API asked to wait (`Retry-After`), in milliseconds, when it said. */
  readonly retryAfterMs: number | undefined;
  /** Requests sent for this call, retries included. */
  readonly attempts: number;
  /** A create's `Idempotency-Key`: creating again with it never makes a second pet. Undefined for other operations. */
  readonly idempotencyKey: string | undefined;

  constructor(details: PetStoreApiErrorDetails) {
    super(details.message);
    this.code = details.code;
    this.status = details.status;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts;
    this.idempotencyKey = details.idempotencyKey;
  }
}

/**
 * The scope a 403 `insufficient_scope` says the operation needs: the `scope` attribute of its
 * `WWW-Authenticate: Bearer realm="pets", error="insufficient_scope", scope="write"` (RFC 6750 §3:
 * a quoted, space-separated list). Undefined when the header is absent or has no scope.
 */
export function requiredScopeOf(challenge: string | null): string | undefined {
  const scope = /(?:^|[\s,])scope="([^"]*)"/i.exec(challenge ?? "")?.[1]?.trim();
  return scope ? scope : undefined;
}

/**
 * The API key's scope does not cover the operation (403 `insufficient_scope`): e.g. a `read` key
 * creating a pet. Never retried: the same key gets the same answer. Use a key with `requiredScope`.
 * A `PetStoreApiError` (code `insufficient_scope`, status 403), so code that handles those still does.
 * An expired or revoked key is not this: it is a `PetStoreApiError` `unauthorized` (401).
 */
export class PetStoreInsufficientScopeError extends PetStoreApiError {
  override readonly name: string = "PetStoreInsufficientScopeError";
  /** The scope the operation needs (e.g. `write`), from the answer's `WWW-Authenticate`; undefined if it did not say. */
  readonly requiredScope: string | undefined;

  constructor(details: PetStoreApiErrorDetails & { readonly requiredScope: string | undefined }) {
    super(details);
    this.requiredScope = details.requiredScope;
  }
}

const plural = (attempts: number) => `${attempts} attempt${attempts === 1 ? "" : "s"}`;
const reasonOf = (cause: unknown) => (cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause));

/**
 * No answer came back (connection refused or reset, DNS failure, time-out, …) on any of the
 * attempts. `cause` is the last error `fetch` threw. A create may still have happened: creating
 * again with the same `idempotencyKey` is safe.
 */
export class PetStoreNetworkError extends Error {
  override readonly name = "PetStoreNetworkError";
  readonly attempts: number;
  /** A create's `Idempotency-Key`: creating again with it never makes a second pet. Undefined for other operations. */
  readonly idempotencyKey: string | undefined;

  constructor(details: CallFacts & { readonly cause: unknown }) {
    const reason = details.cause instanceof Error ? details.cause.message : String(details.cause);
    super(`No answer from the Pet Store API after ${plural(details.attempts)}: ${reason}`, { cause: details.cause });
    this.attempts = details.attempts;
    this.idempotencyKey = details.idempotencyKey;
  }
}

/**
 * The caller's `signal` aborted the call. `cause` is the signal's reason (a DOMException named
 * `AbortError`, or `TimeoutError` for `AbortSignal.timeout()`). A create may still have happened
 * (its request may have reached the API before the abort): creating again with the same
 * `idempotencyKey` is safe.
 */
export class PetStoreAbortError extends Error {
  override readonly name = "PetStoreAbortError";
  /** Requests sent for this call before it was aborted (0 if the signal had aborted before the first). */
  readonly attempts: number;
  /** A create's `Idempotency-Key`: creating again with it never makes a second pet. Undefined for other operations. */
  readonly idempotencyKey: string | undefined;

  constructor(details: CallFacts & { readonly cause: unknown }) {
    super(`The Pet Store API call was aborted after ${plural(details.attempts)} (${reasonOf(details.cause)})`, {
      cause: details.cause,
    });
    this.attempts = details.attempts;
    this.idempotencyKey = details.idempotencyKey;
  }
}
