import middy, { type MiddlewareObj } from "@middy/core";
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from "aws-lambda";
import { MAX_BODY_BYTES } from "../contract/schemas";
import { ServiceUnavailableError } from "../errors";
import { errorsOnlyTelemetry } from "../observability/telemetry";
import type { RouteDefinition } from "../routes";
import { asOneMiddleware, type ChainStep, type StepHooks } from "./asOneMiddleware";
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

/**
 * Middy's hooks around the operation and the request, and ours around each step of the chain: the
 * bench times each step with them.
 */
export type ChainHooks = Pick<middy.PluginObject, "requestStart" | "beforeHandler" | "afterHandler" | "requestEnd"> &
  StepHooks;

/**
 * The middlewares every route shares, in the order they are used, shaped by its route definition.
 * `before` runs top to bottom; `after` and `onError` bottom to top, so the envelope finishes
 * every answer and errorResponse maps errors before the envelope sees them. Middlewares that wait
 * on nothing are plain functions rather than async ones: the steps run as one Middy middleware
 * (asOneMiddleware), which awaits a step only when it returns a promise.
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
    step("bearerAuth", bearerAuth(deps.keys, route.scope)),
    ...(deps.keyUses ? [step("keyUse", keyUse(route.operationId, deps.keyUses, deps.clock))] : []),
    ...(route.deprecation ? [step("sunsetGate", sunsetGate(route.deprecation, deps.clock))] : []),
    ...(route.jsonBody ? [step("jsonBody", jsonBody({ maxBytes: MAX_BODY_BYTES }))] : []),
  ];
}

/** The answer for an operation still waiting when its request's deadline passes: retry in a second. */
const deadlinePassed = () => new ServiceUnavailableError(1);

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
    event.deadline ? event.deadline.within(operation(event), deadlinePassed) : operation(event);
  const { beforeStep, afterStep, ...middyHooks } = hooks;
  return middy<ApiEvent, ApiResult, Error, Context>(withinDeadline, { ...middyHooks, timeoutEarlyInMillis: 0 }).use(
    asOneMiddleware(chainSteps(route, deps), { beforeStep, afterStep }),
  ) as unknown as ProxyHandler;
}
