/**
 * The served OpenAPI document works in Postman as docs/api.md ("The OpenAPI document") says to
 * import it: converted by openapi-to-postmanv2 (what Postman's importer runs) with the import
 * settings the page names, and run by newman against `npm start`, with nothing set but what a user
 * sets (the base URL and the bearer token), every request gets the status the document gives it,
 * run after run. Postman's default settings do not work, as the page says. Also what a browser
 * gets: no CORS, and a preflight answered 405.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import newman, { type NewmanRunSummary } from "newman";
import { convertV2 } from "openapi-to-postmanv2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { petExample } from "../../lib/contract/examples";
import type { OpenApiDocument } from "../../lib/contract/openapi";
import { CLEAN_LOCAL_SERVER_ENV, freePort, type RunningProcess, runScript } from "../support/processes";

let server: RunningProcess;
let folder: string;
let baseUrl: string;
let key: string;
/** A `read` key of the same server, issued into its embedded DynamoDB. */
let readKey: string;
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
  const [, table, endpoint] = await server.waitFor(/\(table (\S+)\) at (http\S+)/);
  const dynamo = new DynamoDBClient({
    region: "us-east-1",
    endpoint: endpoint as string,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const keys = new DynamoApiKeyStore(DynamoDBDocumentClient.from(dynamo), table as string);
  readKey = (await issueApiKey(keys, "local", "postman reader", { scope: "read" })).key;
  dynamo.destroy();
  document = (await (await fetch(`${new URL(baseUrl).origin}/openapi.json`)).json()) as OpenApiDocument;
});

afterAll(async () => {
  server?.killGroup("SIGKILL");
  await server?.exited;
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** Postman's import settings, by the names openapi-to-postmanv2 gives them (its `lib/options.js`). */
interface ImportSettings {
  /** "Parameter generation": Postman's default is `Schema`. */
  readonly parametersResolution?: "Example" | "Schema";
  /** "Enable optional parameters": on by default. */
  readonly enableOptionalParameters?: boolean;
}

/** The import settings docs/api.md tells a user to choose (its words are checked below). */
const DOCUMENTED_SETTINGS: ImportSettings = { parametersResolution: "Example", enableOptionalParameters: false };

/** docs/api.md's "The OpenAPI document" section, where the Postman advice is. */
function documentSection(): string {
  const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
  const start = guide.indexOf("## The OpenAPI document");
  return guide.slice(start, guide.indexOf("\n## ", start + 1));
}

/** The collection Postman's importer makes of `document` with these settings (openapi-to-postmanv2). */
function postmanCollection(source: OpenApiDocument, settings: ImportSettings): Promise<object> {
  return new Promise((resolve, reject) => {
    convertV2({ type: "json", data: source }, settings, (error, result) => {
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

/** One run of a collection: each request's operation, documented and received status, what it sent and got. */
async function runOnce(collection: object, bearerToken = key) {
  const summary = await runCollection(collection, { baseUrl, bearerToken });
  expect(summary.run.failures).toEqual([]);
  return summary.run.executions.map((execution) => {
    const path = `/${execution.request.url.path?.join("/") ?? ""}`;
    return {
      ...documentedSuccess(execution.request.method, path),
      got: execution.response?.code,
      /** The query string and headers (names in lower case) as sent: unticked parameters are not. */
      query: execution.request.url.getQueryString(),
      headers: execution.request.headers.toObject(true) as Record<string, string>,
      body: JSON.parse(execution.response?.text() ?? "null") as unknown,
    };
  });
}

/** A collection's folder or request, as far as the tests read it. */
interface CollectionItem {
  readonly item?: CollectionItem[];
  readonly name?: string;
  readonly request: { method?: string; header?: { key: string; value: string; disabled?: boolean }[] };
  /** The saved example answers ("Examples" in Postman). */
  readonly response?: { code: number; body?: string; header?: { key: string; value: string }[] }[];
}

/** The requests of a collection, folders flattened. */
function requestsOf(collection: object): CollectionItem[] {
  const flatten = (items: CollectionItem[]): CollectionItem[] =>
    items.flatMap((item) => (item.item ? flatten(item.item) : [item]));
  return flatten((collection as { item: CollectionItem[] }).item);
}

describe("the OpenAPI document in Postman", () => {
  it("is imported as docs/api.md says: Parameter generation Example, optional parameters off", () => {
    expect(documentSection()).toContain("**Parameter generation: Example**");
    expect(documentSection()).toContain("**Enable optional parameters** off");
  });

  it("runs, so imported, every operation with its documented status, again and again, from the first page", async () => {
    const collection = await postmanCollection(document, DOCUMENTED_SETTINGS);

    const first = await runOnce(collection);
    const second = await runOnce(collection);

    for (const run of [first, second]) {
      expect(run.map(({ operation, status, got }) => ({ operation, status, got }))).toEqual([
        { operation: "listPets", status: 200, got: 200 },
        { operation: "createPet", status: 201, got: 201 },
        { operation: "getPet", status: 200, got: 200 },
      ]);
    }
    // The list sends no cursor (nor limit, nor status): the second run's lists the first run's pet,
    // which the example cursor (the page after it) would skip.
    expect([first[0]?.query, second[0]?.query]).toEqual(["", ""]);
    expect(second[0]?.body).toEqual([petExample]);
    // Each create sends the request body example and no Idempotency-Key, so each adds a pet.
    expect(Object.keys(first[1]?.headers ?? {})).toContain("authorization");
    expect(Object.keys(first[1]?.headers ?? {})).not.toContain("idempotency-key");
    expect(first[1]?.body).toEqual(petExample);
    expect(second[1]?.body).toEqual({ ...petExample, id: petExample.id + 1 });
    // The example id is the pet the first create made.
    expect(first[2]?.body).toEqual(petExample);
  });

  it("adds a pet per create with Idempotency-Key ticked and set to {{$guid}}, as docs/api.md says", async () => {
    expect(documentSection()).toContain("`Idempotency-Key` and set it to `{{$guid}}`");
    const collection = await postmanCollection(document, DOCUMENTED_SETTINGS);
    for (const { request } of requestsOf(collection)) {
      for (const header of request.header ?? []) {
        if (header.key === "Idempotency-Key") Object.assign(header, { value: "{{$guid}}", disabled: false });
      }
    }

    const creates = [(await runOnce(collection))[1], (await runOnce(collection))[1]];

    const keys = creates.map((create) => create?.headers["idempotency-key"]);
    expect(keys).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/), expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    expect(keys[0]).not.toBe(keys[1]);
    expect(new Set(creates.map((create) => (create?.body as { id?: number } | undefined)?.id)).size).toBe(2);
  });

  it("runs with a read key as bearerToken: the reads answer 200, the create 403 insufficient_scope, as docs/api.md says", async () => {
    expect(documentSection()).toContain("with a `read` key the create gets 403 `insufficient_scope`");
    const collection = await postmanCollection(document, DOCUMENTED_SETTINGS);

    const run = await runOnce(collection, readKey);

    expect(run.map(({ operation, got, body }) => ({ operation, got, code: (body as { code?: string }).code }))).toEqual(
      [
        { operation: "listPets", got: 200, code: undefined },
        { operation: "createPet", got: 403, code: "insufficient_scope" },
        { operation: "getPet", got: 200, code: undefined },
      ],
    );
  });

  it("saves createPet's 403 insufficient_scope example, with its challenge, in the imported collection", async () => {
    const collection = await postmanCollection(document, DOCUMENTED_SETTINGS);
    const create = requestsOf(collection).find((item) => item.request.method === "POST");
    const forbidden = (create?.response ?? []).filter((example) => example.code === 403);

    expect(forbidden.map((example) => JSON.parse(example.body ?? "null").code)).toContain("insufficient_scope");
    expect(forbidden.flatMap((example) => example.header ?? [])).toContainEqual(
      expect.objectContaining({
        key: "WWW-Authenticate",
        value: 'Bearer realm="pets", error="insufficient_scope", scope="write"',
      }),
    );
  });

  it("gets 400 for every request with Postman's defaults (Parameter generation: Schema), as docs/api.md says", async () => {
    expect(documentSection()).toContain("**Parameter generation: Schema**");
    const collection = await postmanCollection(document, {});

    const run = await runOnce(collection);

    expect(run.map(({ operation, got, body }) => ({ operation, got, code: (body as { code: string }).code }))).toEqual([
      { operation: "listPets", got: 400, code: "invalid_request" },
      { operation: "createPet", got: 400, code: "invalid_request" },
      { operation: "getPet", got: 400, code: "invalid_request" },
    ]);
    // Type placeholders, not values: the list's cursor, the new pet's categoryId, the petId.
    expect(run[0]?.query).toContain(`cursor=${encodeURIComponent("<string>")}`);
    expect(run.map(({ body }) => (body as { message: string }).message)).toEqual([
      expect.stringMatching(/^cursor: /),
      expect.stringMatching(/categoryId/),
      expect.stringMatching(/^petId: /),
    ]);
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
