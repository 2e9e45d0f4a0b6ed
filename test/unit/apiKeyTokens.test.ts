/** Whatever a client sends as a bearer token, checking it never throws and never lets it in. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHandler as createListPets } from "../../functions/listPets";
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  apiKeyPrefix,
  generateApiKey,
  hasApiKeyShape,
  hashApiKey,
} from "../../lib/auth/apiKeys";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { stages } from "../../lib/config";
import { invoke } from "../support/api";
import { fakeDependencies } from "../support/fakes";

const RUNS = Math.max(1, Number(process.env.FC_RUNS) || 200);

/** A store holding one key, counting lookups: malformed tokens must not cost one. */
function storeWith(key: string) {
  const record: ApiKeyRecord = {
    keyId: "key_only",
    name: "only",
    keyHash: hashApiKey(key),
    createdAt: "2027-01-01T00:00:00.000Z",
  };
  const store: ApiKeyStore & { lookups: string[] } = {
    lookups: [],
    async findByHash(keyHash) {
      store.lookups.push(keyHash);
      return keyHash === record.keyHash ? record : undefined;
    },
    save: async () => undefined,
    list: async () => [record],
    revoke: async () => false,
    markReplaced: async () => false,
  };
  return store;
}

const UNUSUAL_TOKENS: Record<string, string> = {
  empty: "",
  "one character": "x",
  "10 KB": "k".repeat(10 * 1024),
  "1 MB": "m".repeat(1024 * 1024),
  "non-ASCII": "petstore_local_ÄÖÜ€漢字🐶🐕‍🦺",
  "a lone surrogate": "petstore_local_\ud800",
  NUL: "petstore_local_\u0000",
  "only the prefix": "petstore_local_",
  "right length, non-ASCII letters": `petstore_local_${"é".repeat(43)}`,
  "right length, full-width digits": `petstore_local_${"１".repeat(43)}`,
  "right length, emoji (43 code points, 86 UTF-16 units)": `petstore_local_${"🐶".repeat(43)}`,
  "one character short": generateApiKey("local").slice(0, -1),
  "one character long": `${generateApiKey("local")}x`,
};

/** Tokens of every length and alphabet, and near-misses of the key shape. */
const anyToken = fc.oneof(
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: "grapheme", maxLength: 60 }),
  fc.string({ unit: "binary", minLength: 43, maxLength: 43 }).map((tail) => `${apiKeyPrefix("local")}${tail}`),
  fc.constantFrom(...stages).map(generateApiKey),
  fc.nat({ max: 20_000 }).map((length) => "a".repeat(length)),
);

describe("checking a token of unusual length or content", () => {
  it.each(Object.entries(UNUSUAL_TOKENS))("rejects %s without throwing or reading the store", async (_, token) => {
    const store = storeWith(generateApiKey("local"));
    const verifier = createApiKeyVerifier(store, "local");

    const verdict = await verifier.verify(token);

    expect(verdict).toEqual({ refused: "invalid" });
    expect(() => hasApiKeyShape(token, "local")).not.toThrow();
    expect(() => hashApiKey(token)).not.toThrow();
    expect(store.lookups).toEqual([]);
  });

  it("never throws and accepts only the one issued key, whatever the token", async () => {
    const key = generateApiKey("local");
    const verifier = createApiKeyVerifier(storeWith(key), "local");

    await fc.assert(
      fc.asyncProperty(anyToken, async (token) => {
        const verdict = await verifier.verify(token);

        expect(verdict).toEqual(token === key ? { keyId: "key_only", scope: "write" } : { refused: "invalid" });
        expect(hashApiKey(token)).toMatch(/^[0-9a-f]{64}$/);
      }),
      { numRuns: RUNS },
    );
    expect(await verifier.verify(key)).toEqual({ keyId: "key_only", scope: "write" });
  });

  it("answers 401, never 500, to any such token sent as a bearer credential", async () => {
    const key = generateApiKey("local");
    const listPets = createListPets(fakeDependencies(key, { keys: createApiKeyVerifier(storeWith(key), "local") }));

    await fc.assert(
      fc.asyncProperty(
        fc.oneof(anyToken, fc.constantFrom(...Object.values(UNUSUAL_TOKENS))),
        fc.constantFrom("Bearer ", "bearer ", "Bearer\t", "BEARER  "),
        async (token, scheme) => {
          const response = await invoke(listPets, { path: "/pets", headers: { Authorization: `${scheme}${token}` } });

          expect(response.status).toBe(token.trim() === key ? 200 : 401);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
