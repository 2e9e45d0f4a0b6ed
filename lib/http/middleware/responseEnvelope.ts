import type { MiddlewareObj, Request } from "@middy/core";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import type { ApiEvent, ApiResult } from "../types";

export const COMMON_HEADERS = {
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
} as const;

const commonHeaders = Object.entries(COMMON_HEADERS);

type EnvelopeRequest = Request<ApiEvent, ApiResult | APIGatewayProxyResult, Error, Context>;

function requestIdOf(request: EnvelopeRequest): string {
  return request.event.requestContext?.requestId || request.context.awsRequestId || "unknown";
}

/**
 * Outermost middleware: turns an ApiResult (success or mapped error) into the proxy response,
 * with a JSON body and the headers every answer carries.
 */
export function responseEnvelope(): MiddlewareObj<ApiEvent, APIGatewayProxyResult, Error, Context> {
  const finish = (request: EnvelopeRequest) => {
    const result = request.response as ApiResult | undefined;
    if (!result) return;
    // Assigned one by one rather than spread: the same headers, the common ones winning, for a
    // fraction of the cost on every request.
    const headers: Record<string, string> = {};
    if (result.headers) for (const name in result.headers) headers[name] = result.headers[name] as string;
    for (const [name, value] of commonHeaders) headers[name] = value;
    headers["X-Request-Id"] = requestIdOf(request);
    request.response = { statusCode: result.statusCode, headers, body: JSON.stringify(result.body) };
  };
  return { after: finish, onError: finish } as MiddlewareObj<ApiEvent, APIGatewayProxyResult, Error, Context>;
}
