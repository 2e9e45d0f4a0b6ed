/**
 * Requests whose answer depends on how the gateway hands them over: a header sent twice, and a JSON
 * body naming a member twice. npm start's server must answer them as a deployed stage does, so each
 * is sent over HTTP (node:http, which sends an array of values as separate header lines, where
 * fetch would join them) and compared with the answer of the deployed function's own entry point
 * given the event API Gateway's REST API builds (headers: the last value; multiValueHeaders: all).
 */
import { request } from "node:http";
import { connect } from "node:net";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handler as createPet } from "../../functions/createPet";
import { handler as listPets } from "../../functions/listPets";
import { generateApiKey } from "../../lib/auth/apiKeys";
import type { Pet } from "../../lib/contract/schemas";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { type LocalApi, startLocalApi } from "../../local/server";
import { proxyEventProblems } from "../../scripts/rehearse/apiGateway";
import {
  asTestResponse,
  bearer,
  fetchJson,
  issueTestKey,
  jsonContent,
  proxyEvent,
  startTestApi,
  type TestRequest,
  type TestResponse,
  testContext,
} from "../support/api";
import { assertMatchesContract } from "../support/contract";

let api: LocalApi;
let key: string;
/** A key of the right shape that was never issued. */
const unknownKey = generateApiKey("local");

beforeAll(async () => {
  api = await startTestApi();
  key = (await issueTestKey("parity")).key;
});
afterAll(() => api.close());

type Headers = Record<string, string | string[]>;

/** One request over HTTP with each array value sent as that many header lines, in order. */
function sendOverHttp(method: string, path: string, headers: Headers, body?: string): Promise<TestResponse> {
  const url = `${api.baseUrl}${path}`;
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => {
        const answer: TestResponse = {
          status: response.statusCode ?? 0,
          headers: Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, String(value)])),
          json: text ? JSON.parse(text) : undefined,
        };
        assertMatchesContract({ method, url }, answer);
        resolve(answer);
      });
    });
    outgoing.on("error", reject);
    for (const [name, value] of Object.entries(headers)) outgoing.setHeader(name, value);
    outgoing.end(body);
  });
}

/**
 * The same request given to the function's entry point as API Gateway's REST API would hand it
 * over: a repeated header's last value in `headers`, all of them in `multiValueHeaders`.
 */
async function invokeAsDeployed(
  handler: ProxyHandler,
  method: string,
  path: string,
  headers: Headers,
  body?: string,
): Promise<TestResponse> {
  const single: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) single[name] = typeof value === "string" ? value : "";
  const testRequest: TestRequest = { method, path, resource: "/pets", headers: single, ...(body ? { body } : {}) };
  const event: APIGatewayProxyEvent = proxyEvent(testRequest);
  // Each name as spelled, in the order sent, as the REST API's event has them.
  event.headers = {};
  event.multiValueHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    const values = typeof value === "string" ? [value] : value;
    event.headers[name] = values.at(-1);
    event.multiValueHeaders[name] = values;
  }
  const response = asTestResponse(await handler(event, testContext));
  assertMatchesContract({ method, url: `${new URL(api.baseUrl).pathname}${path}` }, response);
  return response;
}

/** A request written to the server's socket as it is, for what node:http would not send; status and JSON body. */
function sendRaw(text: string): Promise<{ status: number; json: unknown }> {
  const { hostname, port } = new URL(api.baseUrl);
  return new Promise((resolve, reject) => {
    // Written, not ended: the server closes the connection after its answer (Connection: close).
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(text));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("error", reject);
    socket.on("end", () => {
      const [head = "", body = ""] = answer.split("\r\n\r\n");
      resolve({ status: Number(head.split(" ")[1]), json: body ? JSON.parse(body) : undefined });
    });
  });
}

/** The event npm start's server builds for a request, caught on its way to the handler. */
async function eventBuiltFor(headers: Headers): Promise<APIGatewayProxyEvent> {
  const events: APIGatewayProxyEvent[] = [];
  const catching = await startLocalApi({
    host: "127.0.0.1",
    port: 0,
    loadHandler: async () => async (event) => {
      events.push(event);
      return { statusCode: 204, body: "" };
    },
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const outgoing = request(`${catching.baseUrl}/pets`, { method: "GET" }, (response) => {
        response.resume();
        response.on("end", resolve);
      });
      outgoing.on("error", reject);
      for (const [name, value] of Object.entries(headers)) outgoing.setHeader(name, value);
      outgoing.end();
    });
  } finally {
    await catching.close();
  }
  expect(events).toHaveLength(1);
  return events[0] as APIGatewayProxyEvent;
}

const newPet = JSON.stringify({ name: "Twice", categoryId: 1 });

describe("a header sent more than once", () => {
  it("reaches the function as API Gateway hands it over: every value in multiValueHeaders, the last in headers", async () => {
    const event = await eventBuiltFor({
      Authorization: ["Bearer first", "Bearer second"],
      "Idempotency-Key": ["a", "b"],
      "X-Custom": ["1", "2, 3"],
    });

    expect(event.headers.Authorization).toBe("Bearer second");
    expect(event.multiValueHeaders.Authorization).toEqual(["Bearer first", "Bearer second"]);
    expect(event.headers["Idempotency-Key"]).toBe("b");
    expect(event.multiValueHeaders["Idempotency-Key"]).toEqual(["a", "b"]);
    // Not joined with ", " as Node's request.headers does: a value that holds a comma stays whole.
    expect(event.multiValueHeaders["X-Custom"]).toEqual(["1", "2, 3"]);
    expect(proxyEventProblems(event)).toEqual([]);
  });

  it("is refused when it is Idempotency-Key, naming the header, locally and deployed", async () => {
    const headers = { ...bearer(key), ...jsonContent, "Idempotency-Key": ["first-key", "second-key"] };

    const local = await sendOverHttp("POST", "/pets", headers, newPet);
    const deployed = await invokeAsDeployed(createPet, "POST", "/pets", headers, newPet);

    for (const response of [local, deployed]) {
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ code: "invalid_request" });
      expect((response.json as { message: string }).message).toMatch(/^Idempotency-Key: .*at most once/);
    }
  });

  it("is judged by its last value when it is Authorization, locally and deployed (docs/api.md)", async () => {
    const lastValid = { Authorization: [`Bearer ${unknownKey}`, `Bearer ${key}`] };
    const lastUnknown = { Authorization: [`Bearer ${key}`, `Bearer ${unknownKey}`] };

    const answers = [
      await sendOverHttp("GET", "/pets?limit=1", lastValid),
      await invokeAsDeployed(listPets, "GET", "/pets?limit=1", lastValid),
      await sendOverHttp("GET", "/pets?limit=1", lastUnknown),
      await invokeAsDeployed(listPets, "GET", "/pets?limit=1", lastUnknown),
    ];

    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 401, 401]);
    expect(answers[2]?.json).toEqual(answers[3]?.json);
  });

  it("is two names when spelled two ways, of which the chain reads the last, locally and deployed", async () => {
    // node:http sends one spelling per name; a socket sends what it is given.
    const text = [
      "POST /v1/pets HTTP/1.1",
      "Host: 127.0.0.1",
      `Authorization: Bearer ${key}`,
      "Content-Type: application/json",
      "Idempotency-Key: spelled-first",
      "idempotency-key: spelled-second",
      `Content-Length: ${Buffer.byteLength(newPet)}`,
      "Connection: close",
      "",
      newPet,
    ].join("\r\n");
    const local = await sendRaw(text);
    const deployed = await invokeAsDeployed(
      createPet,
      "POST",
      "/pets",
      { ...bearer(key), ...jsonContent, "Idempotency-Key": "spelled-first", "idempotency-key": "spelled-second" },
      newPet,
    );
    const replay = await invokeAsDeployed(
      createPet,
      "POST",
      "/pets",
      { ...bearer(key), ...jsonContent, "Idempotency-Key": "spelled-second" },
      newPet,
    );

    expect([local.status, deployed.status]).toEqual([201, 201]);
    // Both used the last spelling's value: the local create is replayed for it.
    expect(replay.json).toEqual(local.json);
    expect(deployed.json).toEqual(local.json);
  });

  it("is judged by its last value when it is Content-Type, locally and deployed", async () => {
    const lastJson = { ...bearer(key), "Content-Type": ["text/plain", "application/json"] };
    const lastText = { ...bearer(key), "Content-Type": ["application/json", "text/plain"] };

    const answers = [
      await sendOverHttp("POST", "/pets", lastJson, newPet),
      await invokeAsDeployed(createPet, "POST", "/pets", lastJson, newPet),
      await sendOverHttp("POST", "/pets", lastText, newPet),
      await invokeAsDeployed(createPet, "POST", "/pets", lastText, newPet),
    ];

    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 415, 415]);
  });
});

/**
 * Nothing in front of a deployed stage's function parses the body: API Gateway validates a body only
 * against a model for its content type ("If no matching content type is found, request validation is
 * not performed": https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-method-request-validation.html),
 * and infra/stacks/petStoreStack.ts sets none. The stage's web ACL (infra/stacks/edgeProtection.ts)
 * has no rule that reads the body as JSON (AWS WAF's JsonBody, whose parsing "doesn't fully validate
 * the input JSON string": https://docs.aws.amazon.com/waf/latest/APIReference/API_JsonBody.html);
 * AWS WAF only lets a request through or blocks it. So the function's answer is the stage's.
 */
describe("a JSON body naming a member twice", () => {
  const body = '{"name":"A","name":"B","categoryId":1}';

  it("is created with the last value, locally and deployed (docs/api.md, Create a pet)", async () => {
    const headers = { ...bearer(key), ...jsonContent };

    const local = await fetchJson(`${api.baseUrl}/pets`, { method: "POST", headers, body });
    const deployed = await invokeAsDeployed(createPet, "POST", "/pets", headers, body);

    for (const response of [local, deployed]) {
      expect(response.status).toBe(201);
      expect(response.json).toMatchObject({ name: "B", categoryId: 1 });
    }
    expect((local.json as Pet).id).not.toBe((deployed.json as Pet).id);
  });
});
