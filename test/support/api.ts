/**
 * Driving the API in tests: handlers in-process with proxy events, or the local server over HTTP.
 * Every response `invoke` and `fetchJson` return has been checked against the OpenAPI document
 * (./contract.ts): a response the document does not describe fails the test that observed it.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from "aws-lambda";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { API_BASE_PATH } from "../../lib/routes";
import { toProxyEvent } from "../../local/proxyEvent";
import { startLocalApi } from "../../local/server";
import { assertMatchesContract } from "./contract";
import { documentClient, tableName } from "./dynamo";

/**
 * Issues a real key into the test table (keys are generated, never written in test code);
 * `synthetic`: a key of the project's own checks (lib/pets/collection.ts).
 */
export async function issueTestKey(
  name = "test",
  { synthetic = false }: { synthetic?: boolean } = {},
): Promise<{ key: string; keyId: string }> {
  const store = new DynamoApiKeyStore(documentClient(), tableName());
  const { key, record } = await issueApiKey(store, "local", name, { synthetic });
  return { key, keyId: record.keyId };
}

export interface TestRequest {
  readonly method?: string;
  /** Path below /v1, with any query string, e.g. `/pets?limit=5`. */
  readonly path: string;
  /** Route resource, e.g. `/pets/{petId}`; defaults to the path without its query. */
  readonly resource?: string;
  readonly pathParameters?: Record<string, string>;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

export function proxyEvent(request: TestRequest): APIGatewayProxyEvent {
  const url = new URL(request.path, "http://localhost");
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
  return toProxyEvent({
    method: request.method ?? "GET",
    path: url.pathname,
    search: url.searchParams,
    headers,
    body: request.body ?? "",
    resource: request.resource ?? url.pathname,
    pathParameters: request.pathParameters ?? null,
    sourceIp: "127.0.0.1",
  });
}

export const testContext = {
  awsRequestId: "test-request",
  functionName: "test",
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

export interface TestResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly json: unknown;
}

export function asTestResponse(result: APIGatewayProxyResult): TestResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name.toLowerCase()] = String(value);
  return { status: result.statusCode, headers, json: result.body ? JSON.parse(result.body) : undefined };
}

export async function invoke(handler: ProxyHandler, request: TestRequest): Promise<TestResponse> {
  const response = asTestResponse(await handler(proxyEvent(request), testContext));
  assertMatchesContract({ method: request.method ?? "GET", url: `${API_BASE_PATH}${request.path}` }, response);
  return response;
}

export function bearer(key: string): Record<string, string> {
  return { Authorization: `Bearer ${key}` };
}

export const jsonContent = { "Content-Type": "application/json" } as const;

/** The local server on a free port, using this file's table. */
export async function startTestApi() {
  return startLocalApi({ host: "127.0.0.1", port: 0 });
}

export async function fetchJson(url: string, init?: RequestInit): Promise<TestResponse> {
  const response = await fetch(url, init);
  const text = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const result = { status: response.status, headers, json: text ? JSON.parse(text) : undefined };
  assertMatchesContract({ method: init?.method ?? "GET", url }, result);
  return result;
}
