import type { APIGatewayProxyEvent } from "aws-lambda";
import type { Principal } from "../auth/apiKeys";
import type { ApiKeyVerifier } from "../auth/verifier";
import type { Deadline } from "../db/deadline";
import type { Telemetry } from "../observability/telemetry";
import type { PetRepository } from "../pets/repository";

/** A REST API proxy event after the middleware chain: body parsed, caller known, deadline set. */
export type ApiEvent = Omit<APIGatewayProxyEvent, "body"> & {
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
  readonly clock: () => Date;
  /** Request logs and metrics; without it, only errors are logged (to stderr). */
  readonly telemetry?: Telemetry;
}
