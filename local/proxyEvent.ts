/**
 * Turns an HTTP request into the event API Gateway's REST API sends a Lambda proxy integration
 * (payload format 1.0), as the deployed stage would: the fields of AWS's sample event in "Input format
 * of a Lambda function for proxy integration"
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format).
 * The rehearsal checks every event it builds against AWS Powertools' independent schema of that event
 * (scripts/rehearse/apiGateway.ts, proxyEventProblems).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { utf8TextOf } from "../lib/http/utf8";
import { API_BASE_PATH } from "../lib/routes";

export interface HttpRequestParts {
  readonly method: string;
  /** Path below the stage, e.g. `/pets/7`. */
  readonly path: string;
  readonly search: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** Text, or the bytes as received (the local server's), handed over as text only when they are UTF-8. */
  readonly body: string | Uint8Array;
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

/**
 * The event's `body` and `isBase64Encoded`. Bytes that are UTF-8 go as text, as API Gateway passes a
 * JSON body. Bytes that are not go base64-encoded, as API Gateway passes a body of a binary media
 * type (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-payload-encodings-workflow.html),
 * so that the handler sees them as they were and refuses them (lib/http/middleware/jsonBody.ts).
 * This is where the stand-in departs from the gateway on purpose: for application/json the deployed
 * gateway hands over text with U+FFFD in place of those bytes, which the function cannot detect
 * (docs/api.md, "Create a pet").
 */
function proxyBody(body: string | Uint8Array): Pick<APIGatewayProxyEvent, "body" | "isBase64Encoded"> {
  if (body.length === 0) return { body: null, isBase64Encoded: false };
  if (typeof body === "string") return { body, isBase64Encoded: false };
  const text = utf8TextOf(body);
  return text === undefined
    ? { body: Buffer.from(body).toString("base64"), isBase64Encoded: true }
    : { body: text, isBase64Encoded: false };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;

/**
 * `$context.requestTime` as API Gateway writes it, in CLF format (`09/Apr/2015:12:34:56 +0000`), always
 * in UTC: https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html#context-variable-reference
 */
export function apiGatewayRequestTime(date: Date): string {
  const two = (value: number) => String(value).padStart(2, "0");
  const day = `${two(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}`;
  return `${day}:${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())} +0000`;
}

/**
 * `$context.domainName` and `$context.domainPrefix`: the host the client called, without a port (the
 * deployed API is reached on 443 only), and its first label.
 */
function domainOf(headers: IncomingHttpHeaders): { domainName: string; domainPrefix: string } {
  const host = `http://${headers.host?.trim() || "localhost"}`;
  const domainName = URL.canParse(host) ? new URL(host).hostname : "localhost";
  return { domainName, domainPrefix: domainName.split(".")[0] ?? domainName };
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
    ...proxyBody(request.body),
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      authorizer: null,
      ...domainOf(request.headers),
      // API Gateway's own id of the request, beside the requestId it hands the function: 16
      // base64 characters, as in its access logs (`Yk1AbGHgIAMEbXw=`).
      extendedRequestId: randomBytes(11).toString("base64"),
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
      requestTime: apiGatewayRequestTime(now),
      requestTimeEpoch: now.getTime(),
      resourceId: "local",
      resourcePath: request.resource,
    },
  };
}
