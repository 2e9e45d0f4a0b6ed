import type { MiddlewareObj, Request } from "@middy/core";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { isReplayedAnswer } from "../../idempotency/replayed";
import type { Telemetry } from "../../observability/telemetry";
import type { RouteDefinition } from "../../routes";
import type { ApiEvent, RequestNotes } from "../types";

/**
 * Milliseconds on a monotonic clock from an arbitrary origin, as performance.now() gives, for
 * timing a request: process.hrtime costs the same per call, but the first use of `performance`
 * loads perf_hooks and its modules, about 0.8 ms of every cold request (npm run bench), and nothing
 * else in the functions loads them.
 */
export function monotonicMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1000 + nanoseconds / 1e6;
}

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
      latencyMs: started.startedAt === undefined ? 0 : monotonicMs() - started.startedAt,
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
      start.startedAt = monotonicMs();
      start.coldStart = coldStart;
      coldStart = false;
    },
    after: report,
    onError: report,
  };
}
