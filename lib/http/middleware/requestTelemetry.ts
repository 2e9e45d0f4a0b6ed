import type { MiddlewareObj, Request } from "@middy/core";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { isReplayedAnswer } from "../../idempotency/replayed";
import type { Telemetry } from "../../observability/telemetry";
import type { RouteDefinition } from "../../routes";
import type { ApiEvent, RequestNotes } from "../types";

/** True until this container has served its first request. */
let coldStart = true;

/**
 * Outermost middleware: times the request and reports it once its final answer (after error
 * mapping and the envelope) is known.
 */
export function requestTelemetry(
  route: RouteDefinition,
  telemetry: Telemetry,
): MiddlewareObj<ApiEvent, APIGatewayProxyResult, Error, Context> {
  const report = (request: Request<ApiEvent, APIGatewayProxyResult, Error, Context>) => {
    const started = request.internal as RequestNotes;
    const status = request.response?.statusCode ?? 500;
    telemetry.requestCompleted({
      operation: route.operationId,
      method: route.method,
      route: route.path,
      path: request.event.path,
      status,
      latencyMs: started.startedAt === undefined ? 0 : performance.now() - started.startedAt,
      coldStart: started.coldStart ?? false,
      // A replay answers 201 too, but the pet was created (and counted) by the first request.
      petCreated: status === 201 && !isReplayedAnswer(request.response?.headers),
      requestId: request.event.requestContext?.requestId,
      lambdaRequestId: request.context.awsRequestId,
      apiKeyId: request.event.principal?.keyId,
      userAgent: request.event.requestContext?.identity?.userAgent ?? undefined,
      errorCode: started.errorCode,
      traceHeader: request.event.headers?.["x-amzn-trace-id"],
    });
  };
  return {
    before: (request) => {
      const start = request.internal as RequestNotes;
      start.startedAt = performance.now();
      start.coldStart = coldStart;
      coldStart = false;
    },
    after: report,
    onError: report,
  };
}
