/**
 * The key npm start serves with: pinned, or new at every start with the earlier starts' keys
 * revoked; and the key file earlier versions left in .data/ deleted.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterEach, describe, expect, it } from "vitest";
import { type ApiKeyStore, generateApiKey, hashApiKey, issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier, isRefusal } from "../../lib/auth/verifier";
import { ensureTable } from "../../local/dynamo";
import { deleteKeyFileOfEarlierVersions, localApiKey, REPLACED_BY_RESTART_NOTE } from "../../local/localKey";
import { StartupError } from "../../local/startOptions";
import { documentClient, rawClient } from "../support/dynamo";

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** The key store of a table of the test's own, on the shared dynalite. */
async function freshStore() {
  const table = `local-key-${randomUUID()}`;
  await ensureTable(rawClient(), table);
  const store = new DynamoApiKeyStore(documentClient(), table);
  const items = async () =>
    (await rawClient().send(new ScanCommand({ TableName: table }))).Items?.filter((item) => item.keyId) ?? [];
  return { store, items };
}

/** The API's verdict on `key` now (a verifier of its own, so no cached answer). */
async function verdictOn(store: ApiKeyStore, key: string) {
  return createApiKeyVerifier(store, "local").verify(key);
}

/** Whether the API would take `key` now. */
async function works(store: ApiKeyStore, key: string): Promise<boolean> {
  return !isRefusal(await verdictOn(store, key));
}

const unpinned = { pinned: undefined };

describe("the local key without PETSTORE_API_KEY", () => {
  it("is new at every start, and each start revokes the one before: five starts leave one working", async () => {
    const { store } = await freshStore();

    const starts = [];
    for (let start = 0; start < 5; start++) starts.push(await localApiKey(store, unpinned));

    const keys = starts.map((start) => start.key);
    expect(new Set(keys).size).toBe(5);
    expect(starts.map((start) => (start.source === "new" ? start.revoked : "pinned"))).toEqual([0, 1, 1, 1, 1]);
    expect(await Promise.all(keys.map((key) => works(store, key)))).toEqual([false, false, false, false, true]);
    const npmStartKeys = (await store.list()).filter((record) => record.name === "npm start");
    expect(npmStartKeys.filter((record) => !record.revokedAt)).toHaveLength(1);
  });

  it("revokes the earlier start's key with a note its holder is shown: the restart replaced it", async () => {
    const { store } = await freshStore();
    const first = await localApiKey(store, unpinned);

    await localApiKey(store, unpinned);

    expect(await verdictOn(store, first.key)).toEqual({ refused: "revoked", note: REPLACED_BY_RESTART_NOTE });
  });

  it("stores only the key's hash", async () => {
    const { store, items } = await freshStore();

    const { key } = await localApiKey(store, unpinned);

    const stored = await items();
    expect(stored.map((item) => item.sk?.S)).toEqual([hashApiKey(key)]);
    expect(JSON.stringify(stored)).not.toContain(key.slice(-20));
  });

  it("revokes the keys earlier versions of npm start made, by the names they gave them", async () => {
    const { store } = await freshStore();
    const earlier = [
      await issueApiKey(store, "local", "npm start 2026-03-01T09:15:02.137Z"),
      await issueApiKey(store, "local", "npm start --in-memory"),
      await issueApiKey(store, "local", "npm start"),
    ];

    const start = await localApiKey(store, unpinned);

    expect(start).toMatchObject({ source: "new", revoked: 3 });
    expect(await Promise.all(earlier.map(({ key }) => works(store, key)))).toEqual([false, false, false]);
    expect(await works(store, start.key)).toBe(true);
  });

  it("leaves every other key working: made with npm run keys, pinned, or merely named like npm start's", async () => {
    const { store } = await freshStore();
    const pinned = generateApiKey("local");
    await localApiKey(store, { pinned });
    const others = [
      await issueApiKey(store, "local", "ci"),
      await issueApiKey(store, "local", "npm start tests"),
      await issueApiKey(store, "local", "my npm start"),
    ];

    for (let start = 0; start < 3; start++) await localApiKey(store, unpinned);

    expect(await works(store, pinned)).toBe(true);
    expect(await Promise.all(others.map(({ key }) => works(store, key)))).toEqual([true, true, true]);
  });

  it("does not count or touch keys that were already revoked", async () => {
    const { store } = await freshStore();
    const revokedEarlier = await issueApiKey(store, "local", "npm start");
    const revokedAt = new Date("2026-01-01T00:00:00.000Z");
    await store.revoke(revokedEarlier.record.keyId, revokedAt);

    const start = await localApiKey(store, unpinned);

    expect(start).toMatchObject({ source: "new", revoked: 0 });
    expect((await store.findByHash(revokedEarlier.record.keyHash))?.revokedAt).toBe(revokedAt.toISOString());
  });
});

describe("the local key pinned with PETSTORE_API_KEY", () => {
  it("is stored once, kept by unpinned starts in between, and refused once revoked", async () => {
    const { store, items } = await freshStore();
    const pinned = generateApiKey("local");

    const first = await localApiKey(store, { pinned });
    await localApiKey(store, unpinned);
    const second = await localApiKey(store, { pinned });
    const record = await store.findByHash(hashApiKey(pinned));
    await store.revoke(record?.keyId ?? "", new Date());

    expect(first).toEqual({ key: pinned, source: "pinned", madeByNpmStart: false });
    expect(second).toEqual({ key: pinned, source: "pinned", madeByNpmStart: false });
    expect(record?.name).toBe("PETSTORE_API_KEY");
    expect((await items()).filter((item) => item.name?.S === "PETSTORE_API_KEY")).toHaveLength(1);
    await expect(localApiKey(store, { pinned })).rejects.toThrow(StartupError);
    await expect(localApiKey(store, { pinned })).rejects.toThrow(/^PETSTORE_API_KEY was revoked/);
  });

  it("is said to be one the next unpinned start revokes when an earlier npm start made it", async () => {
    const { store } = await freshStore();
    const { key } = await localApiKey(store, unpinned);

    const pinned = await localApiKey(store, { pinned: key });
    await localApiKey(store, unpinned);

    expect(pinned).toEqual({ key, source: "pinned", madeByNpmStart: true });
    expect(await works(store, key)).toBe(false);
  });
});

describe("the key file of earlier versions", () => {
  function dataFolder(): string {
    const folder = join(mkdtempSync(join(tmpdir(), "petstore-key-")), ".data");
    folders.push(join(folder, ".."));
    mkdirSync(join(folder, "dynamodb"), { recursive: true });
    return folder;
  }

  it("is deleted with any partial copy, and nothing else in .data/ is", async () => {
    const folder = dataFolder();
    writeFileSync(join(folder, "local-api-key"), `${generateApiKey("local")}\n`, { mode: 0o600 });
    writeFileSync(join(folder, "local-api-key.4242.partial"), `${generateApiKey("local")}\n`);
    writeFileSync(join(folder, "local-api-key-notes"), "not ours to delete");

    const deleted = await deleteKeyFileOfEarlierVersions(join(folder, "local-api-key"));

    expect(deleted).toBe(true);
    expect(readdirSync(folder).sort()).toEqual(["dynamodb", "local-api-key-notes"]);
  });

  it("is reported absent when there is none, or no .data/ at all", async () => {
    const folder = dataFolder();

    expect(await deleteKeyFileOfEarlierVersions(join(folder, "local-api-key"))).toBe(false);
    expect(await deleteKeyFileOfEarlierVersions(join(folder, "missing/local-api-key"))).toBe(false);
    expect(existsSync(join(folder, "dynamodb"))).toBe(true);
  });
});
