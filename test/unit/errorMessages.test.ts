/**
 * Error messages that say what is wrong with the request, for the slips people make with keys and
 * media types. Status, code and headers stay those of the contract; a message never repeats a key.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { describeKeySlip, generateApiKey } from "../../lib/auth/apiKeys";
import { bearer, invoke, type TestResponse } from "../support/api";
import { fakeDependencies } from "../support/fakes";

const key = generateApiKey("local");
const secret = key.slice("petstore_local_".length);

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
