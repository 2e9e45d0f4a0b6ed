/**
 * The answers given in front of the handlers, by the edge firewall (infra/stacks/edgeProtection.ts)
 * and API Gateway (infra/stacks/gatewayErrors.ts), which no handler can produce. They live here, in
 * lib/, so the stack that serves them and the OpenAPI document's examples read the same messages.
 */
import type { ErrorCode } from "../contract/schemas";

export interface EdgeError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
}

export const edgeErrors = {
  /** Also API Gateway's WAF_FILTERED answer. */
  forbidden: {
    status: 403,
    code: "forbidden",
    message: "The request was refused by the API's firewall.",
  },
  /** The firewall's rate limits; `Retry-After` is set there, from the rate limit's window. */
  tooManyRequests: {
    status: 429,
    code: "too_many_requests",
    message: "Too many requests from this client; retry later.",
  },
  /** Also API Gateway's REQUEST_TOO_LARGE answer. */
  payloadTooLarge: { status: 413, code: "payload_too_large", message: "The request is too large." },
} as const satisfies Record<string, EdgeError>;
