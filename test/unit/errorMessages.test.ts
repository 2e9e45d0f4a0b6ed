/**
 * Error messages that say what is wrong with the request, for the slips people make with keys (sent
 * the wrong way, or to the wrong environment), integer parameters, media types and encodings. Status,
 * code and headers stay those of the contract; a message never repeats a key.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { type ApiKeyStore, describeKeySlip, generateApiKey } from "../../lib/auth/apiKeys";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { type StageName, stages } from "../../lib/config";
import { asTestResponse, bearer, invoke, proxyEvent, type TestResponse, testContext } from "../support/api";
import { assertMatchesContract } from "../support/contract";
import { fakeDependencies } from "../support/fakes";

const key = generateApiKey("local");
const secret = key.slice("petstore_local_".length);

/** A store that knows no key: a verifier on it refuses every key it is sent. */
const emptyStore: ApiKeyStore = {
  findByHash: async () => undefined,
  save: async () => undefined,
  list: async () => [],
  revoke: async () => false,
  markReplaced: async () => false,
};

function messageOf(response: TestResponse): string {
  return (response.json as { message: string }).message;
}

async function listWith(authorization: string): Promise<TestResponse> {
  return invoke(createListPets(fakeDependencies(key)), { path: "/pets", headers: { Authorization: authorization } });
}

describe("a 401 for a key sent the wrong way", () => {
  it.each([
    ["an encoded newline after it", `Bearer ${key}%0A`, "it ends with a newline"],
    ["a JSON-escaped newline after it", `Bearer ${key}\\n`, "it ends with a newline"],
    ["a carriage return and newline as text", `Bearer ${key}\\r\\n`, "it ends with a newline"],
    ["double quotes around it", `Bearer "${key}"`, "it is in quotes"],
    ["single quotes around it", `Bearer '${key}'`, "it is in quotes"],
  ])("names %s, with error=invalid_token", async (_, authorization, problem) => {
    const response = await listWith(authorization);

    expect(response.status).toBe(401);
    expect(response.json).toMatchObject({ code: "unauthorized", status: 401 });
    expect(messageOf(response)).toBe(
      `The API key is not valid: ${problem}; send the key alone, as 'Authorization: Bearer <key>'.`,
    );
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
  });

  it("says 'Bearer ' is missing when the header holds the key alone", async () => {
    const response = await listWith(key);

    expect(response.status).toBe(401);
    expect(messageOf(response)).toBe(
      "The Authorization header has the key without 'Bearer ' before it: send 'Authorization: Bearer <key>'.",
    );
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets"');
  });

  it("says the scheme must be Bearer for another scheme", async () => {
    const response = await listWith(`Token ${key}`);

    expect(messageOf(response)).toBe(
      "The Authorization header must use the Bearer scheme: send 'Authorization: Bearer <key>'.",
    );
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets"');
  });

  it("keeps the plain messages for no key and for a well-formed key that is not valid", async () => {
    expect(messageOf(await invoke(createListPets(fakeDependencies(key)), { path: "/pets" }))).toBe(
      "An API key is required: send 'Authorization: Bearer <key>'.",
    );
    expect(messageOf(await listWith(`Bearer ${generateApiKey("local")}`))).toBe("The API key is not valid.");
  });

  it("accepts the key when only white space surrounds it (HTTP trims header values)", async () => {
    expect((await listWith(`Bearer   ${key}  `)).status).toBe(200);
  });

  it("never repeats any part of what was sent", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), fc.constantFrom("", "%0A", "\\n", "\n", " "), (junk, end) => {
        const problem = describeKeySlip(`${junk}${secret}${end}`) ?? "";
        return !problem.includes(secret.slice(0, 8)) && !problem.includes(secret.slice(-8));
      }),
    );
  });
});

describe("a 415 for a body in another charset", () => {
  const createPet = createCreatePet(fakeDependencies(key));
  const send = (contentType: string) =>
    invoke(createPet, {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), "Content-Type": contentType },
      body: '{"name":"Rex","categoryId":1}',
    });

  it.each([
    "application/json; charset=iso-8859-1",
    'application/json; charset="UTF-16"',
    "application/json;charset=latin1",
  ])("says the charset must be UTF-8 for %j", async (contentType) => {
    const response = await send(contentType);

    expect(response.status).toBe(415);
    expect(response.json).toEqual({
      code: "unsupported_media_type",
      message: "The charset must be UTF-8: send the body in UTF-8 with 'Content-Type: application/json'.",
      status: 415,
    });
  });

  it("still asks for JSON when the media type is not JSON at all", async () => {
    expect(messageOf(await send("text/plain; charset=utf-8"))).toBe(
      "The request body must be JSON: send 'Content-Type: application/json'.",
    );
  });

  it("accepts UTF-8 however it is spelled", async () => {
    expect((await send("application/json; charset=utf-8")).status).toBe(201);
    expect((await send("application/json; charset=UTF8")).status).toBe(201);
  });
});

describe("a 401 for a well-formed key of another environment", () => {
  const listAt = (stage: StageName, sent: string) =>
    invoke(createListPets(fakeDependencies(key, { keys: createApiKeyVerifier(emptyStore, stage) })), {
      path: "/pets",
      headers: bearer(sent),
    });

  it.each([
    [
      "staging",
      "prod",
      "This key is for the staging environment; this is the production API. Use a key issued for production.",
    ],
    ["prod", "local", "This key is for the production environment; this is the local API. Use a key issued for local."],
    [
      "local",
      "staging",
      "This key is for the local environment; this is the staging API. Use a key issued for staging.",
    ],
  ] as const)(
    "names both environments for a %s key sent to %s, with error=invalid_token",
    async (keyStage, apiStage, message) => {
      const sent = generateApiKey(keyStage);

      const response = await listAt(apiStage, sent);

      expect(response.status).toBe(401);
      expect(response.json).toEqual({ code: "unauthorized", message, status: 401 });
      expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
    },
  );

  it("never repeats the key, nor any of its secret part", async () => {
    for (const keyStage of stages) {
      for (const apiStage of stages.filter((stage) => stage !== keyStage)) {
        const sent = generateApiKey(keyStage);
        const text = JSON.stringify(await listAt(apiStage, sent));
        const secretPart = sent.slice(`petstore_${keyStage}_`.length);

        expect(text).not.toContain(sent);
        for (let at = 0; at + 6 <= secretPart.length; at += 6) expect(text).not.toContain(secretPart.slice(at, at + 6));
      }
    }
  });

  it("keeps the plain message for an unknown key of the API's own environment", async () => {
    expect(messageOf(await listAt("prod", generateApiKey("prod")))).toBe("The API key is not valid.");
  });
});

describe("a 400 for an integer parameter written with leading zeros", () => {
  const deps = fakeDependencies(key);

  it.each([
    ["05", "limit: must be written without leading zeros, e.g. 5"],
    ["0100", "limit: must be written without leading zeros, e.g. 100"],
    ["00", "limit: must be an integer from 1 to 100, written without leading zeros"],
    ["0101", "limit: must be an integer from 1 to 100, written without leading zeros"],
  ])("says why for limit=%s", async (limit, message) => {
    const response = await invoke(createListPets(deps), { path: `/pets?limit=${limit}`, headers: bearer(key) });

    expect(response.status).toBe(400);
    expect(response.json).toEqual({ code: "invalid_request", message, status: 400 });
  });

  it.each([
    ["01", "petId: must be written without leading zeros, e.g. 1"],
    ["00", "petId: must be an integer from 1 to 9007199254740991, written without leading zeros"],
  ])("says why for petId %s", async (petId, message) => {
    const response = await invoke(createGetPet(deps), {
      path: `/pets/${petId}`,
      resource: "/pets/{petId}",
      pathParameters: { petId },
      headers: bearer(key),
    });

    expect(response.status).toBe(400);
    expect(response.json).toEqual({ code: "invalid_request", message, status: 400 });
  });
});

describe("a 415 for a body that is not UTF-8", () => {
  const nameBytes = (middle: number[]) =>
    Buffer.concat([Buffer.from('{"name":"R'), Buffer.from(middle), Buffer.from('x","categoryId":1}')]);
  /** POST /pets with the body handed over as bytes (base64), as API Gateway does for binary media types. */
  async function createWithBytes(bytes: Buffer) {
    const deps = fakeDependencies(key);
    const event = {
      ...proxyEvent({ method: "POST", path: "/pets", headers: { ...bearer(key), "Content-Type": "application/json" } }),
      body: bytes.toString("base64"),
      isBase64Encoded: true,
    };
    const response = asTestResponse(await createCreatePet(deps)(event, testContext));
    assertMatchesContract({ method: "POST", url: "/v1/pets" }, response);
    const listed = await invoke(createListPets(deps), { path: "/pets?limit=100", headers: bearer(key) });
    return { response, stored: listed.json as { name: string }[] };
  }

  it.each([
    ["a lone 0xFF", [0xff]],
    ["a truncated sequence", [0xe2, 0x82]],
    ["an encoded surrogate", [0xed, 0xa0, 0x80]],
    ["an overlong encoding", [0xc0, 0xaf]],
  ])("refuses %s with 415 and stores nothing", async (_, middle) => {
    const { response, stored } = await createWithBytes(nameBytes(middle));

    expect(response.status).toBe(415);
    expect(response.json).toEqual({
      code: "unsupported_media_type",
      message: "The request body is not valid UTF-8: send JSON in UTF-8 with 'Content-Type: application/json'.",
      status: 415,
    });
    expect(stored).toEqual([]);
  });

  it("accepts UTF-8 handed over as bytes, U+FFFD included, and stores it exactly", async () => {
    const { response, stored } = await createWithBytes(nameBytes([0xef, 0xbf, 0xbd]));

    expect(response.status).toBe(201);
    expect(stored.map((pet) => pet.name)).toEqual(["R\ufffdx"]);
  });

  it("accepts U+FFFD in a body handed over as text: what API Gateway makes of bytes that are not UTF-8", async () => {
    const response = await invoke(createCreatePet(fakeDependencies(key)), {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), "Content-Type": "application/json" },
      body: '{"name":"R\ufffdx","categoryId":1}',
    });

    expect(response.status).toBe(201);
    expect((response.json as { name: string }).name).toBe("R\ufffdx");
  });
});

describe("docs/api.md quotes these messages as the API sends them", () => {
  const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
  /** The section under `## heading…`, with line breaks as spaces (a quote may wrap). */
  const section = (heading: string) => {
    const start = guide.indexOf(`\n## ${heading}`);
    const end = guide.indexOf("\n## ", start + 1);
    return guide.slice(start, end).replace(/\s+/g, " ");
  };

  it("Authentication: the message for a staging key sent to production", async () => {
    const deps = fakeDependencies(key, { keys: createApiKeyVerifier(emptyStore, "prod") });
    const response = await invoke(createListPets(deps), { path: "/pets", headers: bearer(generateApiKey("staging")) });

    expect(section("Authentication")).toContain(`\`${messageOf(response)}\``);
  });

  it("Authentication: the messages for an expired key and for a read key creating a pet", async () => {
    const expiredAt = "2026-12-01T00:00:00.000Z";
    const expired = fakeDependencies(key, { keys: { verify: () => ({ refused: "expired", expiredAt }) } });
    const readKey = fakeDependencies(key, { keys: { verify: () => ({ keyId: "key_read", scope: "read" }) } });

    const refused = await invoke(createListPets(expired), { path: "/pets", headers: bearer(key) });
    const forbidden = await invoke(createCreatePet(readKey), {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), "Content-Type": "application/json" },
      body: "{}",
    });

    expect(refused.status).toBe(401);
    expect(section("Authentication")).toContain(`\`${messageOf(refused)}\``);
    expect(forbidden.status).toBe(403);
    expect(section("Authentication")).toContain(`"message": "${messageOf(forbidden)}"`);
  });

  it("List pets: the message for limit=05", async () => {
    const response = await invoke(createListPets(fakeDependencies(key)), {
      path: "/pets?limit=05",
      headers: bearer(key),
    });

    expect(section("List pets")).toContain(`\`${messageOf(response)}\``);
  });

  it("Create a pet: the start of the message for bytes that are not UTF-8", async () => {
    const deps = fakeDependencies(key);
    const event = {
      ...proxyEvent({ method: "POST", path: "/pets", headers: { ...bearer(key), "Content-Type": "application/json" } }),
      body: Buffer.from([0x7b, 0xff, 0x7d]).toString("base64"),
      isBase64Encoded: true,
    };
    const message = messageOf(asTestResponse(await createCreatePet(deps)(event, testContext)));
    const quoted = /`(The request body is not valid UTF-8: )…`/.exec(section("Create a pet"))?.[1];

    expect(quoted).toBeDefined();
    expect(message.startsWith(quoted as string)).toBe(true);
  });
});
