/**
 * Key scopes and expiry, black-box over HTTP against the local server on dynalite: a read key lists
 * and gets but is refused a create with 403 `insufficient_scope` and its challenge before its body
 * is read; a write key does everything; an expired key gets 401 saying it expired. Every answer is
 * also checked against the OpenAPI document (fetchJson).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueApiKey, type KeyScope } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { MAX_BODY_BYTES, type Pet } from "../../lib/contract/schemas";
import type { LocalApi } from "../../local/server";
import { bearer, fetchJson, startTestApi } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";

let api: LocalApi;
let readKey: string;
let writeKey: string;

const store = () => new DynamoApiKeyStore(documentClient(), tableName());

async function issue(name: string, scope: KeyScope, options: { now?: Date; lifetimeSeconds?: number } = {}) {
  return (await issueApiKey(store(), "local", name, { scope, ...options })).key;
}

const list = (key: string) => fetchJson(`${api.baseUrl}/pets`, { headers: bearer(key) });
const get = (key: string, id: number) => fetchJson(`${api.baseUrl}/pets/${id}`, { headers: bearer(key) });
const create = (key: string, body: string, contentType = "application/json") =>
  fetchJson(`${api.baseUrl}/pets`, {
    method: "POST",
    headers: { ...bearer(key), "Content-Type": contentType },
    body,
  });

beforeAll(async () => {
  api = await startTestApi();
  readKey = await issue("reader", "read");
  writeKey = await issue("writer", "write");
});
afterAll(() => api.close());

describe("a read key", () => {
  it("lists and gets pets", async () => {
    const created = await create(writeKey, JSON.stringify({ name: "Rex", categoryId: 1 }));
    const id = (created.json as Pet).id;

    const listed = await list(readKey);
    const fetched = await get(readKey, id);

    expect(listed.status).toBe(200);
    expect((listed.json as Pet[]).map((pet) => pet.id)).toContain(id);
    expect(fetched.status).toBe(200);
    expect(fetched.json).toEqual(created.json);
  });

  it("gets 403 insufficient_scope on a create, with the challenge naming write, and creates nothing", async () => {
    const before = (await list(writeKey)).json as Pet[];

    const response = await create(readKey, JSON.stringify({ name: "Rex", categoryId: 1 }));

    expect(response.status).toBe(403);
    expect(response.json).toEqual({
      code: "insufficient_scope",
      message: "This API key has the read scope; this operation needs a key with the write scope.",
      status: 403,
    });
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="insufficient_scope", scope="write"');
    expect(response.headers["x-request-id"]).toBeTruthy();
    expect((await list(writeKey)).json).toEqual(before);
  });

  it.each([
    ["malformed JSON", "{not json", "application/json"],
    ["a body over the limit", JSON.stringify({ name: "x".repeat(MAX_BODY_BYTES), categoryId: 1 }), "application/json"],
    ["a body that is not JSON", "name=Rex", "text/plain"],
  ])("gets the same 403 for %s: the scope is checked before the body is read", async (_, body, contentType) => {
    const response = await create(readKey, body, contentType);

    expect(response.status).toBe(403);
    expect(response.json).toMatchObject({ code: "insufficient_scope", status: 403 });
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="insufficient_scope", scope="write"');
  });
});

describe("a write key", () => {
  it("lists, creates and gets", async () => {
    const created = await create(writeKey, JSON.stringify({ name: "Bella", categoryId: 2 }));
    const id = (created.json as Pet).id;

    expect(created.status).toBe(201);
    expect((await list(writeKey)).status).toBe(200);
    expect((await get(writeKey, id)).json).toEqual(created.json);
  });

  it("still gets 400 and 413 for those bodies: only the scope's 403 comes first", async () => {
    expect((await create(writeKey, "{not json")).status).toBe(400);
    expect((await create(writeKey, JSON.stringify({ name: "x".repeat(MAX_BODY_BYTES), categoryId: 1 }))).status).toBe(
      413,
    );
  });
});

describe("an expired key", () => {
  it.each<KeyScope>(["read", "write"])(
    "(%s) gets 401 unauthorized with invalid_token, saying when it expired",
    async (scope) => {
      // Issued two days ago for one day.
      const now = new Date(Date.now() - 2 * 86_400_000);
      const expired = await issue(`expired ${scope}`, scope, { now, lifetimeSeconds: 86_400 });
      const expiredAt = new Date(Math.floor(now.getTime() / 1000) * 1000 + 86_400_000).toISOString();

      for (const response of [await list(expired), await create(expired, "{not json")]) {
        expect(response.status).toBe(401);
        expect(response.json).toEqual({
          code: "unauthorized",
          message: `The API key expired at ${expiredAt}; use the key that replaced it, or ask for a new one.`,
          status: 401,
        });
        expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
      }
    },
  );
});
