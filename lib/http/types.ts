import type { APIGatewayProxyEvent } from "aws-lambda";
import type { Principal } from "../auth/apiKeys";
import type { KeyUseRecorder } from "../auth/keyUsage";
import type { ApiKeyVerifier } from "../auth/verifier";
import type { Deadline } from "../db/deadline";
import type { Telemetry } from "../observability/telemetry";
import type { PetRepository } from "../pets/repository";

/**
 * The request headers the chain and the operations read, by their lower-case names: the bearer
 * check, the JSON body's media type, createPet's Idempotency-Key, and the X-Ray trace header API
 * Gateway passes on (for the request log line). They are the only ones an
 * operation is given (lib/http/middleware/requestHeaders.ts); a header read anywhere else must be
 * added here, or it does not type-check.
 */
export const CHAIN_HEADERS = ["authorization", "content-type", "idempotency-key", "x-amzn-trace-id"] as const;
export type ChainHeader = (typeof CHAIN_HEADERS)[number];
export type ChainHeaders = { [name in ChainHeader]?: string | undefined };
export type ChainMultiValueHeaders = { [name in ChainHeader]?: string[] | undefined };

/** A REST API proxy event after the middleware chain: headers picked, body parsed, caller known, deadline set. */
export type ApiEvent = Omit<APIGatewayProxyEvent, "body" | "headers" | "multiValueHeaders"> & {
  headers: ChainHeaders;
  multiValueHeaders: ChainMultiValueHeaders;
  body: unknown;
  principal?: Principal;
  /** When the request's store calls give up (lib/http/middleware/requestDeadline.ts). */
  deadline?: Deadline;
};

/** What an operation returns; the envelope middleware serialises `body` and adds common headers. */
export interface ApiResult {
  readonly statusCode: number;
  readonly headers?: Record<string, string>;
  readonly body: unknown;
}

/** What the handlers need from the outside world; tests pass their own. */
export interface Dependencies {
  readonly pets: PetRepository;
  readonly keys: ApiKeyVerifier;
  /** Records each key's use per operation and day (lib/auth/keyUsage.ts); tests may leave it out. */
  readonly keyUses?: KeyUseRecorder;
  readonly clock: () => Date;
  /** Request logs and metrics; without it, only errors are logged (to stderr). */
  readonly telemetry?: Telemetry;
}

/**
 * What the chain notes about one request as it goes, in Middy's `request.internal`: an object of
 * its own for each invocation (middy() creates it per request unless given one in its options,
 * which apiHandler never does), cheaper to fill than a WeakMap keyed by the event.
 */
export interface RequestNotes {
  /** When the request entered the chain, in monotonicMs (requestTelemetry). */
  startedAt?: number;
  coldStart?: boolean;
  /** The Error shape's code of an error answer (errorResponse), for the request line. */
  errorCode?: string;
}
