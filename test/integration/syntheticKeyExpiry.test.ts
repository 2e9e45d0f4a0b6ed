/**
 * Synthetic keys, against dynalite: their text says they are synthetic, their record expires (in
 * the table's TTL attribute, and refused by the verifier from that instant, cache included), and
 * a key whose text claims synthetic is refused unless its record agrees. Ordinary keys expire only when
 * given an expiry (test/integration/keyLifecycle.test.ts).
 */
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import {
  generateApiKey,
  hashApiKey,
  isSyntheticApiKey,
  issueApiKey,
  KEY_CACHE_TTL_MS,
  SYNTHETIC_KEY_LIFETIME_SECONDS,
  syntheticApiKeyPrefix,
} from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { epochSeconds, itemKeys, TTL_ATTRIBUTE } from "../../lib/db/table";
import { documentClient, tableName } from "../support/dynamo";

const store = () => new DynamoApiKeyStore(documentClient(), tableName());
const ISSUED = new Date("2026-05-01T10:00:00.250Z");
const EXPIRY_MS = (Math.floor(ISSUED.getTime() / 1000) + SYNTHETIC_KEY_LIFETIME_SECONDS) * 1000;

describe("a synthetic key's text", () => {
  it("carries the synthetic mark, which no ordinary key has", async () => {
    const { key: synthetic } = await issueApiKey(store(), "staging", "smoke", { synthetic: true });
    const { key: ordinary } = await issueApiKey(store(), "staging", "mobile app");

    expect(synthetic.startsWith(syntheticApiKeyPrefix("staging"))).toBe(true);
    expect(isSyntheticApiKey(synthetic)).toBe(true);
    expect(ordinary).toMatch(/^petstore_staging_[0-9A-Za-z]{43}$/);
    expect(isSyntheticApiKey(ordinary)).toBe(false);
  });

  it("cannot be issued for an ordinary record, nor an ordinary text for a synthetic one", async () => {
    await expect(
      issueApiKey(store(), "local", "forged", { key: generateApiKey("local", { synthetic: true }) }),
    ).rejects.toThrow("An API key for local must look like petstore_local_<43 letters or digits>.");
    await expect(
      issueApiKey(store(), "local", "unmarked", { key: generateApiKey("local"), synthetic: true }),
    ).rejects.toThrow("A synthetic API key for local must look like petstore_local_synthetic_<43 letters or digits>.");
  });

  it("is refused by the verifier when its record is not synthetic", async () => {
    // A record written around issueApiKey, as a bug or a hand edit could.
    const forged = generateApiKey("local", { synthetic: true });
    await store().save({
      keyId: "key_forgedRecord",
      name: "forged",
      keyHash: hashApiKey(forged),
      createdAt: ISSUED.toISOString(),
    });
    const verifier = createApiKeyVerifier(store(), "local");

    expect(await verifier.verify(forged)).toEqual({ refused: "invalid" });
  });
});

describe("a synthetic key's expiry", () => {
  it("is stored in the table's TTL attribute, in epoch seconds, SYNTHETIC_KEY_LIFETIME_SECONDS after issue", async () => {
    const { record } = await issueApiKey(store(), "local", "smoke", { synthetic: true, now: ISSUED });

    const item = await documentClient().send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.apiKey(record.keyHash) }),
    );

    expect(SYNTHETIC_KEY_LIFETIME_SECONDS).toBe(30 * 24 * 60 * 60);
    expect(item.Item?.[TTL_ATTRIBUTE]).toBe(epochSeconds(new Date(EXPIRY_MS)));
    expect(record.expiresAt).toBe(new Date(EXPIRY_MS).toISOString());
    expect(await store().findByHash(record.keyHash)).toMatchObject({ synthetic: true, expiresAt: record.expiresAt });
  });

  it("is honoured at the boundary: the key works a millisecond before, and not at the instant itself", async () => {
    const { key, record } = await issueApiKey(store(), "local", "smoke", { synthetic: true, now: ISSUED });

    const before = createApiKeyVerifier(store(), "local", () => EXPIRY_MS - 1);
    const at = createApiKeyVerifier(store(), "local", () => EXPIRY_MS);

    expect(await before.verify(key)).toEqual({ keyId: record.keyId, scope: "write", synthetic: true });
    // The record is still in the table (DynamoDB deletes it days later, dynalite never): refused all the same.
    expect(await store().findByHash(record.keyHash)).toBeDefined();
    expect(await at.verify(key)).toEqual({ refused: "expired", expiredAt: record.expiresAt });
  });

  it("is not outlived by the verifier's cache", async () => {
    const { key, record } = await issueApiKey(store(), "local", "smoke", { synthetic: true, now: ISSUED });
    let now = EXPIRY_MS - KEY_CACHE_TTL_MS / 2;
    const verifier = createApiKeyVerifier(store(), "local", () => now);
    expect(await verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write", synthetic: true });

    now = EXPIRY_MS;

    // Within what would be the cache's 30 s, but past the key's expiry.
    expect(await verifier.verify(key)).toEqual({ refused: "expired", expiredAt: record.expiresAt });
  });

  it("can be chosen for a key, and is absent for a key whose life a stack manages", async () => {
    const { record: short } = await issueApiKey(store(), "local", "run", {
      synthetic: true,
      now: ISSUED,
      lifetimeSeconds: 3600,
    });
    const { record: managed } = await issueApiKey(store(), "local", "stack", {
      synthetic: true,
      lifetimeSeconds: null,
    });

    expect(short.expiresAt).toBe(new Date(Math.floor(ISSUED.getTime() / 1000) * 1000 + 3_600_000).toISOString());
    expect((await store().findByHash(managed.keyHash))?.expiresAt).toBeUndefined();
  });
});

describe("an ordinary key", () => {
  it("given no expiry never expires: no TTL attribute, accepted however late", async () => {
    const { key, record } = await issueApiKey(store(), "local", "mobile app", { now: ISSUED });
    const verifier = createApiKeyVerifier(store(), "local", () => EXPIRY_MS * 10);

    const item = await documentClient().send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.apiKey(record.keyHash) }),
    );

    expect(item.Item).not.toHaveProperty(TTL_ATTRIBUTE);
    expect(record.expiresAt).toBeUndefined();
    expect(await verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write" });
  });

  it("keeps working when its record was made before the synthetic mark existed and is synthetic", async () => {
    // The check's keys of generation 1: ordinary text, synthetic record, no expiry.
    const key = generateApiKey("local");
    await documentClient().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...itemKeys.apiKey(hashApiKey(key)),
          keyId: "key_generation1",
          name: "old",
          createdAt: ISSUED.toISOString(),
          synthetic: true,
        },
      }),
    );

    expect(await createApiKeyVerifier(store(), "local").verify(key)).toEqual({
      keyId: "key_generation1",
      scope: "write",
      synthetic: true,
    });
  });
});
