import middy, { type MiddlewareObj } from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from "aws-lambda";
import { MAX_BODY_BYTES } from "../contract/schemas";
import { ServiceUnavailableError } from "../errors";
import { errorsOnlyTelemetry } from "../observability/telemetry";
import type { RouteDefinition } from "../routes";
import { bearerAuth } from "./middleware/bearerAuth";
import { deprecationNotice, sunsetGate } from "./middleware/deprecation";
import { errorResponse } from "./middleware/errorResponse";
import { jsonBody } from "./middleware/jsonBody";
import { keyUse } from "./middleware/keyUse";
import { requestDeadline } from "./middleware/requestDeadline";
import { requestHeaders } from "./middleware/requestHeaders";
import { requestTelemetry } from "./middleware/requestTelemetry";
import { responseEnvelope } from "./middleware/responseEnvelope";
import type { ApiEvent, ApiResult, Dependencies } from "./types";

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type Operation = (event: ApiEvent) => Promise<ApiResult>;

type ChainMiddleware = MiddlewareObj<ApiEvent, ApiResult, Error, Context>;

/**
 * The Middy options of every route, and of every Middy side the bench compares with (so that a
 * ratio compares the chains, not Middy's settings). Middy's early timeout is off: it starts and
 * clears a timer on every request; our request deadline answers in its place (apiHandler), with
 * one timer per process (lib/db/deadline.ts).
 */
export const MIDDY_OPTIONS = { timeoutEarlyInMillis: 0 } as const satisfies middy.PluginObject;

/**
 * The middlewares every route shares, in the order they are registered, shaped by its route
 * definition. Middy runs `before` in registration order and `after` and `onError` in reverse
 * (https://middy.js.org/docs/intro/how-it-works), so the envelope finishes every answer and
 * errorResponse maps errors before the envelope sees them.
 */
function chainMiddlewares(route: RouteDefinition, deps: Dependencies): ChainMiddleware[] {
  const telemetry = deps.telemetry ?? errorsOnlyTelemetry;
  const chain = [
    requestTelemetry(route, telemetry),
    requestDeadline(),
    responseEnvelope(),
    ...(route.deprecation ? [deprecationNotice(route.deprecation)] : []),
    errorResponse(telemetry.log),
    requestHeaders(),
    bearerAuth(deps.keys, route.scope),
    ...(deps.keyUses ? [keyUse(route.operationId, deps.keyUses, deps.clock)] : []),
    ...(route.deprecation ? [sunsetGate(route.deprecation, deps.clock)] : []),
    ...(route.jsonBody ? [jsonBody({ maxBytes: MAX_BODY_BYTES })] : []),
  ];
  return chain as ChainMiddleware[];
}

/** The answer for an operation still waiting when its request's deadline passes: retry in a second. */
const deadlinePassed = () => new ServiceUnavailableError(1);

/** Wraps one operation in the chain every route shares (chainMiddlewares), each middleware registered with Middy's `.use()`. */
export function apiHandler(route: RouteDefinition, deps: Dependencies, operation: Operation): ProxyHandler {
  // Answer before Lambda kills the function, as a retryable 503 rather than a gateway 5xx: the
  // request's store calls are aborted at its deadline (requestDeadline), and this answers for
  // anything else the operation is still waiting on then (Middy's own early timeout is off:
  // MIDDY_OPTIONS).
  const withinDeadline: Operation = (event) =>
    event.deadline ? event.deadline.within(operation(event), deadlinePassed) : operation(event);
  return middy<ApiEvent, ApiResult, Error, Context>(withinDeadline, MIDDY_OPTIONS).use(
    chainMiddlewares(route, deps),
  ) as unknown as ProxyHandler;
}
