import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { GoneError } from "../../errors";
import type { RouteDefinition } from "../../routes";
import type { ApiEvent, ApiResult } from "../types";

type Deprecation = NonNullable<RouteDefinition["deprecation"]>;

export function deprecationHeaders(deprecation: Deprecation): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(deprecation.deprecatedAt.getTime() / 1000)}`,
    Sunset: deprecation.sunsetAt.toUTCString(),
    Link: `<${deprecation.successor}>; rel="successor-version"`,
  };
}

/** Adds Deprecation, Sunset and successor Link to every answer of the route, errors included. */
export function deprecationNotice(deprecation: Deprecation): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  const headers = deprecationHeaders(deprecation);
  const addHeaders = async (request: { response: ApiResult | null | undefined }) => {
    if (request.response)
      request.response = { ...request.response, headers: { ...request.response.headers, ...headers } };
  };
  return { after: addHeaders, onError: addHeaders };
}

/** From the sunset instant on, the route answers 410 Gone. */
export function sunsetGate(
  deprecation: Deprecation,
  clock: () => Date,
): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: async () => {
      if (clock().getTime() >= deprecation.sunsetAt.getTime()) throw new GoneError(deprecation.successor);
    },
  };
}
