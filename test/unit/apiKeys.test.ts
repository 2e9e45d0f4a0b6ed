import { describe, expect, it } from "vitest";
import {
  apiKeyPrefix,
  generateApiKey,
  hasApiKeyShape,
  hashApiKey,
  issueApiKey,
  KEY_CACHE_TTL_MS,
  stageOfKey,
} from "../../lib/auth/apiKeys";
import { InMemoryApiKeyStore } from "../../lib/auth/inMemoryApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { stages } from "../../lib/config";

describe("API key format", () => {
  it("names its environment in a prefix and carries 43 base62 characters (over 128 bits)", () => {
    const key = generateApiKey("staging");

    expect(key.startsWith("petstore_staging_")).toBe(true);
    expect(key.slice(apiKeyPrefix("staging").length)).toMatch(/^[0-9A-Za-z]{43}$/);
    expect(43 * Math.log2(62)).toBeGreaterThan(128);
  });

  it("never repeats", () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey("local")));

    expect(keys.size).toBe(1000);
  });

  it("is recognised only for its own stage", () => {
    const key = generateApiKey("prod");

    expect(hasApiKeyShape(key, "prod")).toBe(true);
    expect(hasApiKeyShape(key, "staging")).toBe(false);
    expect(hasApiKeyShape(`${key}x`, "prod")).toBe(false);
    expect(hasApiKeyShape(`${key.slice(0, -1)}!`, "prod")).toBe(false);
  });

  it("tells which environment a well-formed key is for, and nothing for anything else", () => {
    for (const stage of stages) expect(stageOfKey(generateApiKey(stage))).toBe(stage);
    const key = generateApiKey("staging");
    expect(stageOfKey(`${key}x`)).toBeUndefined();
    expect(stageOfKey(key.slice(0, -1))).toBeUndefined();
    expect(stageOfKey(`petstore_qa_${key.slice(-43)}`)).toBeUndefined();
    expect(stageOfKey(`${key}\n`)).toBeUndefined();
  });

  it("is stored only as its SHA-256 hash", async () => {
    const store = new InMemoryApiKeyStore();

    const { key, record } = await issueApiKey(store, "local", "ci");

    expect(record.keyHash).toBe(hashApiKey(key));
    expect(JSON.stringify([...store.records.values()])).not.toContain(key);
  });
});

describe("API key verification", () => {
  it("accepts an issued key and rejects unknown, malformed and other-stage keys", async () => {
    const store = new InMemoryApiKeyStore();
    const { key, record } = await issueApiKey(store, "local", "ci");
    const verifier = createApiKeyVerifier(store, "local");

    expect(await verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write" });
    expect(await verifier.verify(generateApiKey("local"))).toEqual({ refused: "invalid" });
    expect(await verifier.verify(generateApiKey("prod"))).toEqual({ refused: "invalid" });
    expect(await verifier.verify("")).toEqual({ refused: "invalid" });
    expect(await verifier.verify("x".repeat(100_000))).toEqual({ refused: "invalid" });
  });

  it("does not read the store for tokens that cannot be keys", async () => {
    const store = new InMemoryApiKeyStore();
    const verifier = createApiKeyVerifier(store, "local");

    await verifier.verify("not-a-key");
    await verifier.verify(`${apiKeyPrefix("local")}short`);

    expect(store.lookups).toBe(0);
  });

  it("reuses a lookup while it is fresh", async () => {
    const store = new InMemoryApiKeyStore();
    const { key } = await issueApiKey(store, "local", "ci");
    const verifier = createApiKeyVerifier(store, "local");

    await verifier.verify(key);
    await verifier.verify(key);

    expect(store.lookups).toBe(1);
  });

  it("answers at once, without a promise, for a key it has cached and for a token that cannot be a key", async () => {
    const store = new InMemoryApiKeyStore();
    const { key, record } = await issueApiKey(store, "local", "ci");
    const verifier = createApiKeyVerifier(store, "local");

    const first = verifier.verify(key);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual({ keyId: record.keyId, scope: "write" });

    expect(verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write" });
    expect(verifier.verify("not-a-key")).toEqual({ refused: "invalid" });
    expect(store.lookups).toBe(1);
  });

  it("stops accepting a revoked key within 60 seconds", async () => {
    const store = new InMemoryApiKeyStore();
    const { key, record } = await issueApiKey(store, "local", "ci");
    let now = 0;
    const verifier = createApiKeyVerifier(store, "local", () => now);
    expect(await verifier.verify(key)).toHaveProperty("keyId", record.keyId);

    await store.revoke(record.keyId, new Date());
    now += KEY_CACHE_TTL_MS + 1;

    expect(KEY_CACHE_TTL_MS + 1).toBeLessThanOrEqual(60_000);
    expect(await verifier.verify(key)).toEqual({ refused: "revoked" });
  });
});
