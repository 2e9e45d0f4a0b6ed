import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { errorSchema } from "../../lib/contract/schemas";
import type { Deadline } from "../../lib/db/deadline";
import { REQUEST_DEADLINE_MARGIN_MS } from "../../lib/http/middleware/requestDeadline";
import { SHARED_PETS } from "../../lib/pets/collection";
import type { PetPageQuery } from "../../lib/pets/repository";
import {
  asTestResponse,
  bearer,
  invoke,
  jsonContent,
  proxyEvent,
  type TestResponse,
  testContext,
} from "../support/api";
import { fakeDependencies, singleKeyVerifier } from "../support/fakes";

const token = "the-one-valid-token";

function expectError(response: TestResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.json).toEqual({ code, message: expect.any(String), status });
  expect(Object.keys(response.json as object).sort()).toEqual([...errorSchema.required].sort());
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
}

function expectCommonHeaders(response: TestResponse) {
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(response.headers["cache-control"]).toBe("no-store");
  expect(response.headers["x-content-type-options"]).toBe("nosniff");
  expect(response.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
}

describe("bearer authentication", () => {
  const listPets = createListPets(fakeDependencies(token));

  it.each([
    ["no Authorization header", undefined],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["an empty bearer token", "Bearer "],
    ["the bare scheme", "Bearer"],
  ])("answers 401 without error=invalid_token for %s", async (_, authorization) => {
    const response = await invoke(listPets, {
      path: "/pets",
      headers: authorization === undefined ? {} : { Authorization: authorization },
    });

    expectError(response, 401, "unauthorized");
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets"');
  });

  it.each(["Bearer wrong", "Bearer the-one-valid-token-but-longer", `Bearer ${"x".repeat(5000)}`, "Bearer a b"])(
    "answers 401 with error=invalid_token for %j",
    async (authorization) => {
      const response = await invoke(listPets, { path: "/pets", headers: { Authorization: authorization } });

      expectError(response, 401, "unauthorized");
      expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
    },
  );

  it.each(["Bearer", "bearer", "BEARER", "bEaReR"])("accepts the scheme spelled %s", async (scheme) => {
    const response = await invoke(listPets, { path: "/pets", headers: { Authorization: `${scheme} ${token}` } });

    expect(response.status).toBe(200);
  });

  it("reads the header whatever its case", async () => {
    const response = await invoke(listPets, { path: "/pets", headers: { AUTHORIZATION: `Bearer ${token}` } });

    expect(response.status).toBe(200);
  });

  it("judges a key the verifier answers for at once as one it has to look up", async () => {
    const principal = { keyId: "key_at_once", scope: "write" } as const;
    const atOnce = createListPets(
      fakeDependencies(token, {
        keys: { verify: (candidate) => (candidate === token ? principal : { refused: "invalid" }) },
      }),
    );
    const lookedUp = createListPets(fakeDependencies(token, { keys: singleKeyVerifier(token, principal) }));

    for (const handler of [atOnce, lookedUp]) {
      expect((await invoke(handler, { path: "/pets", headers: bearer(token) })).status).toBe(200);
      const refused = await invoke(handler, { path: "/pets", headers: bearer("wrong") });
      expectError(refused, 401, "unauthorized");
      expect(refused.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
    }
  });

  it("checks the key before the input, so a bad request without a key is a 401", async () => {
    const getPet = createGetPet(fakeDependencies(token));

    const malformed = await invoke(createCreatePet(fakeDependencies(token)), {
      method: "POST",
      path: "/pets",
      headers: { "Content-Type": "text/plain" },
      body: "{oops",
    });
    const missingPet = await invoke(getPet, {
      path: "/pets/999",
      resource: "/pets/{petId}",
      pathParameters: { petId: "999" },
    });

    expectError(malformed, 401, "unauthorized");
    expectError(missingPet, 401, "unauthorized");
  });
});

describe("common response headers", () => {
  it("are on successes and on errors alike", async () => {
    const listPets = createListPets(fakeDependencies(token));

    const ok = await invoke(listPets, { path: "/pets", headers: bearer(token) });
    const unauthorized = await invoke(listPets, { path: "/pets" });
    const invalid = await invoke(listPets, { path: "/pets?limit=0", headers: bearer(token) });

    for (const response of [ok, unauthorized, invalid]) expectCommonHeaders(response);
  });

  it("echo API Gateway's request id as X-Request-Id", async () => {
    const listPets = createListPets(fakeDependencies(token));

    const response = await invoke(listPets, { path: "/pets", headers: bearer(token) });

    expect(response.headers["x-request-id"]).toBeTruthy();
  });
});

describe("createPet request bodies", () => {
  const post = (body: string | undefined, headers: Record<string, string> = { ...jsonContent }) => {
    const deps = fakeDependencies(token);
    return {
      deps,
      response: invoke(createCreatePet(deps), {
        method: "POST",
        path: "/pets",
        headers: { ...bearer(token), ...headers },
        ...(body === undefined ? {} : { body }),
      }),
    };
  };

  it("creates an available pet when no status is sent, with Location", async () => {
    const { deps, response } = post(JSON.stringify({ name: "Rex", categoryId: 3 }));

    const created = await response;

    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: 1, name: "Rex", categoryId: 3, status: "available" });
    expect(created.headers.location).toBe("/v1/pets/1");
    expect(deps.pets.pets.size).toBe(1);
  });

  it.each([
    "application/json",
    "application/json; charset=utf-8",
    "Application/JSON;charset=UTF-8",
    "application/json;charset=utf8",
  ])("accepts Content-Type %j", async (contentType) => {
    const { response } = post(JSON.stringify({ name: "Rex", categoryId: 3 }), { "Content-Type": contentType });

    expect((await response).status).toBe(201);
  });

  it.each([
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/json; charset=latin1",
    "application/json; charset=",
    "application/jsonp",
  ])("answers 415 for Content-Type %j and stores nothing", async (contentType) => {
    const { deps, response } = post(JSON.stringify({ name: "Rex", categoryId: 3 }), { "Content-Type": contentType });

    expectError(await response, 415, "unsupported_media_type");
    expect(deps.pets.pets.size).toBe(0);
  });

  it("answers 415 when the Content-Type is missing", async () => {
    const { response } = post(JSON.stringify({ name: "Rex", categoryId: 3 }), {});

    expectError(await response, 415, "unsupported_media_type");
  });

  it.each([
    ["a missing body", undefined, "body: is required: send a JSON object"],
    ["malformed JSON", "{name:", "body: is not valid JSON"],
    ["JSON null", "null", "body: must be a JSON object, not null"],
    ["a JSON array", "[]", "body: must be a JSON object, not an array"],
    ["an id", '{"name":"Rex","categoryId":1,"id":5}', "id: is not an accepted field"],
    [
      "a string categoryId",
      '{"name":"Rex","categoryId":"1"}',
      "categoryId: must be an integer from 1 to 9007199254740991",
    ],
  ])("answers 400 naming the problem for %s", async (_, body, message) => {
    const { deps, response } = post(body);

    const answered = await response;

    expectError(answered, 400, "invalid_request");
    expect((answered.json as { message: string }).message).toBe(message);
    expect(deps.pets.pets.size).toBe(0);
  });

  it("answers 413 for a body over 16 KiB, and accepts one just under", async () => {
    const padding = (size: number) => JSON.stringify({ name: "Rex", categoryId: 1, pad: "x".repeat(size) });
    const tooLarge = padding(16 * 1024);

    expectError(await post(tooLarge).response, 413, "payload_too_large");
    // Under the limit the body is read and judged on its content instead.
    expectError(await post(padding(16 * 1024 - 100)).response, 400, "invalid_request");
  });
});

describe("getPet deprecation", () => {
  const deprecationHeaders = {
    deprecation: "@1795392000",
    sunset: "Thu, 05 Dec 2030 00:00:00 GMT",
    link: '</v1/pets>; rel="successor-version"',
  };

  it("announces deprecation on a found pet, a 404, a 400 and a 401", async () => {
    const deps = fakeDependencies(token);
    await deps.pets.insert({ id: 1, name: "Rex", categoryId: 1, status: "available" }, SHARED_PETS);
    const getPet = createGetPet(deps);
    const get = (petId: string, headers = bearer(token)) =>
      invoke(getPet, { path: `/pets/${petId}`, resource: "/pets/{petId}", pathParameters: { petId }, headers });

    const answers = await Promise.all([get("1"), get("2"), get("abc"), get("1", {})]);

    expect(answers.map((answer) => answer.status)).toEqual([200, 404, 400, 401]);
    for (const answer of answers) expect(answer.headers).toMatchObject(deprecationHeaders);
  });

  it("answers 410 gone from the sunset instant on, and 200 just before it", async () => {
    const sunset = Date.UTC(2030, 11, 5);
    const at = (time: number) => {
      const deps = fakeDependencies(token, { clock: () => new Date(time) });
      void deps.pets.insert({ id: 1, name: "Rex", categoryId: 1, status: "available" }, SHARED_PETS);
      return invoke(createGetPet(deps), {
        path: "/pets/1",
        resource: "/pets/{petId}",
        pathParameters: { petId: "1" },
        headers: bearer(token),
      });
    };

    const before = await at(sunset - 1);
    const atSunset = await at(sunset);

    expect(before.status).toBe(200);
    expectError(atSunset, 410, "gone");
    expect(atSunset.headers).toMatchObject(deprecationHeaders);
  });
});

describe("failures of the store", () => {
  it("answers 500 with a generic message and no internal text", async () => {
    const deps = fakeDependencies(token);
    deps.pets.page = async () => {
      throw new Error("secret internal detail: table arn:aws:dynamodb:xyz");
    };
    const errors: unknown[] = [];
    const originalError = console.error;
    console.error = (...args: unknown[]) => errors.push(args);

    try {
      const response = await invoke(createListPets(deps), { path: "/pets", headers: bearer(token) });

      expectError(response, 500, "internal_error");
      expect(JSON.stringify(response.json)).not.toContain("secret");
      expect(JSON.stringify(errors)).toContain("secret internal detail");
      expect(JSON.stringify(errors)).toContain(response.headers["x-request-id"]);
    } finally {
      console.error = originalError;
    }
  });
});

describe("the request's deadline", () => {
  /** A Lambda context with `remainingMs` left at the moment of the call. */
  const contextWithRemaining = (remainingMs: number) => ({
    ...testContext,
    getRemainingTimeInMillis: () => remainingMs,
  });

  it("is given to the key lookup and to every store call, one margin before Lambda's own timeout", async () => {
    const seen: { verify?: Deadline | undefined; page?: Deadline | undefined } = {};
    const deps = fakeDependencies(token, {
      keys: {
        verify: async (candidate, deadline) => {
          seen.verify = deadline;
          return candidate === token ? { keyId: "key_test", scope: "write" } : { refused: "invalid" };
        },
      },
    });
    const page = deps.pets.page.bind(deps.pets);
    deps.pets.page = async (query: PetPageQuery, deadline?: Deadline) => {
      seen.page = deadline;
      return page(query);
    };
    const remainingMs = 10_000;

    const before = Date.now();
    const response = asTestResponse(
      await createListPets(deps)(
        proxyEvent({ path: "/pets", headers: bearer(token) }),
        contextWithRemaining(remainingMs),
      ),
    );
    const after = Date.now();

    expect(response.status).toBe(200);
    expect(seen.page).toBe(seen.verify);
    expect(seen.page?.atMs).toBeGreaterThanOrEqual(before + remainingMs - REQUEST_DEADLINE_MARGIN_MS);
    expect(seen.page?.atMs).toBeLessThanOrEqual(after + remainingMs - REQUEST_DEADLINE_MARGIN_MS);
  });

  it("answers 503 with Retry-After when the operation is still waiting at the deadline, whatever it waits on", async () => {
    const deps = fakeDependencies(token);
    // Ignores the deadline's signal: only the chain's race against the deadline can end this request.
    deps.pets.get = () => new Promise(() => undefined);
    const event = proxyEvent({
      path: "/pets/1",
      resource: "/pets/{petId}",
      pathParameters: { petId: "1" },
      headers: bearer(token),
    });

    const logged: string[] = [];
    const originalError = console.error;
    console.error = (line: unknown) => logged.push(String(line));

    let response: TestResponse;
    try {
      response = asTestResponse(await createGetPet(deps)(event, contextWithRemaining(REQUEST_DEADLINE_MARGIN_MS + 50)));
    } finally {
      console.error = originalError;
    }

    expectError(response, 503, "service_unavailable");
    expect(response.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
    expect(logged.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ message: "request failed", status: 503 }),
    ]);
  });
});

describe("createPet with Idempotency-Key", () => {
  const post = (deps: ReturnType<typeof fakeDependencies>, body: unknown, headers: Record<string, string>) =>
    invoke(createCreatePet(deps), {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(token), ...jsonContent, ...headers },
      body: JSON.stringify(body),
    });

  it("replays the first answer for the same key and body without storing another pet", async () => {
    const deps = fakeDependencies(token);

    const first = await post(deps, { name: "Rex", categoryId: 1 }, { "Idempotency-Key": "abc" });
    const second = await post(deps, { categoryId: 1, name: "Rex" }, { "idempotency-key": "abc" });

    expect(second.status).toBe(201);
    expect(second.json).toEqual(first.json);
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(deps.pets.pets.size).toBe(1);
  });

  it("answers 422 for the same key with another body", async () => {
    const deps = fakeDependencies(token);
    await post(deps, { name: "Rex", categoryId: 1 }, { "Idempotency-Key": "abc" });

    const reused = await post(deps, { name: "Rex", categoryId: 2 }, { "Idempotency-Key": "abc" });

    expectError(reused, 422, "idempotency_key_reused");
    expect(deps.pets.pets.size).toBe(1);
  });

  it("keeps keys of different API keys apart", async () => {
    const deps = fakeDependencies(token);
    const otherDeps = { ...deps, keys: singleKeyVerifier(token, { keyId: "key_other", scope: "write" }) };

    await post(deps, { name: "Rex", categoryId: 1 }, { "Idempotency-Key": "abc" });
    const fromOther = await post(otherDeps, { name: "Rex", categoryId: 1 }, { "Idempotency-Key": "abc" });

    expect(fromOther.status).toBe(201);
    expect(fromOther.headers["idempotent-replayed"]).toBeUndefined();
    expect(deps.pets.pets.size).toBe(2);
  });

  it.each([
    ["empty", ""],
    ["256 characters", "x".repeat(256)],
    ["256 emoji", "🐶".repeat(256)],
  ])("answers 400 naming the header for a key that is %s", async (_, key) => {
    const deps = fakeDependencies(token);

    const response = await post(deps, { name: "Rex", categoryId: 1 }, { "Idempotency-Key": key });

    expectError(response, 400, "invalid_request");
    expect((response.json as { message: string }).message).toBe("Idempotency-Key: must be 1 to 255 characters long");
    expect(deps.pets.pets.size).toBe(0);
  });

  it("accepts 255 characters counted as code points", async () => {
    const response = await post(
      fakeDependencies(token),
      { name: "Rex", categoryId: 1 },
      {
        "Idempotency-Key": "🐶".repeat(255),
      },
    );

    expect(response.status).toBe(201);
  });

  it("answers 400 for a key given twice", async () => {
    const event = proxyEvent({
      method: "POST",
      path: "/pets",
      headers: { ...bearer(token), ...jsonContent },
      body: JSON.stringify({ name: "Rex", categoryId: 1 }),
    });
    event.multiValueHeaders["idempotency-key"] = ["a", "b"];
    event.headers["idempotency-key"] = "b";

    const response = asTestResponse(await createCreatePet(fakeDependencies(token))(event, testContext));

    expectError(response, 400, "invalid_request");
    expect((response.json as { message: string }).message).toMatch(/^Idempotency-Key: /);
  });
});
