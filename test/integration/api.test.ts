/** Every rule of the contract, black-box over HTTP against the local server on dynalite. */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { MAX_BODY_BYTES, type Pet } from "../../lib/contract/schemas";
import { LOCAL_BODY_READ_LIMIT_BYTES, type LocalApi } from "../../local/server";
import { fetchJson, issueTestKey, startTestApi, type TestResponse } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";
import { outsideUrls } from "../support/outsideUrls";

let api: LocalApi;
let key: string;
const auth = () => ({ Authorization: `Bearer ${key}` });
const get = (path: string, headers: Record<string, string> = auth()) => fetchJson(`${api.baseUrl}${path}`, { headers });
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetchJson(`${api.baseUrl}/pets`, {
    method: "POST",
    headers: { ...auth(), "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

function expectError(response: TestResponse, status: number, code: string, messagePart?: string) {
  expect(response.status).toBe(status);
  expect(response.json).toEqual({ code, message: expect.any(String), status });
  if (messagePart) expect((response.json as { message: string }).message).toContain(messagePart);
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(response.headers["x-request-id"]).toBeTruthy();
}

/** Follows rel="next" links from `path`, returning every page. */
async function walk(path: string): Promise<Pet[][]> {
  const pages: Pet[][] = [];
  let next: string | undefined = path;
  while (next) {
    const response = await get(next);
    expect(response.status).toBe(200);
    pages.push(response.json as Pet[]);
    const link = response.headers.link;
    next = link ? /^<\/v1([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
    if (link) expect(next).toBeDefined();
  }
  return pages;
}

beforeAll(async () => {
  api = await startTestApi();
  key = (await issueTestKey()).key;
});
afterAll(() => api.close());

describe("authentication", () => {
  it("answers 401 with invalid_token for a well-formed key that was never issued", async () => {
    const response = await get("/pets", { Authorization: `Bearer ${generateApiKey("local")}` });

    expectError(response, 401, "unauthorized");
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
  });

  it("answers 401 for a revoked key", async () => {
    const { key: revoked, keyId } = await issueTestKey("to revoke");
    await new DynamoApiKeyStore(documentClient(), tableName()).revoke(keyId, new Date());

    expectError(await get("/pets", { Authorization: `Bearer ${revoked}` }), 401, "unauthorized");
  });

  it("answers 401 for a key of another environment, naming both environments and not the key", async () => {
    const other = generateApiKey("prod");

    const response = await get("/pets", { Authorization: `Bearer ${other}` });

    expectError(response, 401, "unauthorized");
    expect((response.json as { message: string }).message).toBe(
      "This key is for the production environment; this is the local API. Use a key issued for local.",
    );
    expect(JSON.stringify(response)).not.toContain(other.slice("petstore_prod_".length, -20));
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
  });

  it("answers 401 before looking at a malformed request or a missing pet", async () => {
    expectError(await get("/pets?limit=abc", {}), 401, "unauthorized");
    expectError(await get("/pets/999999", {}), 401, "unauthorized");
    expectError(await post("{bad json", { Authorization: "" }), 401, "unauthorized");
  });

  it("names the slip when a key arrives with a newline as text, in quotes or without 'Bearer '", async () => {
    const cases: [string, string][] = [
      [`Bearer ${key}%0A`, "The API key is not valid: it ends with a newline;"],
      [`Bearer "${key}"`, "The API key is not valid: it is in quotes;"],
      [key, "The Authorization header has the key without 'Bearer ' before it"],
    ];
    for (const [authorization, message] of cases) {
      const response = await get("/pets", { Authorization: authorization });

      expectError(response, 401, "unauthorized", message);
      expect(JSON.stringify(response.json)).not.toContain(key.slice(-20));
    }
  });

  it("keeps only the key's hash in the table", async () => {
    const { key: fresh } = await issueTestKey("hash check");

    const stored = await new DynamoApiKeyStore(documentClient(), tableName()).list();

    expect(JSON.stringify(stored)).not.toContain(fresh);
    expect(stored.map((record) => record.keyHash)).toContain(hashApiKey(fresh));
  });
});

describe("POST /pets", () => {
  it("creates a pet: 201, the Pet with its id, and Location", async () => {
    const response = await post({ name: "Rex", categoryId: 2, status: "pending" });

    expect(response.status).toBe(201);
    const pet = response.json as Pet;
    expect(pet).toEqual({ id: expect.any(Number), name: "Rex", categoryId: 2, status: "pending" });
    expect(response.headers.location).toBe(`/v1/pets/${pet.id}`);
    expect((await get(`/pets/${pet.id}`)).json).toEqual(pet);
  });

  it("creates a pet as available when no status is sent", async () => {
    const response = await post({ name: "Defaulted", categoryId: 1 });

    expect((response.json as Pet).status).toBe("available");
  });

  it("round-trips names exactly, emoji, NUL and edge lengths included", async () => {
    for (const name of ["🐕‍🦺 Ünïcødé", "a\u0000b", "x", "y".repeat(100), "  padded  ", "🐶".repeat(100)]) {
      const created = await post({ name, categoryId: Number.MAX_SAFE_INTEGER });
      expect(created.status, JSON.stringify(name)).toBe(201);
      const fetched = await get(`/pets/${(created.json as Pet).id}`);
      expect((fetched.json as Pet).name).toBe(name);
      expect((fetched.json as Pet).categoryId).toBe(Number.MAX_SAFE_INTEGER);
    }
  });

  it.each([
    ['{"categoryId":1}', "name"],
    ['{"name":"Rex"}', "categoryId"],
    ['{"name":"","categoryId":1}', "name"],
    ['{"name":"   ","categoryId":1}', "name"],
    [`{"name":"${"z".repeat(101)}","categoryId":1}`, "name"],
    ['{"name":"Rex","categoryId":"1"}', "categoryId"],
    ['{"name":"Rex","categoryId":1.5}', "categoryId"],
    ['{"name":"Rex","categoryId":-1}', "categoryId"],
    ['{"name":"Rex","categoryId":0}', "categoryId"],
    ['{"name":"Rex","categoryId":9007199254740992}', "categoryId"],
    ['{"name":"Rex","categoryId":1e309}', "categoryId"],
    ['{"name":"Rex","categoryId":1,"status":"lost"}', "status"],
    ['{"name":"Rex","categoryId":1,"status":null}', "status"],
    ['{"name":"Rex","categoryId":1,"id":7}', "id"],
    ['{"name":"Rex","categoryId":1,"tags":[]}', "tags"],
    ["[]", "body"],
    ["null", "body"],
    ['"Rex"', "body"],
    ["{", "body"],
    ["", "body"],
  ])("answers 400 naming the field for %s, and stores nothing", async (body, field) => {
    const before = (await walk("/pets?limit=100")).flat().length;

    const response = await post(body);

    expectError(response, 400, "invalid_request", `${field}:`);
    expect((await walk("/pets?limit=100")).flat().length).toBe(before);
  });

  it("answers 415 for a body that is not declared as JSON", async () => {
    expectError(
      await post({ name: "Rex", categoryId: 1 }, { "Content-Type": "text/plain" }),
      415,
      "unsupported_media_type",
    );
  });

  it("answers 415 saying the charset must be UTF-8 for JSON declared in another charset", async () => {
    expectError(
      await post({ name: "Rex", categoryId: 1 }, { "Content-Type": "application/json; charset=iso-8859-1" }),
      415,
      "unsupported_media_type",
      "The charset must be UTF-8",
    );
  });

  it("answers 415 to a body whose bytes are not UTF-8, and stores nothing", async () => {
    const before = (await walk("/pets?limit=100")).flat();
    const bytes = Buffer.concat([Buffer.from('{"name":"R'), Buffer.from([0xff]), Buffer.from('x","categoryId":1}')]);

    const response = await fetchJson(`${api.baseUrl}/pets`, {
      method: "POST",
      headers: { ...auth(), "Content-Type": "application/json" },
      body: new Uint8Array(bytes),
    });

    expectError(response, 415, "unsupported_media_type", "not valid UTF-8");
    const after = (await walk("/pets?limit=100")).flat();
    expect(after).toEqual(before);
    expect(after.some((pet) => pet.name.includes("\ufffd"))).toBe(false);
  });

  it("stores U+FFFD sent as UTF-8, as any other character", async () => {
    const response = await post({ name: "R\ufffdx", categoryId: 1 });

    expect(response.status).toBe(201);
    expect((response.json as Pet).name).toBe("R\ufffdx");
  });

  it("answers 413 for a body over 16 KiB", async () => {
    const body = JSON.stringify({ name: "Rex", categoryId: 1, note: "n".repeat(17 * 1024) });

    expectError(await post(body), 413, "payload_too_large");
  });
});

describe("GET /pets", () => {
  it("answers a JSON array in ascending id order with at most 20 pets by default", async () => {
    for (let i = 0; i < 25; i++) await post({ name: `bulk ${i}`, categoryId: 5 });

    const response = await get("/pets");

    const pets = response.json as Pet[];
    expect(response.status).toBe(200);
    expect(pets).toHaveLength(20);
    expect(pets.map((pet) => pet.id)).toEqual([...pets.map((pet) => pet.id)].sort((a, b) => a - b));
    expect(response.headers.link).toMatch(/^<\/v1\/pets\?limit=20&cursor=[^>]+>; rel="next"$/);
  });

  it("honours limit from 1 to 100", async () => {
    expect(((await get("/pets?limit=1")).json as Pet[]).length).toBe(1);
    expect(((await get("/pets?limit=100")).json as Pet[]).length).toBeGreaterThan(20);
  });

  it.each([
    "limit=0",
    "limit=101",
    "limit=abc",
    "limit=1.5",
    "limit=",
    "limit=-1",
    "limit=1&limit=2",
    "status=lost",
    "status=",
    "status=Sold",
  ])("answers 400 naming the parameter for ?%s", async (query) => {
    const name = query.split("=")[0] as string;

    expectError(await get(`/pets?${query}`), 400, "invalid_request", `${name}:`);
  });

  it.each([
    ["05", "limit: must be written without leading zeros, e.g. 5"],
    ["007", "limit: must be written without leading zeros, e.g. 7"],
    ["00", "limit: must be an integer from 1 to 100, written without leading zeros"],
  ])("refuses limit=%s, saying leading zeros are the reason", async (limit, message) => {
    const response = await get(`/pets?limit=${limit}`);

    expectError(response, 400, "invalid_request");
    expect((response.json as { message: string }).message).toBe(message);
  });

  it("ignores unknown query parameters", async () => {
    const response = await get("/pets?limit=2&colour=brown");

    expect(response.status).toBe(200);
    expect(response.json).toHaveLength(2);
  });

  it("visits every pet exactly once by following Link, with full pages until the last", async () => {
    const all = (await walk("/pets?limit=100")).flat();

    for (const limit of [1, 3, 7, 100]) {
      const pages = await walk(`/pets?limit=${limit}`);
      const ids = pages.flat().map((pet) => pet.id);
      expect(ids).toEqual(all.map((pet) => pet.id));
      for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
      expect(pages.at(-1)?.length).toBe(all.length - limit * (pages.length - 1));
    }
  });

  it("filters by status, and the filter's pages carry the filter", async () => {
    const sold: number[] = [];
    for (let i = 0; i < 5; i++)
      sold.push(((await post({ name: `sold ${i}`, categoryId: 9, status: "sold" })).json as Pet).id);

    const first = await get("/pets?status=sold&limit=2");
    const pages = await walk("/pets?status=sold&limit=2");

    expect(first.headers.link).toMatch(/^<\/v1\/pets\?limit=2&status=sold&cursor=[^>]+>; rel="next"$/);
    expect(pages.flat().every((pet) => pet.status === "sold")).toBe(true);
    expect(pages.flat().map((pet) => pet.id)).toEqual(sold);
  });

  it("has no next link on the last page, even when it is exactly full", async () => {
    const total = (await walk("/pets?limit=100")).flat().length;

    const response = await get(`/pets?limit=${Math.min(total, 100)}`);

    expect(total).toBeLessThanOrEqual(100);
    expect(response.headers.link).toBeUndefined();
  });

  it("answers 400 for a cursor used with another status filter, or tampered with", async () => {
    const link = (await get("/pets?status=sold&limit=1")).headers.link ?? "";
    const cursor = new URLSearchParams(/\?([^>]+)>/.exec(link)?.[1]).get("cursor") ?? "";

    expectError(await get(`/pets?limit=1&cursor=${cursor}`), 400, "invalid_request", "cursor:");
    expectError(await get(`/pets?status=pending&limit=1&cursor=${cursor}`), 400, "invalid_request", "cursor:");
    expectError(
      await get(`/pets?status=sold&limit=1&cursor=${cursor.replace(/.$/, (c) => (c === "A" ? "B" : "A"))}`),
      400,
      "invalid_request",
      "cursor:",
    );
    expectError(await get("/pets?cursor=garbage"), 400, "invalid_request", "cursor:");
  });

  it("lets a client change the page size while following a cursor", async () => {
    const link = (await get("/pets?limit=2")).headers.link ?? "";
    const cursor = new URLSearchParams(/\?([^>]+)>/.exec(link)?.[1]).get("cursor") ?? "";

    const response = await get(`/pets?limit=3&cursor=${cursor}`);

    expect(response.json).toHaveLength(3);
  });
});

describe("GET /pets/{petId}", () => {
  it("answers the pet with deprecation headers", async () => {
    const pet = (await post({ name: "Old route", categoryId: 1 })).json as Pet;

    const response = await get(`/pets/${pet.id}`);

    expect(response.status).toBe(200);
    expect(response.json).toEqual(pet);
    expect(response.headers.deprecation).toMatch(/^@\d+$/);
    expect(response.headers.sunset).toBe("Thu, 05 Dec 2030 00:00:00 GMT");
    expect(response.headers.link).toBe('</v1/pets>; rel="successor-version"');
  });

  it("answers 404 not_found for an id no pet has", async () => {
    const response = await get("/pets/9007199254740991");

    expectError(response, 404, "not_found");
    expect(response.headers.sunset).toBeDefined();
  });

  it("refuses an id written with leading zeros, saying so", async () => {
    const response = await get("/pets/01");

    expectError(response, 400, "invalid_request");
    expect((response.json as { message: string }).message).toBe("petId: must be written without leading zeros, e.g. 1");
  });

  it.each(["0", "-1", "abc", "1.5", "9007199254740992", "01", "1e3", "%20"])(
    "answers 400 for the id %s",
    async (petId) => {
      expectError(await get(`/pets/${petId}`), 400, "invalid_request", "petId:");
    },
  );
});

describe("what the gateway answers itself", () => {
  it.each(["/v1/owners", "/v1/pets/1/toys", "/v2/pets", "/", "/v1"])(
    "answers 404 in the Error shape for %s",
    async (path) => {
      const origin = api.baseUrl.replace(/\/v1$/, "");

      expectError(await fetchJson(`${origin}${path}`, { headers: auth() }), 404, "not_found");
      expectError(await fetchJson(`${origin}${path}`), 404, "not_found");
    },
  );

  it.each([
    ["DELETE", "/pets", "GET, POST"],
    ["PUT", "/pets/1", "GET"],
    ["PATCH", "/pets", "GET, POST"],
  ])("answers 405 with Allow for %s %s", async (method, path, allow) => {
    const response = await fetchJson(`${api.baseUrl}${path}`, { method, headers: auth() });

    expectError(response, 405, "method_not_allowed");
    expect(response.headers.allow).toBe(allow);
  });

  it("answers 413 to a body far over any limit without reading it all", async () => {
    const response = await post("x".repeat(2 * 1024 * 1024));

    expectError(response, 413, "payload_too_large");
  });

  it("answers a 20 MB body promptly with the API's own 413, naming its 16 KiB limit, without reading it all", async () => {
    const apiAnswer = await post("x".repeat(MAX_BODY_BYTES + 1));
    const { port } = new URL(api.baseUrl);
    const socket = connect(Number(port), "127.0.0.1");
    const startedAt = performance.now();
    // 20 MB declared, but only a byte past where the server must stop reading is ever sent: an
    // answer can only come if it stopped there.
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${20 * 1024 * 1024}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(LOCAL_BODY_READ_LIMIT_BYTES + 1, 0x20));
    let reply = "";
    for await (const chunk of socket) reply += chunk;

    const [head = "", body = ""] = reply.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 413 /);
    expect(JSON.parse(body)).toEqual(apiAnswer.json);
    expect(JSON.parse(body).message).toContain(`${MAX_BODY_BYTES} bytes`);
    expect(MAX_BODY_BYTES).toBe(16 * 1024);
    expect(performance.now() - startedAt).toBeLessThan(5_000);
  });

  it.each([
    ["a malformed request line", "GARBAGE\r\n\r\n"],
    ["oversized headers", `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`],
  ])("answers 400 in the Error shape to %s", async (_, raw) => {
    const { port } = new URL(api.baseUrl);
    const socket = connect(Number(port), "127.0.0.1");
    socket.write(raw);
    let reply = "";
    for await (const chunk of socket) reply += chunk;

    const [head = "", body = ""] = reply.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    expect(JSON.parse(body)).toEqual({ code: "invalid_request", message: expect.any(String), status: 400 });
  });

  it("says a header ended in a bare newline, as when a key is pasted with its line end", async () => {
    const { port } = new URL(api.baseUrl);
    const socket = connect(Number(port), "127.0.0.1");
    socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\n\r\n\r\n`);
    let reply = "";
    for await (const chunk of socket) reply += chunk;

    const [head = "", body = ""] = reply.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body)).toEqual({
      code: "invalid_request",
      message:
        "The request is malformed: a header value ends in a bare newline (pasted with the value?); send each header on one line.",
      status: 400,
    });
    expect(reply).not.toContain(key);
  });

  it("sets the common headers on every answer", async () => {
    for (const response of [await get("/pets"), await get("/nope"), await get("/pets", {})]) {
      expect(response.headers["cache-control"]).toBe("no-store");
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(response.headers["x-request-id"]).toBeTruthy();
    }
  });
});

describe("the reference served beside the API", () => {
  const origin = () => api.baseUrl.replace(/\/v1$/, "");

  it("serves the OpenAPI document as built at /openapi.json, without a key, listing this server's own URL", async () => {
    const response = await fetch(`${origin()}/openapi.json`);
    const document = (await response.json()) as ReturnType<typeof buildOpenApiDocument>;

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(document).toEqual(JSON.parse(JSON.stringify(buildOpenApiDocument({ localBaseUrl: api.baseUrl }))));
    expect(document.servers.map((server) => server.url)).toContain(api.baseUrl);
    expect(api.baseUrl).not.toContain(":3000/");
  });

  it("serves at /docs a page whose scripts and document all come from this server", async () => {
    const page = await fetch(`${origin()}/docs`);
    const html = await page.text();
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((match) => match[1] as string);
    const loader = await fetch(`${origin()}${scripts[0]}`);
    const loaderText = await loader.text();
    const imported = [...loaderText.matchAll(/from "([^"]+)"/g)].map((match) => match[1] as string);
    const redoc = await fetch(`${origin()}${imported[0]}`);

    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(scripts).toHaveLength(1);
    expect([...scripts, ...imported].every((src) => src.startsWith("/docs/"))).toBe(true);
    expect(loaderText).toContain('init("/openapi.json"');
    expect(redoc.status).toBe(200);
    expect(redoc.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await redoc.text()).toMatch(/export\s*\{[^}]*\binit\b/);
  });

  it("serves a reference that loads nothing from elsewhere, Redoc's logo included", async () => {
    const html = await (await fetch(`${origin()}/docs`)).text();
    const loaderPath = /<script[^>]*src="([^"]+)"/.exec(html)?.[1] ?? "";
    const loader = await (await fetch(`${origin()}${loaderPath}`)).text();
    const redocPath = /from "([^"]+)"/.exec(loader)?.[1] ?? "";
    const redoc = await (await fetch(`${origin()}${redocPath}`)).text();

    expect(redoc.length).toBeGreaterThan(100_000);
    expect(redoc).toContain("redocly logo");
    expect(outsideUrls([html, loader, redoc].join("\n"))).toEqual([]);
  });

  it("answers / and /v1 with a 404 that points to the pets and to the reference", async () => {
    for (const path of ["/", "/v1", "/v1/"]) {
      const response = await fetchJson(`${origin()}${path}`);

      expectError(response, 404, "not_found");
      expect((response.json as { message: string }).message).toBe(
        `No route matches ${path}. The API is at /v1/pets (with 'Authorization: Bearer <key>'); its reference is at /docs.`,
      );
    }
    expectError(await fetchJson(`${origin()}/`, { method: "POST" }), 404, "not_found", "/v1/pets");
    expect((await get("/nope")).json).toMatchObject({ message: "No route matches /v1/nope." });
  });

  it("keeps the API's answers for other methods and for the same names under /v1", async () => {
    expectError(await fetchJson(`${origin()}/openapi.json`, { method: "POST" }), 404, "not_found");
    expectError(await get("/openapi.json"), 404, "not_found");
    expectError(await get("/docs"), 404, "not_found");
  });
});
