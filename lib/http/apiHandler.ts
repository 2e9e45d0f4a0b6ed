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
import { requestDeadline } from "./middleware/requestDeadline";
import { requestHeaders } from "./middleware/requestHeaders";
import { requestTelemetry } from "./middleware/requestTelemetry";
import { responseEnvelope } from "./middleware/responseEnvelope";
import type { ApiEvent, ApiResult, Dependencies } from "./types";

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type Operation = (event: ApiEvent) => Promise<ApiResult>;

/** One middleware of the chain, named so that the bench can say what each one costs. */
export interface ChainStep {
  readonly name: string;
  readonly middleware: MiddlewareObj<ApiEvent, ApiResult, Error, Context>;
}

/** Middy's hooks around each middleware and the operation: the bench times each step with them. */
export type ChainHooks = Pick<
  middy.PluginObject,
  "requestStart" | "beforeMiddleware" | "afterMiddleware" | "beforeHandler" | "afterHandler" | "requestEnd"
>;

/**
 * The middlewares every route shares, in the order they are used, shaped by its route definition.
 * `before` runs top to bottom; `after` and `onError` bottom to top, so the envelope finishes
 * every answer and errorResponse maps errors before the envelope sees them. Middlewares that wait
 * on nothing are plain functions rather than async ones: Middy awaits whatever each returns, and
 * an async function would add a promise per step to every request.
 */
export function chainSteps(route: RouteDefinition, deps: Dependencies): ChainStep[] {
  const telemetry = deps.telemetry ?? errorsOnlyTelemetry;
  const step = (name: string, middleware: MiddlewareObj<never, never, Error, Context>): ChainStep => ({
    name,
    middleware: middleware as ChainStep["middleware"],
  });
  return [
    step("requestTelemetry", requestTelemetry(route, telemetry)),
    step("requestDeadline", requestDeadline()),
    step("responseEnvelope", responseEnvelope()),
    ...(route.deprecation ? [step("deprecationNotice", deprecationNotice(route.deprecation))] : []),
    step("errorResponse", errorResponse(telemetry.log)),
    step("requestHeaders", requestHeaders()),
    step("bearerAuth", bearerAuth(deps.keys)),
    ...(route.deprecation ? [step("sunsetGate", sunsetGate(route.deprecation, deps.clock))] : []),
    ...(route.jsonBody ? [step("jsonBody", jsonBody({ maxBytes: MAX_BODY_BYTES }))] : []),
  ];
}

/** Wraps one operation in the chain every route shares (chainSteps). */
export function apiHandler(
  route: RouteDefinition,
  deps: Dependencies,
  operation: Operation,
  hooks: ChainHooks = {},
): ProxyHandler {
  // Answer before Lambda kills the function, as a retryable 503 rather than a gateway 5xx: the
  // request's store calls are aborted at its deadline (requestDeadline), and this answers for
  // anything else the operation is still waiting on then. It takes the place of Middy's own early
  // timeout (off here), which starts and clears a timer on every request; the deadline's timer is
  // one per process (lib/db/deadline.ts).
  const withinDeadline: Operation = (event) =>
    event.deadline ? event.deadline.within(operation(event), () => new ServiceUnavailableError(1)) : operation(event);
  const chain = middy<ApiEvent, ApiResult, Error, Context>(withinDeadline, { ...hooks, timeoutEarlyInMillis: 0 });
  for (const { middleware } of chainSteps(route, deps)) chain.use(middleware);
  return chain as unknown as ProxyHandler;
}
