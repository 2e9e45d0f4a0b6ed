/**
 * The served OpenAPI document works in Postman as is: converted by openapi-to-postmanv2 (what
 * Postman's importer runs) and run by newman against `npm start`, with nothing set but what a user
 * sets (the base URL and the bearer token), every request gets the status the document gives it.
 * Also what a browser gets: no CORS, and a preflight answered 405.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import newman, { type NewmanRunSummary } from "newman";
import { convertV2 } from "openapi-to-postmanv2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { petExample } from "../../lib/contract/examples";
import type { OpenApiDocument } from "../../lib/contract/openapi";
import { CLEAN_LOCAL_SERVER_ENV, freePort, type RunningProcess, runScript } from "../support/processes";

let server: RunningProcess;
let folder: string;
let baseUrl: string;
let key: string;
let document: OpenApiDocument;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "petstore-postman-"));
  // A new in-memory store and a new key for this run: the example ids are those a new store hands out.
  server = runScript("local/main.ts", ["--in-memory"], {
    cwd: folder,
    env: {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      ...CLEAN_LOCAL_SERVER_ENV,
    },
  });
  const [, base, issued] = await server.waitFor(/export BASE=(\S+) KEY=(petstore_local_\w+)/);
  await server.waitFor(/Ctrl-C stops the server\./);
  baseUrl = base as string;
  key = issued as string;
  document = (await (await fetch(`${new URL(baseUrl).origin}/openapi.json`)).json()) as OpenApiDocument;
});

afterAll(async () => {
  server?.killGroup("SIGKILL");
  await server?.exited;
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** The collection Postman's importer makes of `document` (openapi-to-postmanv2, values from the examples). */
function postmanCollection(source: OpenApiDocument): Promise<object> {
  return new Promise((resolve, reject) => {
    convertV2({ type: "json", data: source }, { parametersResolution: "Example" }, (error, result) => {
      if (error) return reject(error);
      const collection = result?.result ? result.output?.[0]?.data : undefined;
      if (!collection) return reject(new Error(`conversion failed: ${result?.reason}`));
      resolve(collection as object);
    });
  });
}

function runCollection(collection: object, variables: Record<string, string>): Promise<NewmanRunSummary> {
  return new Promise((resolve, reject) => {
    newman.run(
      {
        collection: collection as newman.NewmanRunOptions["collection"],
        envVar: Object.entries(variables).map(([name, value]) => ({ key: name, value })),
        reporters: [],
        timeoutRequest: 10_000,
      },
      (error, summary) => (error ? reject(error) : resolve(summary)),
    );
  });
}

/** The operation a request path and method belong to, and the success status the document gives it. */
function documentedSuccess(method: string, path: string): { operation: string; status: number } {
  const basePath = new URL(baseUrl).pathname;
  for (const [template, item] of Object.entries(document.paths)) {
    const pattern = new RegExp(`^${basePath}${template.replace(/\{\w+\}/g, "[^/]+")}$`);
    const operation = item[method.toLowerCase()];
    if (!pattern.test(path) || !operation) continue;
    const successes = Object.keys(operation.responses as object).filter((status) => status.startsWith("2"));
    return { operation: String(operation.operationId), status: Number(successes[0]) };
  }
  throw new Error(`${method} ${path} is not in the document`);
}

describe("the OpenAPI document in Postman", () => {
  it("runs every operation, as converted, with its documented status and the example's values", async () => {
    const collection = await postmanCollection(document);
    const summary = await runCollection(collection, { baseUrl, bearerToken: key });

    const answers = summary.run.executions.map((execution) => {
      const path = `/${execution.request.url.path?.join("/") ?? ""}`;
      return {
        ...documentedSuccess(execution.request.method, path),
        got: execution.response?.code,
        body: JSON.parse(execution.response?.text() ?? "null") as unknown,
      };
    });

    expect(summary.run.failures).toEqual([]);
    expect(answers.map(({ operation, status, got }) => ({ operation, status, got }))).toEqual([
      { operation: "listPets", status: 200, got: 200 },
      { operation: "createPet", status: 201, got: 201 },
      { operation: "getPet", status: 200, got: 200 },
    ]);
    // The create sent the request body example, and the example id is the pet it made.
    expect(answers[1]?.body).toEqual(petExample);
    expect(answers[2]?.body).toEqual(petExample);
  });
});

describe("a browser", () => {
  it("gets its preflight answered 405 with Allow and no CORS headers, so it sends nothing more", async () => {
    const response = await fetch(`${baseUrl}/pets`, {
      method: "OPTIONS",
      headers: {
        Origin: "https://shop.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
      },
    });

    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, POST");
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
    expect(await response.json()).toEqual({
      code: "method_not_allowed",
      message: "Method OPTIONS is not allowed here; allowed: GET, POST.",
      status: 405,
    });
  });

  it("gets no Access-Control-Allow-Origin on an answer, so a page from another origin cannot read it", async () => {
    const response = await fetch(`${baseUrl}/pets`, {
      headers: { Origin: "https://shop.example.com", Authorization: `Bearer ${key}` },
    });

    expect(response.status).toBe(200);
    expect([...response.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });
});
