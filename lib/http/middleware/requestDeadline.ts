import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { Deadline } from "../../db/deadline";
import type { ApiEvent, ApiResult } from "../types";

/**
 * How long before Lambda's own timeout a request stops waiting for DynamoDB and answers 503: room
 * to map the error, log it and hand the answer back. The chain answers 503 then, a turn later, for
 * anything else the operation still waits on (lib/http/apiHandler.ts).
 */
export const REQUEST_DEADLINE_MARGIN_MS = 1000;

/**
 * Gives the request its deadline as it enters the chain, before the bearer check's key lookup. The
 * chain's race against it (lib/http/apiHandler.ts) releases it once the operation is done. Without
 * a Lambda context that knows its remaining time (tests, the local server), it sets none.
 */
export function requestDeadline(): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const remainingMs = request.context.getRemainingTimeInMillis?.();
      if (remainingMs !== undefined) {
        request.event.deadline = new Deadline(Date.now() + remainingMs - REQUEST_DEADLINE_MARGIN_MS);
      }
    },
  };
}
