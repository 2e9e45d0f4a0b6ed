import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import type { KeyUseRecorder } from "../../auth/keyUsage";
import type { ApiEvent, ApiResult } from "../types";

/**
 * Records the day's use of the request's key for `operationId` (lib/auth/keyUsage.ts), after
 * bearerAuth admitted it: only the first request of a key and operation in a day waits for a write.
 */
export function keyUse(
  operationId: string,
  recorder: KeyUseRecorder,
  clock: () => Date,
): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const { principal, deadline } = request.event;
      if (principal) return recorder.record(principal, operationId, clock().getTime(), deadline);
    },
  };
}
