/**
 * The local stand-in for API Gateway: routes requests with the shared route table, turns each
 * into a REST proxy event and invokes the same `handler` exports the Lambda functions run.
 * Answers it gives itself (unknown route, wrong method, oversized body) have the Error shape,
 * as the deployed stage's gateway responses do. Outside /v1 it also serves the OpenAPI document
 * (/openapi.json) and its rendered reference (/docs).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { fileURLToPath } from "node:url";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { type ErrorBody, type ErrorCode, MAX_BODY_BYTES } from "../lib/contract/schemas";
import { PayloadTooLargeError } from "../lib/errors";
import type { ProxyHandler } from "../lib/http/apiHandler";
import { errorResult, toErrorResult } from "../lib/http/middleware/errorResponse";
import { COMMON_HEADERS } from "../lib/http/middleware/responseEnvelope";
import { isReplayedAnswer } from "../lib/idempotency/replayed";
import { API_BASE_PATH, type RouteDefinition, routeList, routes } from "../lib/routes";
import { DOCS_PATH, type LocalDocs, localDocs } from "./apiDocs";
import { listen } from "./listen";
import { headersAsSent, toProxyEvent } from "./proxyEvent";

const projectRoot = fileURLToPath(new URL("../", import.meta.url));

/**
 * Where the stand-in stops reading a body and answers 413 itself, so that a huge body is never held
 * in memory. It is not the API's limit (MAX_BODY_BYTES, which the handler enforces, after checking
 * the key): it is far above it so that bodies a client could plausibly send still reach the handler,
 * as they do through API Gateway (whose own cap is 10 MB, answered with its REQUEST_TOO_LARGE gateway
 * response: https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html), and the
 * answer is the handler's own 413.
 */
export const LOCAL_BODY_READ_LIMIT_BYTES = 1024 * 1024;
/** What the deployed functions get; handlers use it to answer 503 before being killed. */
const LAMBDA_TIMEOUT_MS = 10_000;

export interface RequestLogEntry {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly durationMs: number;
  readonly requestId: string;
  /** The Error body's `code`, for an error answer. */
  readonly errorCode?: string;
  /** Set on a create answered from its Idempotency-Key record. */
  readonly replayed?: true;
}

export interface LocalApiOptions {
  readonly host: string;
  readonly port: number;
  readonly loadHandler?: (route: RouteDefinition) => Promise<ProxyHandler>;
  readonly onRequest?: (entry: RequestLogEntry) => void;
  /** A handler threw (API Gateway's failed integration); by default one JSON line on stderr. */
  readonly onHandlerFailure?: (error: unknown) => void;
}

export interface LocalApi {
  /** The API's base URL, ending in /v1. */
  readonly baseUrl: string;
  readonly port: number;
  close(): Promise<void>;
}

interface RouteMatcher {
  readonly pattern: RegExp;
  readonly parameterNames: string[];
  readonly byMethod: Map<string, RouteDefinition>;
}

function compileRoutes(routes: readonly RouteDefinition[]): RouteMatcher[] {
  const matchers = new Map<string, RouteMatcher>();
  for (const route of routes) {
    let matcher = matchers.get(route.path);
    if (!matcher) {
      const parameterNames: string[] = [];
      const source = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        parameterNames.push(name);
        return "([^/]+)";
      });
      matcher = { pattern: new RegExp(`^${source}$`), parameterNames, byMethod: new Map() };
      matchers.set(route.path, matcher);
    }
    matcher.byMethod.set(route.method, route);
  }
  return [...matchers.values()];
}

async function importHandler(route: RouteDefinition): Promise<ProxyHandler> {
  const module = (await import(`${projectRoot}${route.handlerFile}`)) as { handler: ProxyHandler };
  return module.handler;
}

function lambdaContext(requestId: string, startedAt: number): Context {
  return {
    awsRequestId: requestId,
    functionName: "local",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:local:000000000000:function:local",
    memoryLimitInMB: "256",
    logGroupName: "local",
    logStreamName: "local",
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => Math.max(0, LAMBDA_TIMEOUT_MS - (Date.now() - startedAt)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

class BodyTooLarge extends Error {}

/** The body's bytes as received: whether they are UTF-8 is the handler's question (./proxyEvent.ts). */
async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > LOCAL_BODY_READ_LIMIT_BYTES) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function gatewayAnswer(
  status: number,
  code: ErrorCode,
  message: string,
  extra: Record<string, string> = {},
): APIGatewayProxyResult {
  const result = errorResult(status, code, message);
  return {
    statusCode: status,
    headers: { ...extra, ...COMMON_HEADERS, "X-Request-Id": randomUUID() },
    body: JSON.stringify(result.body),
  };
}

/**
 * A body past LOCAL_BODY_READ_LIMIT_BYTES: the same answer the API gives any body over its limit
 * (a body this large is over it whatever else is wrong), mapped where every typed error is.
 */
function bodyTooLargeAnswer(): APIGatewayProxyResult {
  const result = toErrorResult(new PayloadTooLargeError(MAX_BODY_BYTES));
  const { code, message } = result.body as ErrorBody;
  // The rest of the body is still on the socket; closing it keeps the next request clean.
  return gatewayAnswer(result.statusCode, code, message, { Connection: "close" });
}

function logHandlerFailure(error: unknown): void {
  console.error(JSON.stringify({ level: "ERROR", message: "handler failed", error: String(error) }));
}

/** What the request log says about an answer beyond its status. */
function outcomeOf(result: APIGatewayProxyResult): Pick<RequestLogEntry, "errorCode" | "replayed"> {
  const replayed = isReplayedAnswer(result.headers);
  let errorCode: unknown;
  if (result.statusCode >= 400) {
    try {
      errorCode = (JSON.parse(result.body) as { code?: unknown }).code;
    } catch {
      // Not the Error shape: the status says enough.
    }
  }
  return {
    ...(typeof errorCode === "string" ? { errorCode } : {}),
    ...(replayed ? { replayed: true } : {}),
  };
}

/** What Node's HTTP parser refused, in words the sender can act on. */
function clientErrorMessage(code: string | undefined): string {
  if (code === "HPE_HEADER_OVERFLOW") return "The request headers are too large.";
  // A newline pasted with a header value (a key copied with its line end): it ends the line early.
  if (code === "HPE_CR_EXPECTED")
    return "The request is malformed: a header value ends in a bare newline (pasted with the value?); send each header on one line.";
  return "The request is malformed.";
}

function send(response: ServerResponse, result: APIGatewayProxyResult): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {})) headers[name] = values.map(String);
  const body = result.isBase64Encoded ? Buffer.from(result.body, "base64") : Buffer.from(result.body ?? "", "utf8");
  response.writeHead(result.statusCode, { ...headers, "Content-Length": String(body.length) });
  response.end(body);
}

export async function startLocalApi(options: LocalApiOptions): Promise<LocalApi> {
  const matchers = compileRoutes(routeList);
  const loadHandler = options.loadHandler ?? importHandler;
  const handlers = new Map<RouteDefinition, ProxyHandler>();
  for (const route of routeList) handlers.set(route, await loadHandler(route));
  // Made once the port is known: the document lists this server's own URL.
  let docs: LocalDocs | undefined;
  // Where a person lands first: say where the API and its reference are. Local only; the deployed
  // gateway answers these paths with its own not_found (infra/stacks/gatewayErrors.ts).
  const landingPaths = new Set(["/", API_BASE_PATH, `${API_BASE_PATH}/`]);
  const landingMessage = (path: string) =>
    `No route matches ${path}. The API is at ${API_BASE_PATH}${routes.listPets.path} (with 'Authorization: Bearer <key>'); its reference is at ${DOCS_PATH}.`;

  async function answer(request: IncomingMessage): Promise<APIGatewayProxyResult> {
    const url = new URL(request.url ?? "/", "http://localhost");
    // Local only: the deployed stages serve the API alone; the document is published by `npm run docs`.
    if (request.method === "GET" || request.method === "HEAD") {
      const page = await docs?.answer(url.pathname);
      if (page) return page;
    }
    if (landingPaths.has(url.pathname)) return gatewayAnswer(404, "not_found", landingMessage(url.pathname));
    if (!url.pathname.startsWith(`${API_BASE_PATH}/`)) {
      return gatewayAnswer(404, "not_found", `No route matches ${url.pathname}; the API is under ${API_BASE_PATH}.`);
    }
    const path = url.pathname.slice(API_BASE_PATH.length);
    for (const matcher of matchers) {
      const match = matcher.pattern.exec(path);
      if (!match) continue;
      const method = request.method ?? "GET";
      const route = matcher.byMethod.get(method);
      if (!route) {
        const allowed = [...matcher.byMethod.keys()];
        return gatewayAnswer(
          405,
          "method_not_allowed",
          `Method ${method} is not allowed here; allowed: ${allowed.join(", ")}.`,
          {
            Allow: allowed.join(", "),
          },
        );
      }
      let body: Buffer;
      try {
        body = await readBody(request);
      } catch (error) {
        if (error instanceof BodyTooLarge) return bodyTooLargeAnswer();
        throw error;
      }
      const pathParameters: Record<string, string> = {};
      matcher.parameterNames.forEach((name, index) => {
        const raw = match[index + 1] ?? "";
        try {
          pathParameters[name] = decodeURIComponent(raw);
        } catch {
          pathParameters[name] = raw;
        }
      });
      const event = toProxyEvent({
        method,
        path,
        search: url.searchParams,
        // Every value of a repeated header, as API Gateway hands them over (./proxyEvent.ts).
        headers: headersAsSent(request.rawHeaders),
        body,
        resource: route.path,
        pathParameters: matcher.parameterNames.length > 0 ? pathParameters : null,
        sourceIp: request.socket.remoteAddress ?? "127.0.0.1",
      });
      const handler = handlers.get(route) as ProxyHandler;
      return handler(event, lambdaContext(event.requestContext.requestId, Date.now()));
    }
    return gatewayAnswer(404, "not_found", `No route matches ${url.pathname}.`);
  }

  const server = createServer((request, response) => {
    const startedAt = performance.now();
    answer(request)
      .catch((error: unknown) => {
        // A handler that throws is what API Gateway reports as a failed integration.
        (options.onHandlerFailure ?? logHandlerFailure)(error);
        return gatewayAnswer(
          500,
          "internal_error",
          "An internal error occurred. Quote the X-Request-Id header when reporting it.",
        );
      })
      .then((result) => {
        send(response, result);
        options.onRequest?.({
          method: request.method ?? "",
          path: request.url ?? "",
          status: result.statusCode,
          durationMs: performance.now() - startedAt,
          requestId: String(result.headers?.["X-Request-Id"] ?? ""),
          ...outcomeOf(result),
        });
      });
  });
  server.keepAliveTimeout = 5_000;
  // Requests Node cannot parse (oversized headers, a malformed request line) still get the Error shape.
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || error.code === "ECONNRESET") return socket.destroy();
    const result = gatewayAnswer(400, "invalid_request", clientErrorMessage(error.code));
    const body = result.body;
    const headers = Object.entries(result.headers ?? {})
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    socket.end(
      `HTTP/1.1 400 Bad Request\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });

  const port = await listen(server, options.port, options.host);
  const baseUrl = `http://${options.host}:${port}${API_BASE_PATH}`;
  docs = localDocs({ baseUrl });
  return {
    baseUrl,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Stop accepting, let requests in flight finish, then release idle keep-alive sockets.
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
