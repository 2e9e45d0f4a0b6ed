import type { MiddlewareObj, Request } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ErrorBody, ErrorCode } from "../../contract/schemas";
import {
  GoneError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  InsufficientScopeError,
  MethodNotAllowedError,
  PayloadTooLargeError,
  PetNotFoundError,
  RouteNotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  ValidationError,
} from "../../errors";
import { describeError, type Logger } from "../../observability/logger";
import type { ApiEvent, ApiResult, RequestNotes } from "../types";

export function errorResult(
  status: number,
  code: ErrorCode,
  message: string,
  headers?: Record<string, string>,
): ApiResult {
  const body: ErrorBody = { code, message, status };
  return { statusCode: status, ...(headers ? { headers } : {}), body };
}

export const UNAUTHORIZED_CHALLENGE = 'Bearer realm="pets"';

/** The one place where typed errors become HTTP answers. */
export function toErrorResult(error: unknown): ApiResult {
  if (error instanceof ValidationError) return errorResult(400, "invalid_request", error.message);
  if (error instanceof UnauthorizedError) {
    const challenge = error.tokenSent ? `${UNAUTHORIZED_CHALLENGE}, error="invalid_token"` : UNAUTHORIZED_CHALLENGE;
    return errorResult(401, "unauthorized", error.message, { "WWW-Authenticate": challenge });
  }
  if (error instanceof InsufficientScopeError) {
    return errorResult(403, "insufficient_scope", error.message, {
      "WWW-Authenticate": `${UNAUTHORIZED_CHALLENGE}, error="insufficient_scope", scope="${error.required}"`,
    });
  }
  if (error instanceof PetNotFoundError || error instanceof RouteNotFoundError) {
    return errorResult(404, "not_found", error.message);
  }
  if (error instanceof MethodNotAllowedError) {
    return errorResult(405, "method_not_allowed", error.message, { Allow: error.allowed.join(", ") });
  }
  if (error instanceof IdempotencyKeyInProgressError) {
    return errorResult(409, "idempotency_key_in_progress", error.message, {
      "Retry-After": String(error.retryAfterSeconds),
    });
  }
  if (error instanceof GoneError) return errorResult(410, "gone", error.message);
  if (error instanceof PayloadTooLargeError) return errorResult(413, "payload_too_large", error.message);
  if (error instanceof UnsupportedMediaTypeError) return errorResult(415, "unsupported_media_type", error.message);
  if (error instanceof IdempotencyKeyReusedError) return errorResult(422, "idempotency_key_reused", error.message);
  if (error instanceof ServiceUnavailableError) {
    return errorResult(503, "service_unavailable", error.message, { "Retry-After": String(error.retryAfterSeconds) });
  }
  return errorResult(
    500,
    "internal_error",
    "An internal error occurred. Quote the X-Request-Id header when reporting it.",
  );
}

/**
 * Maps any error to an Error-shaped result. A 5xx is logged with its cause and the request id;
 * the client only sees a generic message.
 */
export function errorResponse(log: Logger): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    onError: (request: Request<ApiEvent, ApiResult, Error, Context>) => {
      const result = toErrorResult(request.error);
      (request.internal as RequestNotes).errorCode = (result.body as ErrorBody).code;
      if (result.statusCode >= 500) {
        log.error("request failed", {
          requestId: request.event.requestContext?.requestId,
          status: result.statusCode,
          error: describeError(request.error),
        });
      }
      request.response = result;
    },
  };
}
