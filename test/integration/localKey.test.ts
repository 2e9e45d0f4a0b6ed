/** The key npm start serves with: pinned, saved in .data/ and reused, or new for an in-memory run. */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterEach, describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { ensureTable } from "../../local/dynamo";
import { localApiKey } from "../../local/localKey";
import { StartupError } from "../../local/startOptions";
import { documentClient, rawClient } from "../support/dynamo";

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function keyFile(): string {
  const folder = mkdtempSync(join(tmpdir(), "petstore-key-"));
  folders.push(folder);
  return join(folder, ".data/local-api-key");
}

/** The key store of a table of the test's own, on the shared dynalite. */
async function freshStore() {
  const table = `local-key-${randomUUID()}`;
  await ensureTable(rawClient(), table);
  const store = new DynamoApiKeyStore(documentClient(), table);
  const items = async () =>
    (await rawClient().send(new ScanCommand({ TableName: table }))).Items?.filter((item) => item.keyId) ?? [];
  const keyIdOf = async (key: string) => (await store.findByHash(hashApiKey(key)))?.keyId ?? "";
  return { store, items, keyIdOf };
}

describe("the local key", () => {
  it("is made on the first start, saved for its owner only, and only its hash is stored", async () => {
    const { store, items } = await freshStore();
    const file = keyFile();

    const { key, source } = await localApiKey(store, { pinned: undefined, keyFile: file });

    const stored = await items();
    expect(source).toBe("new");
    expect(readFileSync(file, "utf8")).toBe(`${key}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(stored.map((item) => item.sk?.S)).toEqual([hashApiKey(key)]);
    expect(JSON.stringify(stored)).not.toContain(key.slice(-20));
  });

  it("is the same at every later start, with no new record", async () => {
    const { store, items } = await freshStore();
    const file = keyFile();
    const first = await localApiKey(store, { pinned: undefined, keyFile: file });

    const later = [];
    for (let start = 0; start < 4; start++) later.push(await localApiKey(store, { pinned: undefined, keyFile: file }));

    expect(later.map((run) => run.key)).toEqual([first.key, first.key, first.key, first.key]);
    expect(later.every((run) => run.source === "saved")).toBe(true);
    expect(await items()).toHaveLength(1);
  });

  it("is stored in a table that does not have it yet, such as a new one", async () => {
    const file = keyFile();
    const { key } = await localApiKey((await freshStore()).store, { pinned: undefined, keyFile: file });
    const otherTable = await freshStore();

    const again = await localApiKey(otherTable.store, { pinned: undefined, keyFile: file });

    expect(again).toEqual({ key, source: "saved" });
    expect(await otherTable.store.findByHash(hashApiKey(key))).toMatchObject({ revokedAt: undefined });
  });

  it("is replaced when the saved one was revoked or the file holds no key", async () => {
    const { store, keyIdOf } = await freshStore();
    const file = keyFile();
    const first = await localApiKey(store, { pinned: undefined, keyFile: file });
    await store.revoke(await keyIdOf(first.key), new Date());

    const afterRevoke = await localApiKey(store, { pinned: undefined, keyFile: file });
    writeFileSync(file, "not a key\n");
    const afterDamage = await localApiKey(store, { pinned: undefined, keyFile: file });

    expect(afterRevoke.source).toBe("replaced");
    expect(afterRevoke.key).not.toBe(first.key);
    expect(afterDamage.source).toBe("replaced");
    expect(readFileSync(file, "utf8").trim()).toBe(afterDamage.key);
  });

  it("is new and written nowhere for an in-memory run", async () => {
    const file = keyFile();

    const { source } = await localApiKey((await freshStore()).store, { pinned: undefined, keyFile: undefined });

    expect(source).toBe("in-memory");
    expect(existsSync(file)).toBe(false);
  });

  it("is PETSTORE_API_KEY when pinned, stored once, and refused once revoked", async () => {
    const { store, items, keyIdOf } = await freshStore();
    const file = keyFile();
    const pinned = generateApiKey("local");

    const first = await localApiKey(store, { pinned, keyFile: file });
    const second = await localApiKey(store, { pinned, keyFile: file });
    await store.revoke(await keyIdOf(pinned), new Date());

    expect(first).toEqual({ key: pinned, source: "pinned" });
    expect(second).toEqual({ key: pinned, source: "pinned" });
    expect(await items()).toHaveLength(1);
    expect(existsSync(file)).toBe(false);
    await expect(localApiKey(store, { pinned, keyFile: file })).rejects.toThrow(StartupError);
    await expect(localApiKey(store, { pinned, keyFile: file })).rejects.toThrow(/^PETSTORE_API_KEY was revoked/);
  });
});
