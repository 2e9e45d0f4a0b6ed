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
  const headers = Object.entries(deprecationHeaders(deprecation));
  const addHeaders = (request: { response: ApiResult | null | undefined }) => {
    const response = request.response;
    if (!response) return;
    // A new headers object (the operation's may be shared), filled without spreads: every answer pays this.
    const merged: Record<string, string> = {};
    if (response.headers) for (const name in response.headers) merged[name] = response.headers[name] as string;
    for (const [name, value] of headers) merged[name] = value;
    request.response = { statusCode: response.statusCode, headers: merged, body: response.body };
  };
  return { after: addHeaders, onError: addHeaders };
}

/** From the sunset instant on, the route answers 410 Gone. */
export function sunsetGate(
  deprecation: Deprecation,
  clock: () => Date,
): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: () => {
      if (clock().getTime() >= deprecation.sunsetAt.getTime()) throw new GoneError(deprecation.successor);
    },
  };
}
