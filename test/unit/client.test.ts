/**
 * The client package's own logic with a scripted `fetch` (no server): which answers are retried,
 * how long it waits, what it sends on each attempt, paging, errors, what a call answers besides the
 * body, and the deprecation notice.
 * test/integration/client.test.ts runs it against the local server and through a faulty proxy.
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import {
  createPetStoreClient,
  type DeprecationNotice,
  PetStoreAbortError,
  PetStoreApiError,
  type PetStoreClientOptions,
  PetStoreInsufficientScopeError,
  PetStoreNetworkError,
} from "../../client/src/index";
import { linkTarget } from "../../client/src/links";
import { backoffDelayMs, DEFAULT_RETRY, parseRetryAfter } from "../../client/src/retry";
import { CLIENT_VERSION, userAgent } from "../../client/src/version";
import { generateApiKey } from "../../lib/auth/apiKeys";

const BASE_URL = "https://api.example.test/v1";
// Drawn per run, like a real key, so no key-shaped secret is written into the repository.
const API_KEY = generateApiKey("local");
const rex = { id: 7, name: "Rex", categoryId: 1, status: "available" } as const;

/** A server that never answers: the request ends only when its signal aborts. */
const HANG = Symbol("hang");
type Reply = Response | Error | typeof HANG;

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", "X-Request-Id": `req-${status}`, ...headers },
  });
}

function apiError(status: number, code: string, headers: Record<string, string> = {}): Response {
  return json(status, { code, message: `${code} happened`, status }, headers);
}

/** What a proxy in front of the API answers: an HTML page, no X-Request-Id. */
function htmlPage(status: number): Response {
  return new Response("<html><body>Bad gateway</body></html>", {
    status,
    headers: { "Content-Type": "text/html; charset=utf-8" },
  });
}

/** What `fetch` throws when the connection is reset: a TypeError whose cause is the socket error. */
function connectionReset(): TypeError {
  return new TypeError("fetch failed", { cause: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }) });
}

interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly body: string;
}

/** A fetch that answers each request with the next scripted reply (throwing it if it is an Error). */
function scriptedFetch(replies: Reply[]) {
  const sent: Sent[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    sent.push({ method: request.method, url: request.url, headers: request.headers, body: await request.text() });
    const reply = replies.shift();
    if (reply === undefined) throw new Error(`unexpected request ${request.method} ${request.url}`);
    if (reply instanceof Error) throw reply;
    if (reply === HANG)
      return new Promise((_resolve, reject) =>
        request.signal.addEventListener("abort", () => reject(request.signal.reason), { once: true }),
      );
    return reply;
  };
  return { fetch, sent };
}

function clientWith(replies: Reply[], options: Partial<PetStoreClientOptions> = {}) {
  const { fetch, sent } = scriptedFetch(replies);
  const client = createPetStoreClient({
    baseUrl: BASE_URL,
    apiKey: API_KEY,
    fetch,
    // No waiting unless a test asks for it: backoff is tested on its own.
    retry: { baseDelayMs: 0 },
    onDeprecation: () => {},
    ...options,
  });
  return { client, sent };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe("pets.create", () => {
  it("sends the pet with the key as a bearer token and a UUID Idempotency-Key, and answers the created pet", async () => {
    const { client, sent } = clientWith([json(201, rex, { Location: "/v1/pets/7" })]);

    const pet = await client.pets.create({ name: "Rex", categoryId: 1 });

    expect(pet).toEqual(rex);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.method).toBe("POST");
    expect(sent[0]?.url).toBe(`${BASE_URL}/pets`);
    expect(JSON.parse(sent[0]?.body ?? "")).toEqual({ name: "Rex", categoryId: 1 });
    expect(sent[0]?.headers.get("Authorization")).toBe(`Bearer ${API_KEY}`);
    expect(sent[0]?.headers.get("Content-Type")).toBe("application/json");
    expect(sent[0]?.headers.get("Idempotency-Key")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it("reuses the same Idempotency-Key and body on every retry after a 503, a 429 and a reset connection", async () => {
    const { client, sent } = clientWith(
      [
        apiError(503, "service_unavailable", { "Retry-After": "0" }),
        apiError(429, "too_many_requests", { "Retry-After": "0" }),
        connectionReset(),
        json(201, rex),
      ],
      { retry: { maxAttempts: 4, baseDelayMs: 0 } },
    );

    const pet = await client.pets.create({ name: "Rex", categoryId: 1 });

    expect(pet).toEqual(rex);
    expect(sent).toHaveLength(4);
    expect(new Set(sent.map((request) => request.headers.get("Idempotency-Key"))).size).toBe(1);
    expect(new Set(sent.map((request) => request.body)).size).toBe(1);
  });

  it("sends the caller's Idempotency-Key when given, and a new one for each create otherwise", async () => {
    const { client, sent } = clientWith([json(201, rex), json(201, rex), json(201, rex)]);

    await client.pets.create({ name: "Rex", categoryId: 1 }, { idempotencyKey: "order-42-pet-1" });
    await client.pets.create({ name: "Rex", categoryId: 1 });
    await client.pets.create({ name: "Rex", categoryId: 1 });

    const keys = sent.map((request) => request.headers.get("Idempotency-Key"));
    expect(keys[0]).toBe("order-42-pet-1");
    expect(new Set(keys).size).toBe(3);
  });

  it("sends User-Agent petstore-client/<version> (node/<version>) on every request", async () => {
    const { client, sent } = clientWith([json(201, rex), json(200, [rex])]);

    await client.pets.create({ name: "Rex", categoryId: 1 });
    await client.pets.list();

    expect(sent.map((request) => request.headers.get("User-Agent"))).toEqual([
      `petstore-client/${CLIENT_VERSION} (node/${process.versions.node})`,
      `petstore-client/${CLIENT_VERSION} (node/${process.versions.node})`,
    ]);
  });

  it("retries a 409 idempotency_key_in_progress (its own earlier attempt still running) and gets the replay", async () => {
    const { client, sent } = clientWith([
      apiError(409, "idempotency_key_in_progress", { "Retry-After": "0" }),
      json(201, rex, { "Idempotent-Replayed": "true" }),
    ]);

    expect(await client.pets.create({ name: "Rex", categoryId: 1 })).toEqual(rex);
    expect(sent).toHaveLength(2);
  });
});

describe("what a call answers besides the body", () => {
  it("createWithResponse() answers the pet, X-Request-Id, Location, the key and the attempts", async () => {
    const { client } = clientWith([
      apiError(503, "service_unavailable", { "Retry-After": "0" }),
      json(201, rex, { Location: "/v1/pets/7", "X-Request-Id": "req-created" }),
    ]);

    const created = await client.pets.createWithResponse({ name: "Rex", categoryId: 1 }, { idempotencyKey: "order-3" });

    expect(created).toEqual({
      pet: rex,
      response: {
        status: 201,
        requestId: "req-created",
        location: "/v1/pets/7",
        replayed: false,
        idempotencyKey: "order-3",
        attempts: 2,
      },
    });
  });

  it("createWithResponse() says replayed when the API sends Idempotent-Replayed: true", async () => {
    const { client, sent } = clientWith([json(201, rex, { Location: "/v1/pets/7", "Idempotent-Replayed": "true" })]);

    const { response } = await client.pets.createWithResponse({ name: "Rex", categoryId: 1 });

    expect(response.replayed).toBe(true);
    expect(response.idempotencyKey).toBe(sent[0]?.headers.get("Idempotency-Key"));
  });

  it("list() answers each page's status, X-Request-Id and attempts", async () => {
    const { client } = clientWith([connectionReset(), json(200, [rex], { "X-Request-Id": "req-page" })]);

    const page = await client.pets.list();

    expect(page.response).toEqual({ status: 200, requestId: "req-page", attempts: 2 });
  });
});

describe("retries", () => {
  it.each([
    [400, "invalid_request"],
    [401, "unauthorized"],
    [403, "forbidden"],
    [413, "payload_too_large"],
    [415, "unsupported_media_type"],
    [422, "idempotency_key_reused"],
    [500, "internal_error"],
  ])("never retries a %i: one request, and its error as a PetStoreApiError", async (status, code) => {
    const { client, sent } = clientWith([apiError(status, code)]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(sent).toHaveLength(1);
    expect(error).toBeInstanceOf(PetStoreApiError);
    expect(error).toMatchObject({ code, status, message: `${code} happened`, requestId: `req-${status}`, attempts: 1 });
  });

  it("never retries a 404 of a GET either", async () => {
    const { client, sent } = clientWith([apiError(404, "not_found")]);

    const error = await rejection(client.pets.get(999));

    expect(sent).toHaveLength(1);
    expect(error).toMatchObject({ code: "not_found", status: 404 });
  });

  it("stops after maxAttempts and throws the last answer's error, with its Retry-After", async () => {
    const unavailable = () => apiError(503, "service_unavailable", { "Retry-After": "0" });
    const { client, sent } = clientWith([unavailable(), unavailable(), unavailable()]);

    const error = await rejection(client.pets.list());

    expect(sent).toHaveLength(DEFAULT_RETRY.maxAttempts);
    expect(error).toBeInstanceOf(PetStoreApiError);
    expect(error).toMatchObject({ code: "service_unavailable", status: 503, retryAfterMs: 0, attempts: 3 });
  });

  it("throws a PetStoreNetworkError carrying fetch's error when no attempt got an answer", async () => {
    const { client, sent } = clientWith([connectionReset(), connectionReset()], {
      retry: { maxAttempts: 2, baseDelayMs: 0 },
    });

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(sent).toHaveLength(2);
    expect(error).toBeInstanceOf(PetStoreNetworkError);
    expect(error).toMatchObject({ attempts: 2, cause: { message: "fetch failed" } });
    expect(String(error)).not.toContain(API_KEY);
  });

  it("does not retry at all with maxAttempts 1", async () => {
    const { client, sent } = clientWith([apiError(503, "service_unavailable", { "Retry-After": "0" })], {
      retry: { maxAttempts: 1 },
    });

    await expect(client.pets.list()).rejects.toMatchObject({ status: 503, attempts: 1 });
    expect(sent).toHaveLength(1);
  });

  it("does not retry an error that is not a network error (a bug in a custom fetch)", async () => {
    const { client, sent } = clientWith([new RangeError("boom")]);

    await expect(client.pets.list()).rejects.toThrow(RangeError);
    expect(sent).toHaveLength(1);
  });

  it("gives up at once when Retry-After asks for longer than maxDelayMs, and says how long", async () => {
    const { client, sent } = clientWith([apiError(429, "too_many_requests", { "Retry-After": "60" })], {
      retry: { maxDelayMs: 5_000 },
    });

    const error = await rejection(client.pets.list());

    expect(sent).toHaveLength(1);
    expect(error).toMatchObject({ code: "too_many_requests", retryAfterMs: 60_000 });
  });

  it("answers a non-2xx without the API's error body (a proxy's HTML page) as unexpected_response", async () => {
    const { client, sent } = clientWith([htmlPage(403)]);

    await expect(client.pets.list()).rejects.toMatchObject({
      name: "PetStoreApiError",
      code: "unexpected_response",
      status: 403,
      requestId: undefined,
    });
    expect(sent).toHaveLength(1);
  });

  it.each([502, 504])("retries a %i from a proxy for a GET", async (status) => {
    const { client, sent } = clientWith([htmlPage(status), json(200, [rex])]);

    const page = await client.pets.list();

    expect(page.items).toEqual([rex]);
    expect(sent).toHaveLength(2);
  });

  it.each([502, 504])("retries a %i for a create, with the same Idempotency-Key and body", async (status) => {
    const { client, sent } = clientWith([htmlPage(status), json(201, rex)]);

    const pet = await client.pets.create({ name: "Rex", categoryId: 1 });

    expect(pet).toEqual(rex);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.headers.get("Idempotency-Key")).toBe(sent[0]?.headers.get("Idempotency-Key"));
    expect(sent[1]?.body).toBe(sent[0]?.body);
  });

  it("throws the last 502 as unexpected_response once the attempts are used up", async () => {
    const { client, sent } = clientWith([htmlPage(502), htmlPage(502), htmlPage(502)]);

    const error = await rejection(client.pets.list());

    expect(sent).toHaveLength(DEFAULT_RETRY.maxAttempts);
    expect(error).toMatchObject({ code: "unexpected_response", status: 502, attempts: DEFAULT_RETRY.maxAttempts });
  });
});

describe("a key without the operation's scope, or expired", () => {
  const insufficientScope = () =>
    apiError(403, "insufficient_scope", {
      "WWW-Authenticate": 'Bearer realm="pets", error="insufficient_scope", scope="write"',
    });

  it("rejects a create with a PetStoreInsufficientScopeError naming the scope WWW-Authenticate asks for, never retried", async () => {
    const { client, sent } = clientWith([insufficientScope(), insufficientScope()]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(sent).toHaveLength(1);
    expect(error).toBeInstanceOf(PetStoreInsufficientScopeError);
    // Still a PetStoreApiError, so code that handles those by `code` keeps working.
    expect(error).toBeInstanceOf(PetStoreApiError);
    expect(error).toMatchObject({
      name: "PetStoreInsufficientScopeError",
      code: "insufficient_scope",
      status: 403,
      requiredScope: "write",
      requestId: "req-403",
      attempts: 1,
      idempotencyKey: expect.any(String),
    });
  });

  it("leaves requiredScope undefined when the answer has no challenge", async () => {
    const { client } = clientWith([apiError(403, "insufficient_scope")]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(error).toBeInstanceOf(PetStoreInsufficientScopeError);
    expect((error as PetStoreInsufficientScopeError).requiredScope).toBeUndefined();
  });

  it("keeps the edge firewall's 403 forbidden a plain PetStoreApiError", async () => {
    const { client } = clientWith([apiError(403, "forbidden")]);

    const error = await rejection(client.pets.list());

    expect(error).toBeInstanceOf(PetStoreApiError);
    expect(error).not.toBeInstanceOf(PetStoreInsufficientScopeError);
  });

  it("answers an expired key's 401 as the PetStoreApiError unauthorized it always was, not retried", async () => {
    const expired = () =>
      json(
        401,
        {
          code: "unauthorized",
          message:
            "The API key expired at 2026-12-01T00:00:00.000Z; use the key that replaced it, or ask for a new one.",
          status: 401,
        },
        { "WWW-Authenticate": 'Bearer realm="pets", error="invalid_token"' },
      );
    const { client, sent } = clientWith([expired(), expired()]);

    const error = await rejection(client.pets.list());

    expect(sent).toHaveLength(1);
    expect(error).not.toBeInstanceOf(PetStoreInsufficientScopeError);
    expect(error).toMatchObject({ name: "PetStoreApiError", code: "unauthorized", status: 401 });
  });
});

describe("a 2xx answer that is not JSON", () => {
  it("rejects with unexpected_response saying an HTML page arrived, with the status and X-Request-Id, and is not retried", async () => {
    const page = htmlPage(200);
    page.headers.set("X-Request-Id", "req-proxy");
    const { client, sent } = clientWith([page, json(200, [])]);

    const error = await rejection(client.pets.list());

    expect(error).toBeInstanceOf(PetStoreApiError);
    expect(error).toMatchObject({
      code: "unexpected_response",
      status: 200,
      requestId: "req-proxy",
      message: "HTTP 200 with a text/html body instead of JSON",
      attempts: 1,
    });
    expect(sent).toHaveLength(1);
  });

  it.each([
    ["without Content-Length", new Response("", { status: 201 })],
    ["with Content-Length: 0", new Response(null, { status: 201, headers: { "Content-Length": "0" } })],
  ])("rejects an empty body (%s) with unexpected_response carrying the create's key", async (_case, empty) => {
    const { client, sent } = clientWith([empty]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(error).toMatchObject({
      name: "PetStoreApiError",
      code: "unexpected_response",
      status: 201,
      message: "HTTP 201 with an empty body instead of JSON",
      idempotencyKey: sent[0]?.headers.get("Idempotency-Key"),
    });
  });

  it("says when a JSON answer does not parse", async () => {
    const { client } = clientWith([
      new Response('{"id": 7,', { status: 201, headers: { "Content-Type": "application/json" } }),
    ]);

    await expect(client.pets.create({ name: "Rex", categoryId: 1 })).rejects.toMatchObject({
      code: "unexpected_response",
      message: "HTTP 201 with malformed JSON (application/json)",
    });
  });
});

describe("the idempotency key on a create's errors", () => {
  it("is on an API error, the key the client drew", async () => {
    const { client, sent } = clientWith([apiError(422, "idempotency_key_reused")]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(error).toBeInstanceOf(PetStoreApiError);
    expect((error as PetStoreApiError).idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect((error as PetStoreApiError).idempotencyKey).toBe(sent[0]?.headers.get("Idempotency-Key"));
  });

  it("is on a network error, so that a lost answer can be recovered by creating again with it", async () => {
    const { client, sent } = clientWith([connectionReset(), connectionReset(), connectionReset()]);

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }));

    expect(error).toBeInstanceOf(PetStoreNetworkError);
    expect(error).toMatchObject({ attempts: 3, idempotencyKey: sent[0]?.headers.get("Idempotency-Key") });
  });

  it("is the caller's key when given", async () => {
    const { client } = clientWith([connectionReset()], { retry: { maxAttempts: 1 } });

    const error = await rejection(client.pets.create({ name: "Rex", categoryId: 1 }, { idempotencyKey: "order-9" }));

    expect(error).toMatchObject({ name: "PetStoreNetworkError", idempotencyKey: "order-9" });
  });

  it("is absent from the errors of other operations", async () => {
    const { client } = clientWith([apiError(404, "not_found")]);

    const error = await rejection(client.pets.get(8));

    expect(error).toMatchObject({ code: "not_found", idempotencyKey: undefined });
  });
});

describe("waiting between attempts", () => {
  it("waits exactly Retry-After seconds before retrying when that is longer than the backoff", async () => {
    vi.useFakeTimers();
    const { client, sent } = clientWith([
      apiError(503, "service_unavailable", { "Retry-After": "2" }),
      json(200, [rex]),
    ]);

    const page = client.pets.list();
    await vi.advanceTimersByTimeAsync(1_999);
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toHaveLength(2);
    expect((await page).items).toEqual([rex]);
  });

  it("reads Retry-After given as an HTTP date", async () => {
    vi.useFakeTimers({ now: new Date("2030-01-01T00:00:00Z") });
    const { client, sent } = clientWith([
      apiError(503, "service_unavailable", { "Retry-After": "Tue, 01 Jan 2030 00:00:03 GMT" }),
      json(200, []),
    ]);

    const page = client.pets.list();
    await vi.advanceTimersByTimeAsync(2_999);
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await page;
    expect(sent).toHaveLength(2);
  });

  it("backs off exponentially with full jitter between network retries", async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, "random").mockReturnValue(0.5);
    const { client, sent } = clientWith([connectionReset(), connectionReset(), json(200, [])], {
      retry: { baseDelayMs: 100, maxDelayMs: 10_000 },
    });

    const page = client.pets.list();
    await vi.advanceTimersByTimeAsync(49); // first wait: 0.5 × 100 ms
    expect(sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(99); // second wait: 0.5 × 200 ms
    expect(sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await page;
    expect(sent).toHaveLength(3);
  });

  it("stops waiting as soon as the signal aborts, with a PetStoreAbortError, and sends nothing more", async () => {
    vi.useFakeTimers();
    const { client, sent } = clientWith([apiError(503, "service_unavailable", { "Retry-After": "5" }), json(201, rex)]);
    const controller = new AbortController();

    const created = rejection(client.pets.create({ name: "Rex", categoryId: 1 }, { signal: controller.signal }));
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    const error = await created;

    expect(error).toBeInstanceOf(PetStoreAbortError);
    expect(error).toMatchObject({ attempts: 1, cause: { name: "AbortError" } });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent).toHaveLength(1);
  });

  it("abandons an attempt that takes longer than attemptTimeoutMs and retries it with the same key", async () => {
    const { client, sent } = clientWith([HANG, json(201, rex)], { attemptTimeoutMs: 50 });

    expect(await client.pets.create({ name: "Rex", categoryId: 1 })).toEqual(rex);
    expect(sent).toHaveLength(2);
    expect(sent[1]?.headers.get("Idempotency-Key")).toBe(sent[0]?.headers.get("Idempotency-Key"));
  });

  it("reports attempts that all timed out as a PetStoreNetworkError caused by a TimeoutError", async () => {
    const { client } = clientWith([HANG, HANG], { attemptTimeoutMs: 20, retry: { maxAttempts: 2, baseDelayMs: 0 } });

    expect(await rejection(client.pets.list())).toMatchObject({
      name: "PetStoreNetworkError",
      attempts: 2,
      cause: { name: "TimeoutError" },
    });
  });

  it("aborts an attempt in flight when the signal aborts, without retrying it", async () => {
    const { client, sent } = clientWith([HANG, json(200, [])]);
    const controller = new AbortController();

    const listed = rejection(client.pets.list({}, { signal: controller.signal }));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    controller.abort();

    expect(await listed).toMatchObject({
      name: "PetStoreAbortError",
      attempts: 1,
      idempotencyKey: undefined,
      cause: { name: "AbortError" },
    });
    expect(sent).toHaveLength(1);
  });

  it("sends nothing when the signal has already aborted", async () => {
    const { client, sent } = clientWith([json(200, [])]);

    await expect(client.pets.list({}, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "PetStoreAbortError",
      attempts: 0,
      cause: { name: "AbortError" },
    });
    expect(sent).toHaveLength(0);
  });

  it("rejects a create aborted while its request is in flight (the pet may exist) with the key it sent", async () => {
    const { client, sent } = clientWith([HANG]);
    const controller = new AbortController();

    const created = rejection(client.pets.create({ name: "Rex", categoryId: 1 }, { signal: controller.signal }));
    await vi.waitFor(() => expect(sent).toHaveLength(1));
    controller.abort();
    const error = await created;

    expect(error).toBeInstanceOf(PetStoreAbortError);
    expect(error).toMatchObject({
      attempts: 1,
      idempotencyKey: sent[0]?.headers.get("Idempotency-Key"),
      cause: { name: "AbortError" },
    });
  });

  it("keeps a deadline's TimeoutError as the cause of the abort", async () => {
    const { client } = clientWith([HANG]);

    const error = await rejection(
      client.pets.create(
        { name: "Rex", categoryId: 1 },
        { idempotencyKey: "order-7", signal: AbortSignal.timeout(20) },
      ),
    );

    expect(error).toBeInstanceOf(PetStoreAbortError);
    expect(error).toMatchObject({ idempotencyKey: "order-7", cause: { name: "TimeoutError" } });
    expect((error as Error).message).toMatch(/^The Pet Store API call was aborted after 1 attempt \(TimeoutError: /);
  });
});

describe("backoffDelayMs", () => {
  const policy = { maxAttempts: 10, baseDelayMs: 100, maxDelayMs: 1_000 };

  it("doubles its ceiling at each retry up to maxDelayMs", () => {
    const ceilings = [1, 2, 3, 4, 5, 6].map((retry) => backoffDelayMs(retry, policy, () => 0.999_999));

    expect(ceilings).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it("spreads waits over the whole range from 0 (full jitter)", () => {
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
    expect(backoffDelayMs(3, policy, () => 0.25)).toBe(100);
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2030-01-01T00:00:00Z");

  it.each([
    ["1", 1_000],
    [" 30 ", 30_000],
    ["Tue, 01 Jan 2030 00:01:00 GMT", 60_000],
    ["Mon, 31 Dec 2029 23:00:00 GMT", 0],
  ])("reads %j as %i ms", (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([null, "", "soon", "-1", "1.5"])("ignores %j", (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe("paging", () => {
  const page = (ids: number[], next?: string) =>
    json(
      200,
      ids.map((id) => ({ ...rex, id })),
      next ? { Link: `<${next}>; rel="next"` } : {},
    );

  it("list() answers one page and the query of the next one, read from Link: rel=next", async () => {
    const { client, sent } = clientWith([page([1, 2], "/v1/pets?limit=2&status=available&cursor=abc.def")]);

    const first = await client.pets.list({ limit: 2, status: "available" });

    expect(sent[0]?.url).toBe(`${BASE_URL}/pets?limit=2&status=available`);
    expect(first.items.map((pet) => pet.id)).toEqual([1, 2]);
    expect(first.next).toEqual({ limit: 2, status: "available", cursor: "abc.def" });
  });

  it("list() answers next: null on the last page", async () => {
    const { client } = clientWith([page([3])]);

    expect((await client.pets.list()).next).toBeNull();
  });

  it("listAll() follows the links to the end, sending each link's query", async () => {
    const { client, sent } = clientWith([
      page([1, 2], "/v1/pets?limit=2&cursor=c1"),
      page([3, 4], "/v1/pets?limit=2&cursor=c2"),
      page([5]),
    ]);

    const ids: number[] = [];
    for await (const pet of client.pets.listAll({ limit: 2 })) ids.push(pet.id);

    expect(ids).toEqual([1, 2, 3, 4, 5]);
    expect(sent.map((request) => new URL(request.url).search)).toEqual([
      "?limit=2",
      "?limit=2&cursor=c1",
      "?limit=2&cursor=c2",
    ]);
  });

  it("listAll() fetches no further page when the caller stops early", async () => {
    const { client, sent } = clientWith([page([1, 2], "/v1/pets?limit=2&cursor=c1"), page([3])]);

    for await (const pet of client.pets.listAll({ limit: 2 })) {
      if (pet.id === 1) break;
    }

    expect(sent).toHaveLength(1);
  });
});

describe("linkTarget", () => {
  it("finds a relation among several links, quoted or not, in a list of relations", () => {
    const header = '</v1/pets>; rel="successor-version", </v1/pets?cursor=x>; title="more"; rel=next';

    expect(linkTarget(header, "next")).toBe("/v1/pets?cursor=x");
    expect(linkTarget(header, "successor-version")).toBe("/v1/pets");
    expect(linkTarget('</a>; rel="prev next"', "next")).toBe("/a");
    expect(linkTarget('</a>; rel="prev"', "next")).toBeUndefined();
    expect(linkTarget(null, "next")).toBeUndefined();
  });
});

describe("deprecation notice", () => {
  const deprecated = {
    Deprecation: "@1795392000",
    Sunset: "Thu, 05 Dec 2030 00:00:00 GMT",
    Link: '</v1/pets>; rel="successor-version"',
  };

  it("tells the client's onDeprecation once, however many deprecated answers follow", async () => {
    const notices: DeprecationNotice[] = [];
    const { client } = clientWith(
      [json(200, rex, deprecated), json(200, rex, deprecated), apiError(404, "not_found", deprecated)],
      { onDeprecation: (notice) => notices.push(notice) },
    );

    await client.pets.get(7);
    await client.pets.get(7);
    await rejection(client.pets.get(8));

    expect(notices).toEqual([
      {
        operation: "getPet",
        deprecation: "@1795392000",
        sunset: "Thu, 05 Dec 2030 00:00:00 GMT",
        successor: "/v1/pets",
        message:
          "The Pet Store API operation getPet is deprecated since 2026-11-23 and stops working on Thu, 05 Dec 2030 00:00:00 GMT; use /v1/pets instead.",
      },
    ]);
  });

  it("says nothing for answers without Deprecation or Sunset", async () => {
    const onDeprecation = vi.fn();
    const { client } = clientWith([json(200, rex), json(200, [])], { onDeprecation });

    await client.pets.get(7);
    await client.pets.list();

    expect(onDeprecation).not.toHaveBeenCalled();
  });

  it("emits the default DeprecationWarning once per process, however many clients get deprecated answers", async () => {
    // A fresh copy of the client's modules: what the process has warned about so far is theirs.
    vi.resetModules();
    const fresh = await import("../../client/src/index");
    const emitWarning = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const perRequestClient = () =>
      fresh.createPetStoreClient({
        baseUrl: BASE_URL,
        apiKey: API_KEY,
        fetch: scriptedFetch([json(200, rex, deprecated), json(200, rex, deprecated)]).fetch,
      });

    for (const client of [perRequestClient(), perRequestClient()]) {
      await client.pets.get(7);
      await client.pets.get(7);
    }

    expect(emitWarning).toHaveBeenCalledOnce();
  });

  it("calls a custom onDeprecation once per client", async () => {
    const onDeprecation = vi.fn();
    const clients = [
      clientWith([json(200, rex, deprecated), json(200, rex, deprecated)], { onDeprecation }).client,
      clientWith([json(200, rex, deprecated)], { onDeprecation }).client,
    ];

    for (const client of clients) await client.pets.get(7);
    await clients[0]?.pets.get(7);

    expect(onDeprecation).toHaveBeenCalledTimes(2);
  });

  it("emits a Node DeprecationWarning by default", async () => {
    const emitWarning = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const { client } = clientWith([json(200, rex, deprecated)], { onDeprecation: undefined });

    await client.pets.get(7);

    expect(emitWarning).toHaveBeenCalledOnce();
    expect(emitWarning).toHaveBeenCalledWith(expect.stringContaining("getPet is deprecated"), {
      type: "DeprecationWarning",
      code: "PETSTORE_DEPRECATED_OPERATION",
    });
  });
});

describe("userAgent", () => {
  it("names the runtime unknown where there is no process.versions.node", () => {
    expect(userAgent({})).toBe(`petstore-client/${CLIENT_VERSION} (runtime/unknown)`);
    expect(userAgent({ process: { versions: { node: "22.19.0" } } })).toBe(
      `petstore-client/${CLIENT_VERSION} (node/22.19.0)`,
    );
  });
});

describe("createPetStoreClient", () => {
  it.each([
    ["a baseUrl that is not a URL", { baseUrl: "not a url" }, "baseUrl must be an http(s) URL"],
    ["a baseUrl that is not http(s)", { baseUrl: "ftp://example.test/v1" }, "baseUrl must be an http(s) URL"],
    ["a blank apiKey", { apiKey: " " }, "apiKey must be the API key"],
    ["maxAttempts 0", { retry: { maxAttempts: 0 } }, "retry.maxAttempts must be an integer"],
    ["a negative maxDelayMs", { retry: { maxDelayMs: -1 } }, "retry.maxDelayMs must be 0 or more"],
    ["attemptTimeoutMs 0", { attemptTimeoutMs: 0 }, "attemptTimeoutMs must be more than 0"],
  ])("refuses %s with a clear message", (_case, options, message) => {
    expect(() => createPetStoreClient({ baseUrl: BASE_URL, apiKey: API_KEY, ...options })).toThrow(message);
  });
});
