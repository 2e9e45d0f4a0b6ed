import middy from "@middy/core";
import httpHeaderNormalizer from "@middy/http-header-normalizer";
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from "aws-lambda";
import { MAX_BODY_BYTES } from "../contract/schemas";
import { ServiceUnavailableError } from "../errors";
import { errorsOnlyTelemetry } from "../observability/telemetry";
import type { RouteDefinition } from "../routes";
import { bearerAuth } from "./middleware/bearerAuth";
import { deprecationNotice, sunsetGate } from "./middleware/deprecation";
import { errorResponse } from "./middleware/errorResponse";
import { jsonBody } from "./middleware/jsonBody";
import { REQUEST_DEADLINE_MARGIN_MS, requestDeadline } from "./middleware/requestDeadline";
import { requestTelemetry } from "./middleware/requestTelemetry";
import { responseEnvelope } from "./middleware/responseEnvelope";
import type { ApiEvent, ApiResult, Dependencies } from "./types";

export type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type Operation = (event: ApiEvent) => Promise<ApiResult>;

/**
 * Wraps one operation in the chain every route shares, shaped by its route definition.
 * `before` runs top to bottom; `after` and `onError` bottom to top, so the envelope finishes
 * every answer and errorResponse maps errors before the envelope sees them.
 */
export function apiHandler(route: RouteDefinition, deps: Dependencies, operation: Operation): ProxyHandler {
  const chain = middy<ApiEvent, ApiResult, Error, Context>(operation, {
    // Answer before Lambda kills the function, as a retryable 503 rather than a gateway 5xx: the
    // request's store calls are aborted at the same moment (requestDeadline), and this answers for
    // anything else the operation is still waiting on. Middy's default margin is 5 ms.
    timeoutEarlyInMillis: REQUEST_DEADLINE_MARGIN_MS,
    timeoutEarlyResponse: () => {
      throw new ServiceUnavailableError(1);
    },
  });
  const telemetry = deps.telemetry ?? errorsOnlyTelemetry;
  chain.use(requestTelemetry(route, telemetry) as never);
  chain.use(requestDeadline());
  chain.use(responseEnvelope() as never);
  if (route.deprecation) chain.use(deprecationNotice(route.deprecation));
  chain.use(errorResponse(telemetry.log));
  chain.use(httpHeaderNormalizer() as never);
  chain.use(bearerAuth(deps.keys));
  if (route.deprecation) chain.use(sunsetGate(route.deprecation, deps.clock));
  if (route.jsonBody) chain.use(jsonBody({ maxBytes: MAX_BODY_BYTES }));
  return chain as unknown as ProxyHandler;
}
