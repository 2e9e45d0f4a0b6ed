/**
 * A key's life, against dynalite: its scope, an expiry for any key (kept on the record of an ordinary
 * key, refused from that instant, cache included), rotation with an overlap, and a revocation that
 * tells its holder why.
 */
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  generateApiKey,
  hashApiKey,
  issueApiKey,
  KEY_CACHE_TTL_MS,
  KeyRotationError,
  MIN_ROTATION_OVERLAP_SECONDS,
  rotateApiKey,
} from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { itemKeys, TTL_ATTRIBUTE } from "../../lib/db/table";
import { documentClient, tableName } from "../support/dynamo";

const store = () => new DynamoApiKeyStore(documentClient(), tableName());
const ISSUED = new Date("2027-02-01T09:30:00.000Z");
const HOUR_MS = 3_600_000;

describe("a key's scope", () => {
  it("is read or write as issued, and write for a record made before scopes existed", async () => {
    const { key: readKey, record: read } = await issueApiKey(store(), "local", "dashboard", { scope: "read" });
    const { key: writeKey, record: write } = await issueApiKey(store(), "local", "backend");
    const oldKey = generateApiKey("local");
    await documentClient().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...itemKeys.apiKey(hashApiKey(oldKey)),
          keyId: "key_beforeScopes",
          name: "old",
          createdAt: "2026-01-01",
        },
      }),
    );
    const verifier = createApiKeyVerifier(store(), "local");

    expect(await verifier.verify(readKey)).toEqual({ keyId: read.keyId, scope: "read" });
    expect(await verifier.verify(writeKey)).toEqual({ keyId: write.keyId, scope: "write" });
    expect(await verifier.verify(oldKey)).toEqual({ keyId: "key_beforeScopes", scope: "write" });
    expect(await store().findByHash(read.keyHash)).toMatchObject({ scope: "read" });
  });

  it("must be read or write", async () => {
    await expect(issueApiKey(store(), "local", "x", { scope: "admin" as never })).rejects.toThrow(
      'A key\'s scope is read or write, not "admin".',
    );
  });
});

describe("an ordinary key's expiry", () => {
  it("is kept outside the TTL attribute, so that the record outlives it and its holder is told", async () => {
    const { record } = await issueApiKey(store(), "local", "contractor", { now: ISSUED, lifetimeSeconds: 3600 });

    const item = await documentClient().send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.apiKey(record.keyHash) }),
    );

    expect(record.expiresAt).toBe(new Date(ISSUED.getTime() + HOUR_MS).toISOString());
    expect(item.Item).not.toHaveProperty(TTL_ATTRIBUTE);
    expect(item.Item?.validUntil).toBe((ISSUED.getTime() + HOUR_MS) / 1000);
    expect(await store().findByHash(record.keyHash)).toMatchObject({ expiresAt: record.expiresAt });
  });

  it("is honoured at the boundary: accepted a millisecond before, refused as expired at the instant", async () => {
    const { key, record } = await issueApiKey(store(), "local", "contractor", { now: ISSUED, lifetimeSeconds: 3600 });
    const end = ISSUED.getTime() + HOUR_MS;

    expect(await createApiKeyVerifier(store(), "local", () => end - 1).verify(key)).toEqual({
      keyId: record.keyId,
      scope: "write",
    });
    expect(await createApiKeyVerifier(store(), "local", () => end).verify(key)).toEqual({
      refused: "expired",
      expiredAt: record.expiresAt,
    });
  });

  it("is not outlived by the verifier's cache", async () => {
    const { key, record } = await issueApiKey(store(), "local", "contractor", { now: ISSUED, lifetimeSeconds: 3600 });
    const end = ISSUED.getTime() + HOUR_MS;
    let now = end - KEY_CACHE_TTL_MS / 3;
    const verifier = createApiKeyVerifier(store(), "local", () => now);
    expect(await verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write" });
    now = end - 1;
    expect(verifier.verify(key)).toEqual({ keyId: record.keyId, scope: "write" });

    now = end;

    // The cached admission would last another 20 s; the key does not.
    expect(await verifier.verify(key)).toEqual({ refused: "expired", expiredAt: record.expiresAt });
  });
});

describe("rotating a key", () => {
  it("issues a key with the same name, scope and kind, and lets the old one work until the overlap ends", async () => {
    const { key: oldKey, record: old } = await issueApiKey(store(), "local", "partner", { now: ISSUED, scope: "read" });
    const rotatedAt = new Date(ISSUED.getTime() + 24 * HOUR_MS);

    const { key, record, replaced } = await rotateApiKey(store(), "local", old.keyId, {
      now: rotatedAt,
      overlapSeconds: 2 * 3600,
    });
    const overlapEnd = rotatedAt.getTime() + 2 * HOUR_MS;

    expect(record).toMatchObject({ name: "partner", scope: "read", replaces: old.keyId });
    expect(record.synthetic).toBeUndefined();
    expect(key).not.toBe(oldKey);
    expect(replaced.expiresAt).toBe(new Date(overlapEnd).toISOString());
    const stored = await store().list();
    expect(stored.find((candidate) => candidate.keyId === old.keyId)).toMatchObject({
      replacedBy: record.keyId,
      expiresAt: new Date(overlapEnd).toISOString(),
    });
    expect(await createApiKeyVerifier(store(), "local", () => overlapEnd - 1).verify(oldKey)).toEqual({
      keyId: old.keyId,
      scope: "read",
    });
    expect(await createApiKeyVerifier(store(), "local", () => overlapEnd).verify(oldKey)).toEqual({
      refused: "expired",
      expiredAt: new Date(overlapEnd).toISOString(),
    });
    expect(await createApiKeyVerifier(store(), "local", () => overlapEnd).verify(key)).toEqual({
      keyId: record.keyId,
      scope: "read",
    });
  });

  it("keeps the old key a week by default, and never past its own expiry", async () => {
    const { record: lasting } = await issueApiKey(store(), "local", "lasting", { now: ISSUED });
    const { record: ending } = await issueApiKey(store(), "local", "ending", { now: ISSUED, lifetimeSeconds: 3600 });

    const byDefault = await rotateApiKey(store(), "local", lasting.keyId, { now: ISSUED });
    const capped = await rotateApiKey(store(), "local", ending.keyId, { now: ISSUED });

    expect(DEFAULT_ROTATION_OVERLAP_SECONDS).toBe(7 * 24 * 3600);
    expect(byDefault.replaced.expiresAt).toBe(new Date(ISSUED.getTime() + 7 * 24 * HOUR_MS).toISOString());
    expect(capped.replaced.expiresAt).toBe(ending.expiresAt);
    expect((await store().findByHash(ending.keyHash))?.expiresAt).toBe(ending.expiresAt);
  });

  it("gives a synthetic key a synthetic replacement with a synthetic key's lifetime", async () => {
    const { record: old } = await issueApiKey(store(), "staging", "smoke", { synthetic: true, now: ISSUED });

    const { key, record } = await rotateApiKey(store(), "staging", old.keyId, { now: ISSUED, overlapSeconds: 60 });

    expect(key.startsWith("petstore_staging_synthetic_")).toBe(true);
    expect(record).toMatchObject({ synthetic: true, name: "smoke", expiresAt: old.expiresAt });
    const item = await documentClient().send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.apiKey(old.keyHash) }),
    );
    // A synthetic key's expiry stays in the TTL attribute, so that DynamoDB still deletes its record.
    expect(item.Item?.[TTL_ATTRIBUTE]).toBe(ISSUED.getTime() / 1000 + 60);
  });

  it("refuses, in one line, an unknown, revoked, expired or already replaced key", async () => {
    const { record: revoked } = await issueApiKey(store(), "local", "revoked", { now: ISSUED });
    await store().revoke(revoked.keyId, ISSUED);
    const { record: expired } = await issueApiKey(store(), "local", "expired", { now: ISSUED, lifetimeSeconds: 1 });
    const { record: replaced } = await issueApiKey(store(), "local", "replaced", { now: ISSUED });
    const { record: successor } = await rotateApiKey(store(), "local", replaced.keyId, { now: ISSUED });
    const later = new Date(ISSUED.getTime() + 5000);

    const refusal = (keyId: string) => rotateApiKey(store(), "local", keyId, { now: later }).catch((error) => error);

    for (const [keyId, message] of [
      ["key_nobodyHasThis", "No key has id key_nobodyHasThis."],
      [revoked.keyId, `${revoked.keyId} was revoked; create a new key instead.`],
      [expired.keyId, `${expired.keyId} has expired; create a new key instead.`],
      [replaced.keyId, `${replaced.keyId} was already replaced by ${successor.keyId}; rotate that one.`],
    ] as const) {
      const error = await refusal(keyId);
      expect(error).toBeInstanceOf(KeyRotationError);
      expect(error.message).toBe(message);
    }
  });
});

describe("a revocation's note", () => {
  it("is kept on the record and given with the refusal; a plain revocation has none", async () => {
    const { key: noted, record: notedRecord } = await issueApiKey(store(), "local", "noted");
    const { key: plain, record: plainRecord } = await issueApiKey(store(), "local", "plain");
    await store().revoke(notedRecord.keyId, ISSUED, "it was replaced when the server restarted");
    await store().revoke(plainRecord.keyId, ISSUED);
    const verifier = createApiKeyVerifier(store(), "local");

    expect(await verifier.verify(noted)).toEqual({
      refused: "revoked",
      note: "it was replaced when the server restarted",
    });
    expect(await verifier.verify(plain)).toEqual({ refused: "revoked" });
  });
});

describe("a rotation's overlap", () => {
  it("is at least as long as a server reuses a key's lookup, so that no cache serves the old key past it", async () => {
    const { key, record } = await issueApiKey(store(), "local", "leaky", { now: ISSUED });
    const overlap = MIN_ROTATION_OVERLAP_SECONDS;
    let now = ISSUED.getTime();
    const verifier = createApiKeyVerifier(store(), "local", () => now);
    // A warm container looked the key up a moment before the rotation.
    expect(await verifier.verify(key)).toMatchObject({ keyId: record.keyId });

    await expect(
      rotateApiKey(store(), "local", record.keyId, { now: ISSUED, overlapSeconds: overlap - 1 }),
    ).rejects.toThrow(
      "The overlap must be at least 30s, the time a server may keep using its lookup of the old key; to cut a leaked key off, revoke it.",
    );
    const { replaced } = await rotateApiKey(store(), "local", record.keyId, { now: ISSUED, overlapSeconds: overlap });
    now = Date.parse(replaced.expiresAt);

    expect(overlap * 1000).toBeGreaterThanOrEqual(KEY_CACHE_TTL_MS);
    expect(await verifier.verify(key)).toEqual({ refused: "expired", expiredAt: replaced.expiresAt });
  });
});
