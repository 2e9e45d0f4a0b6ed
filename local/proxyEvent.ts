/**
 * Turns an HTTP request into the event API Gateway's REST API sends a Lambda proxy integration
 * (payload format 1.0), as the deployed stage would.
 */
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { API_BASE_PATH } from "../lib/routes";

export interface HttpRequestParts {
  readonly method: string;
  /** Path below the stage, e.g. `/pets/7`. */
  readonly path: string;
  readonly search: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly resource: string;
  readonly pathParameters: Record<string, string> | null;
  readonly sourceIp: string;
}

function headerMaps(raw: IncomingHttpHeaders) {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    multiValueHeaders[name] = values;
    headers[name] = values.at(-1) ?? "";
  }
  return { headers, multiValueHeaders };
}

function queryMaps(search: URLSearchParams) {
  if ([...search.keys()].length === 0) return { queryStringParameters: null, multiValueQueryStringParameters: null };
  const queryStringParameters: Record<string, string> = {};
  const multiValueQueryStringParameters: Record<string, string[]> = {};
  for (const [name, value] of search) {
    const values = multiValueQueryStringParameters[name] ?? [];
    values.push(value);
    multiValueQueryStringParameters[name] = values;
    queryStringParameters[name] = value;
  }
  return { queryStringParameters, multiValueQueryStringParameters };
}

export function toProxyEvent(request: HttpRequestParts): APIGatewayProxyEvent {
  const requestId = randomUUID();
  const now = new Date();
  return {
    resource: request.resource,
    path: request.path,
    httpMethod: request.method,
    ...headerMaps(request.headers),
    ...queryMaps(request.search),
    pathParameters: request.pathParameters,
    stageVariables: null,
    body: request.body.length > 0 ? request.body : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      authorizer: null,
      protocol: "HTTP/1.1",
      httpMethod: request.method,
      identity: {
        sourceIp: request.sourceIp,
        userAgent: (request.headers["user-agent"] as string | undefined) ?? null,
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        user: null,
        userArn: null,
      },
      path: `${API_BASE_PATH}${request.path}`,
      stage: API_BASE_PATH.slice(1),
      requestId,
      requestTimeEpoch: now.getTime(),
      resourceId: "local",
      resourcePath: request.resource,
    },
  };
}
