/**
 * What the handler chain does with a key's scope, expiry and revocation note, and with its use:
 * each operation's scope comes from the route table; a key without it gets 403 insufficient_scope
 * (RFC 6750 §3.1) before the body is read; an expired key gets a 401 that says so.
 */
import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { generateApiKey, type Principal } from "../../lib/auth/apiKeys";
import { createKeyUseRecorder, type KeyUsageStore, type KeyUse } from "../../lib/auth/keyUsage";
import type { KeyVerdict } from "../../lib/auth/verifier";
import type { Dependencies } from "../../lib/http/types";
import { routes } from "../../lib/routes";
import { bearer, invoke, jsonContent } from "../support/api";
import { assertMatchesContract } from "../support/contract";
import { fakeDependencies } from "../support/fakes";

const key = generateApiKey("local");
const readKey: Principal = { keyId: "key_reader", scope: "read" };

const depsAnswering = (verdict: KeyVerdict, overrides: Partial<Dependencies> = {}) =>
  fakeDependencies(key, { keys: { verify: () => verdict }, ...overrides });

describe("a read key", () => {
  it("lists and gets pets, the operations whose route scope is read", async () => {
    expect([routes.listPets.scope, routes.getPet.scope, routes.createPet.scope]).toEqual(["read", "read", "write"]);
    const deps = depsAnswering(readKey);
    await deps.pets.insert({ id: 1, name: "Rex", categoryId: 1, status: "available" }, { kind: "shared" });

    expect((await invoke(createListPets(deps), { path: "/pets", headers: bearer(key) })).status).toBe(200);
    expect(
      (await invoke(createGetPet(deps), { path: "/pets/1", pathParameters: { petId: "1" }, headers: bearer(key) }))
        .status,
    ).toBe(200);
  });

  it("gets 403 insufficient_scope on createPet, with the challenge naming the scope, before the body is read", async () => {
    const deps = depsAnswering(readKey);
    const create = createCreatePet(deps);

    for (const body of ['{"name":"Rex","categoryId":1}', "not json", "x".repeat(20_000)]) {
      const response = await invoke(create, {
        method: "POST",
        path: "/pets",
        headers: { ...bearer(key), ...jsonContent },
        body,
      });

      expect(response.status).toBe(403);
      expect(response.json).toEqual({
        code: "insufficient_scope",
        message: "This API key has the read scope; this operation needs a key with the write scope.",
        status: 403,
      });
      expect(response.headers["www-authenticate"]).toBe(
        'Bearer realm="pets", error="insufficient_scope", scope="write"',
      );
      assertMatchesContract({ method: "POST", url: "/v1/pets" }, response);
    }
    expect(
      await deps.pets.page({ collection: { kind: "shared" }, limit: 100, afterId: 0, status: null }),
    ).toMatchObject({ pets: [] });
  });

  it("is still refused with 401, not 403, when it is not valid", async () => {
    const response = await invoke(createCreatePet(depsAnswering({ refused: "invalid" })), {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), ...jsonContent },
      body: "{}",
    });

    expect(response.status).toBe(401);
  });
});

describe("a refused key's 401", () => {
  it("says when the key expired, with error=invalid_token", async () => {
    const response = await invoke(
      createListPets(depsAnswering({ refused: "expired", expiredAt: "2027-03-01T00:00:00.000Z" })),
      { path: "/pets", headers: bearer(key) },
    );

    expect(response.status).toBe(401);
    expect(response.json).toEqual({
      code: "unauthorized",
      message: "The API key expired at 2027-03-01T00:00:00.000Z; use the key that replaced it, or ask for a new one.",
      status: 401,
    });
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="pets", error="invalid_token"');
  });

  it("gives a revocation's note, and the plain message for a revocation without one", async () => {
    const noted = await invoke(createListPets(depsAnswering({ refused: "revoked", note: "the server restarted." })), {
      path: "/pets",
      headers: bearer(key),
    });
    const plain = await invoke(createListPets(depsAnswering({ refused: "revoked" })), {
      path: "/pets",
      headers: bearer(key),
    });

    expect(noted.json).toMatchObject({ message: "The API key was revoked: the server restarted." });
    expect(plain.json).toMatchObject({ message: "The API key is not valid." });
  });
});

/** A usage store that counts writes, keeping the latest day per key and operation as the real one does. */
function countingUsageStore() {
  const days = new Map<string, string>();
  const store: KeyUsageStore & { writes: KeyUse[] } = {
    writes: [],
    async recordUse(use) {
      store.writes.push(use);
      const pair = `${use.keyId} ${use.operationId}`;
      const stored = days.get(pair);
      if (stored !== undefined && stored >= use.lastUsedOn) return false;
      days.set(pair, use.lastUsedOn);
      return true;
    },
    async list() {
      return [...days].map(([pair, lastUsedOn]) => {
        const [keyId, operationId] = pair.split(" ") as [string, string];
        return { keyId, operationId, lastUsedOn };
      });
    },
  };
  return store;
}

describe("a key's use", () => {
  it("is recorded once per key, operation and day, for admitted requests only", async () => {
    const usage = countingUsageStore();
    let now = new Date("2027-03-01T23:59:59.000Z");
    const deps = depsAnswering(readKey, { keyUses: createKeyUseRecorder(usage), clock: () => now });
    const list = createListPets(deps);
    const create = createCreatePet(deps);

    await Promise.all(Array.from({ length: 20 }, () => invoke(list, { path: "/pets", headers: bearer(key) })));
    await invoke(create, { method: "POST", path: "/pets", headers: { ...bearer(key), ...jsonContent }, body: "{}" });
    now = new Date("2027-03-02T00:00:00.000Z");
    await invoke(list, { path: "/pets", headers: bearer(key) });
    await invoke(list, { path: "/pets", headers: bearer(key) });

    expect(usage.writes).toEqual([
      { keyId: "key_reader", operationId: "listPets", lastUsedOn: "2027-03-01" },
      { keyId: "key_reader", operationId: "listPets", lastUsedOn: "2027-03-02" },
    ]);
  });

  it("does not fail the request when it cannot be written, and is tried again on the next one", async () => {
    const usage = countingUsageStore();
    let failing = true;
    const warnings: string[] = [];
    const recorder = createKeyUseRecorder(
      {
        recordUse: (use) => (failing ? Promise.reject(new Error("throttled")) : usage.recordUse(use)),
        list: () => usage.list(),
      },
      { warn: (message) => warnings.push(message) },
    );
    const list = createListPets(depsAnswering(readKey, { keyUses: recorder }));

    expect((await invoke(list, { path: "/pets", headers: bearer(key) })).status).toBe(200);
    failing = false;
    expect((await invoke(list, { path: "/pets", headers: bearer(key) })).status).toBe(200);

    expect(warnings).toEqual(["recording a key's use failed; the next request retries"]);
    expect(await usage.list()).toEqual([{ keyId: "key_reader", operationId: "listPets", lastUsedOn: "2027-01-01" }]);
  });
});
