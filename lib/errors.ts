/**
 * Typed errors thrown by the domain, the repositories and the input parsers. Exactly one
 * middleware (lib/http/middleware/errorResponse.ts) turns them into HTTP answers.
 */
import type { KeyScope } from "./auth/apiKeys";

/** Input the client sent is wrong; `target` names the field or parameter. */
export class ValidationError extends Error {
  override readonly name = "ValidationError";
  constructor(
    readonly target: string,
    readonly problem: string,
  ) {
    super(`${target}: ${problem}`);
  }
}

export class UnauthorizedError extends Error {
  override readonly name = "UnauthorizedError";
  /**
   * `tokenSent` decides whether the challenge says error="invalid_token" (RFC 6750 §3); `message`,
   * when the caller knows more, says what is wrong (never repeating the key).
   */
  constructor(
    readonly tokenSent: boolean,
    message = tokenSent ? "The API key is not valid." : "An API key is required: send 'Authorization: Bearer <key>'.",
  ) {
    super(message);
  }
}

/** A valid key whose scope does not cover the operation (RFC 6750 §3.1, insufficient_scope). */
export class InsufficientScopeError extends Error {
  override readonly name = "InsufficientScopeError";
  constructor(
    /** The scope the operation needs. */
    readonly required: KeyScope,
    readonly granted: KeyScope,
  ) {
    super(`This API key has the ${granted} scope; this operation needs a key with the ${required} scope.`);
  }
}

export class PetNotFoundError extends Error {
  override readonly name = "PetNotFoundError";
  constructor(readonly petId: number) {
    super(`No pet has id ${petId}.`);
  }
}

export class RouteNotFoundError extends Error {
  override readonly name = "RouteNotFoundError";
  constructor(readonly path: string) {
    super(`No route matches ${path}.`);
  }
}

export class MethodNotAllowedError extends Error {
  override readonly name = "MethodNotAllowedError";
  constructor(
    readonly method: string,
    readonly allowed: readonly string[],
  ) {
    super(`Method ${method} is not allowed here; allowed: ${allowed.join(", ")}.`);
  }
}

/** A route used past its sunset. */
export class GoneError extends Error {
  override readonly name = "GoneError";
  constructor(readonly successor: string) {
    super(`This operation was removed; use ${successor} instead.`);
  }
}

export class PayloadTooLargeError extends Error {
  override readonly name = "PayloadTooLargeError";
  constructor(readonly maxBytes: number) {
    super(`The request body is larger than ${maxBytes} bytes.`);
  }
}

export class UnsupportedMediaTypeError extends Error {
  override readonly name = "UnsupportedMediaTypeError";
  constructor(
    readonly contentType: string | undefined,
    message = "The request body must be JSON: send 'Content-Type: application/json'.",
  ) {
    super(message);
  }
}

export class IdempotencyKeyReusedError extends Error {
  override readonly name = "IdempotencyKeyReusedError";
  constructor() {
    super("This Idempotency-Key was already used with a different request body.");
  }
}

export class IdempotencyKeyInProgressError extends Error {
  override readonly name = "IdempotencyKeyInProgressError";
  constructor(readonly retryAfterSeconds: number) {
    super("A request with this Idempotency-Key is still being processed; retry later.");
  }
}

/** The data store is throttled, unreachable or timed out; safe for the client to retry. */
export class ServiceUnavailableError extends Error {
  override readonly name = "ServiceUnavailableError";
  constructor(
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super("The service is temporarily unavailable; retry later.", options);
  }
}
