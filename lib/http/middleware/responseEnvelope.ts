import type { MiddlewareObj, Request } from "@middy/core";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import type { ApiEvent, ApiResult } from "../types";

export const COMMON_HEADERS = {
  "Content-Type": "application/json; charset=utf-8",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
} as const;

type EnvelopeRequest = Request<ApiEvent, ApiResult | APIGatewayProxyResult, Error, Context>;

function requestIdOf(request: EnvelopeRequest): string {
  return request.event.requestContext?.requestId || request.context.awsRequestId || "unknown";
}

/**
 * Outermost middleware: turns an ApiResult (success or mapped error) into the proxy response,
 * with a JSON body and the headers every answer carries.
 */
export function responseEnvelope(): MiddlewareObj<ApiEvent, APIGatewayProxyResult, Error, Context> {
  const finish = async (request: EnvelopeRequest) => {
    const result = request.response as ApiResult | undefined;
    if (!result) return;
    request.response = {
      statusCode: result.statusCode,
      headers: { ...result.headers, ...COMMON_HEADERS, "X-Request-Id": requestIdOf(request) },
      body: JSON.stringify(result.body),
    };
  };
  return { after: finish, onError: finish } as MiddlewareObj<ApiEvent, APIGatewayProxyResult, Error, Context>;
}
