/**
 * Turns an HTTP request into the event API Gateway's REST API sends a Lambda proxy integration
 * (payload format 1.0), as the deployed stage would: the fields of AWS's sample event in "Input format
 * of a Lambda function for proxy integration"
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format).
 * The rehearsal checks every event it builds against AWS Powertools' independent schema of that event
 * (scripts/rehearse/apiGateway.ts, proxyEventProblems).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { utf8TextOf } from "../lib/http/utf8";
import { API_BASE_PATH } from "../lib/routes";

/**
 * A request's headers by name: each value as sent, or every value of a header sent more than once,
 * in order. The local server gives them as the client spelled them (headersAsSent); callers that
 * have only Node's `request.headers` (lower-cased, repeated values joined) may pass those.
 */
export type RequestHeaders = Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * A request's headers grouped by name as the client spelled it, from Node's `rawHeaders` (name,
 * value, name, value, …): not `request.headers`, where Node lower-cases names, joins repeated
 * headers with ", " and keeps only the first of some (Authorization, Content-Type):
 * https://nodejs.org/api/http.html#messagerawheaders
 */
export function headersAsSent(rawHeaders: readonly string[]): Record<string, string[]> {
  const headers: Record<string, string[]> = {};
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    const name = rawHeaders[index] as string;
    const value = rawHeaders[index + 1] as string;
    const values = headers[name];
    if (values === undefined) headers[name] = [value];
    else values.push(value);
  }
  return headers;
}

export interface HttpRequestParts {
  readonly method: string;
  /** Path below the stage, e.g. `/pets/7`. */
  readonly path: string;
  readonly search: URLSearchParams;
  readonly headers: RequestHeaders;
  /** Text, or the bytes as received (the local server's), handed over as text only when they are UTF-8. */
  readonly body: string | Uint8Array;
  readonly resource: string;
  readonly pathParameters: Record<string, string> | null;
  readonly sourceIp: string;
}

/**
 * `headers` and `multiValueHeaders` as API Gateway's REST API fills them for a header sent more than
 * once: every value, in order, in `multiValueHeaders`, and the last one alone in `headers`. AWS's
 * sample event shows it for a repeated query parameter (`multivalueName`: "me" beside ["you", "me"]),
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html#api-gateway-simple-proxy-for-lambda-input-format,
 * and Jaewoo Ahn's walk-through of the REST API's payload does for headers (`headers` keeps only
 * the last of `foo: bar1`, `foo: bar2`; `multiValueHeaders`, added in 2018, holds every value):
 * https://medium.com/@lancers/amazon-api-gateway-explaining-lambda-payload-version-2-0-in-http-api-24b0b4db5d36.
 * So the chain answers a repeated header here as it does deployed: two Idempotency-Key headers are
 * refused (lib/idempotency/header.ts), and of two Authorization headers the last is judged.
 * Names keep the client's spelling, and each spelling is a name of its own, as in the REST API's
 * event (the same article): `Idempotency-Key` beside `idempotency-key` is two names with one value
 * each, which the chain reads as one header whose last spelling wins (lib/http/middleware/requestHeaders.ts).
 */
function headerMaps(raw: RequestHeaders) {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const values = typeof value === "string" ? [value] : [...value];
    if (values.length === 0) continue;
    multiValueHeaders[name] = values;
    headers[name] = values.at(-1) as string;
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
function domainOf(hostHeader: string | undefined): { domainName: string; domainPrefix: string } {
  const host = `http://${hostHeader?.trim() || "localhost"}`;
  const domainName = URL.canParse(host) ? new URL(host).hostname : "localhost";
  return { domainName, domainPrefix: domainName.split(".")[0] ?? domainName };
}

/** The last value of the header `lowerCaseName`, however the client spelled it. */
function headerNamed(headers: Record<string, string>, lowerCaseName: string): string | undefined {
  let found: string | undefined;
  for (const name in headers) if (name.toLowerCase() === lowerCaseName) found = headers[name];
  return found;
}

export function toProxyEvent(request: HttpRequestParts): APIGatewayProxyEvent {
  const requestId = randomUUID();
  const now = new Date();
  const { headers, multiValueHeaders } = headerMaps(request.headers);
  return {
    resource: request.resource,
    path: request.path,
    httpMethod: request.method,
    headers,
    multiValueHeaders,
    ...queryMaps(request.search),
    pathParameters: request.pathParameters,
    stageVariables: null,
    ...proxyBody(request.body),
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      authorizer: null,
      ...domainOf(headerNamed(headers, "host")),
      // API Gateway's own id of the request, beside the requestId it hands the function: 16
      // base64 characters, as in its access logs (`Yk1AbGHgIAMEbXw=`).
      extendedRequestId: randomBytes(11).toString("base64"),
      protocol: "HTTP/1.1",
      httpMethod: request.method,
      identity: {
        sourceIp: request.sourceIp,
        userAgent: headerNamed(headers, "user-agent") ?? null,
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
