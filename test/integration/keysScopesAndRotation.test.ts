/**
 * `npm run keys` with scopes, expiries for every key, rotation and --unused-for, against dynalite:
 * runKeys in this process with a clock the test sets, and what it wrote read back from the table.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  hashApiKey,
  issueApiKey,
  MIN_ROTATION_OVERLAP_SECONDS,
} from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { DynamoKeyUsageStore } from "../../lib/auth/dynamoKeyUsageStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { ensureTable } from "../../local/dynamo";
import { NPM_START_KEY_NAME } from "../../local/localKey";
import { explainFailure, parseKeysArguments, runKeys, UsageError } from "../../scripts/keys";
import { documentClient, rawClient, tableName } from "../support/dynamo";
import { projectRoot, runToEnd } from "../support/processes";

const DAY_MS = 86_400_000;
const KEY_LINE = /^petstore_local_[0-9A-Za-z]{43}$/;

const envFor = (table: string) => ({
  DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
  PETS_TABLE_NAME: table,
  DYNAMODB_PORT: "",
});

/** runKeys in this process against `table` (this file's unless given), at `now`; what it printed and warned. */
async function keys(args: string[], { now = new Date(), table = tableName() }: { now?: Date; table?: string } = {}) {
  const printed: string[] = [];
  const warned: string[] = [];
  await runKeys(
    args,
    (line) => printed.push(...line.split("\n")),
    (line) => warned.push(line),
    { env: envFor(table), now: () => now },
  );
  return { printed, warned };
}

/** The rows of `keys list` (after the header) as cells, by key id. */
function rowsOf(printed: readonly string[]): Map<string, string[]> {
  const [header = "", ...rows] = printed;
  expect(header).toMatch(/^ID +NAME +CREATED +REVOKED +SYNTHETIC +SCOPE +EXPIRES +REPLACED BY +REPLACES +LAST USED$/);
  return new Map(rows.map((row) => row.split(/ {2,}/)).map((cells) => [cells[0] as string, cells]));
}

const store = (table = tableName()) => new DynamoApiKeyStore(documentClient(), table);

/** A table of the test's own, for listings that must show exactly the keys it made. */
async function freshTable(): Promise<string> {
  const table = `test-${randomUUID()}`;
  await ensureTable(rawClient(), table);
  return table;
}

describe("keys create --scope", () => {
  it("makes a read key: the list shows read, the verifier gives it scope read, the message says read-only", async () => {
    const table = await freshTable();

    const created = await keys(["create", "--name", "dashboard", "--scope", "read"], { table });
    const key = created.printed.at(-1) ?? "";
    const record = await store(table).findByHash(hashApiKey(key));
    const listed = rowsOf((await keys(["list"], { table })).printed);

    expect(created.printed[0]).toMatch(/^Created read-only key key_\w+ \(dashboard\) /);
    expect(key).toMatch(KEY_LINE);
    expect(listed.get(record?.keyId ?? "")?.slice(1, 2)).toEqual(["dashboard"]);
    expect(listed.get(record?.keyId ?? "")?.[5]).toBe("read");
    expect(await createApiKeyVerifier(store(table), "local").verify(key)).toMatchObject({ scope: "read" });
  });

  it("makes a write key without the option, as before", async () => {
    const { printed } = await keys(["create", "--name", "writer", "--quiet"]);

    expect((await store().findByHash(hashApiKey(printed[0] ?? "")))?.scope).toBe("write");
  });

  it("refuses another scope in one line, as a command, and writes no key", async () => {
    const name = `admin ${Date.now()}`;

    const result = await runToEnd("scripts/keys.ts", ["create", "--name", name, "--scope", "admin"], {
      cwd: projectRoot,
      env: envFor(tableName()),
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe('keys: --scope must be read or write, not "admin".');
    expect((await store().list()).map((record) => record.name)).not.toContain(name);
  });
});

describe("keys create --expires-in and --expires-at, for every key", () => {
  const now = new Date("2026-12-01T12:00:00.400Z");

  it("gives an ordinary key an expiry with --expires-in, past the synthetic keys' 30 days", async () => {
    const { printed, warned } = await keys(["create", "--name", "contractor", "--expires-in", "12w", "--quiet"], {
      now,
    });
    const record = await store().findByHash(hashApiKey(printed[0] ?? ""));

    expect(record?.expiresAt).toBe("2027-02-23T12:00:00.000Z");
    expect(warned).toContain(`keys: key ${record?.keyId} created. It expires at 2027-02-23T12:00:00.000Z.`);
  });

  it("makes a key expire at the instant --expires-at names, a date meaning 00:00 UTC", async () => {
    const { printed } = await keys(["create", "--name", "until March", "--expires-at", "2027-03-01"], { now });
    const record = await store().findByHash(hashApiKey(printed.at(-1) ?? ""));

    expect(printed[0]).toContain("It expires at 2027-03-01T00:00:00.000Z.");
    expect(record?.expiresAt).toBe("2027-03-01T00:00:00.000Z");
  });

  it.each([
    [
      ["--expires-at", "2026-11-30T00:00:00Z"],
      "--expires-at must be in the future; 2026-11-30T00:00:00.000Z has passed.",
    ],
    [["--expires-at", "2027-03-01", "--expires-in", "1d"], "Give --expires-in or --expires-at, not both."],
    [
      ["--synthetic", "--expires-at", "2027-03-01"],
      "--expires-at: a synthetic key lives at most 30d (its default lifetime).",
    ],
  ])("refuses %j in one line before anything is written", async (extra, message) => {
    const name = `refused ${randomUUID()}`;

    const creating = keys(["create", "--name", name, ...extra], { now });

    await expect(creating).rejects.toThrow(UsageError);
    await expect(creating).rejects.toThrow(message);
    expect(explainFailure(await creating.catch((error: unknown) => error))).toBe(message);
    expect((await store().list()).map((record) => record.name)).not.toContain(name);
  });
});

describe("keys rotate", () => {
  const created = new Date("2026-10-01T08:00:00Z");
  const now = new Date("2026-12-01T12:00:00Z");

  async function keyMadeAt(name: string, args: string[] = []) {
    const { printed } = await keys(["create", "--name", name, "--quiet", ...args], { now: created });
    const record = await store().findByHash(hashApiKey(printed[0] ?? ""));
    return { key: printed[0] ?? "", keyId: record?.keyId ?? "" };
  }

  it("prints the new key once, keeps the old one working for the overlap, and the list links the two", async () => {
    const old = await keyMadeAt("mobile app", ["--scope", "read"]);

    const { printed } = await keys(["rotate", old.keyId, "--overlap", "2d"], { now });
    const newKey = printed.find((line) => KEY_LINE.test(line)) ?? "";
    const replacement = await store().findByHash(hashApiKey(newKey));
    const rows = rowsOf((await keys(["list"], { now })).printed);

    expect(printed.filter((line) => KEY_LINE.test(line))).toEqual([newKey]);
    expect(newKey).not.toBe(old.key);
    expect(printed[0]).toBe(
      `Rotated ${old.keyId} (mobile app) in ${inject("dynamoEndpoint")}: its replacement is ${replacement?.keyId}. ${old.keyId} keeps working until 2026-12-03T12:00:00.000Z (in 2 days), then expires. The new key is shown once; store it now:`,
    );
    // ID, NAME, CREATED, REVOKED, SYNTHETIC, SCOPE, EXPIRES, REPLACED BY, REPLACES, LAST USED
    expect(rows.get(old.keyId)?.slice(5)).toEqual([
      "read",
      "2026-12-03T12:00:00.000Z",
      replacement?.keyId,
      "-",
      "never",
    ]);
    expect(rows.get(replacement?.keyId ?? "")?.slice(1, 2)).toEqual(["mobile app"]);
    expect(rows.get(replacement?.keyId ?? "")?.slice(5)).toEqual(["read", "-", "-", old.keyId, "never"]);
    const verifier = (at: Date) => createApiKeyVerifier(store(), "local", () => at.getTime());
    expect(await verifier(new Date("2026-12-03T11:59:59Z")).verify(old.key)).toMatchObject({ keyId: old.keyId });
    expect(await verifier(new Date("2026-12-03T12:00:00Z")).verify(old.key)).toMatchObject({ refused: "expired" });
  });

  it("overlaps a week by default; with --quiet only the key is on standard output", async () => {
    const old = await keyMadeAt("ci");

    const { printed, warned } = await keys(["rotate", old.keyId, "--quiet"], { now });
    const replacement = await store().findByHash(hashApiKey(printed[0] ?? ""));

    expect(printed).toEqual([expect.stringMatching(KEY_LINE)]);
    expect(warned).toContain(
      `keys: ${replacement?.keyId} replaces ${old.keyId} (ci). ${old.keyId} keeps working until 2026-12-08T12:00:00.000Z (in 7 days), then expires.`,
    );
  });

  it("refuses an overlap shorter than a server's cached lookup of the key, in one line, before any key is made", async () => {
    const old = await keyMadeAt("leaked");
    const before = (await store().list()).length;

    const error = await keys(["rotate", old.keyId, "--overlap", "0s"], { now }).catch((caught: unknown) => caught);

    expect(explainFailure(error)).toBe(
      `The overlap must be at least ${MIN_ROTATION_OVERLAP_SECONDS}s, the time a server may keep using its lookup of the old key; to cut a leaked key off, revoke it.`,
    );
    expect((await store().list()).length).toBe(before);
    expect((await store().list()).find((record) => record.keyId === old.keyId)?.expiresAt).toBeUndefined();
  });

  it.each([
    [
      "npm start's own key (each start replaces it)",
      async () => {
        const { record } = await issueApiKey(store(), "local", NPM_START_KEY_NAME, { now: created });
        return {
          keyId: record.keyId,
          message: `${record.keyId} is npm start's own key, which each start replaces; for a key that lasts, create one and pin it with PETSTORE_API_KEY.`,
        };
      },
    ],
    [
      "a revoked key",
      async () => {
        const old = await keyMadeAt("gone");
        await store().revoke(old.keyId, created);
        return { keyId: old.keyId, message: `${old.keyId} was revoked; create a new key instead.` };
      },
    ],
    ["an unknown key", async () => ({ keyId: "key_nonexistent0", message: "No key has id key_nonexistent0." })],
    [
      "a key already rotated",
      async () => {
        const old = await keyMadeAt("twice");
        await keys(["rotate", old.keyId, "--quiet"], { now });
        return {
          keyId: old.keyId,
          message: new RegExp(`^${old.keyId} was already replaced by key_\\w+; rotate that one\\.$`),
        };
      },
    ],
  ])("refuses %s in one line and makes no key", async (_, setUp) => {
    const { keyId, message } = await setUp();
    const before = (await store().list()).length;

    const error = await keys(["rotate", keyId], { now }).catch((caught: unknown) => caught);

    expect(explainFailure(error)).toMatch(message);
    expect((await store().list()).length).toBe(before);
  });

  it("as a command: a bad key id exits 1 with one line", async () => {
    const result = await runToEnd("scripts/keys.ts", ["rotate", "key_nonexistent0"], {
      cwd: projectRoot,
      env: envFor(tableName()),
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe("keys: No key has id key_nonexistent0.");
  });

  it("takes --overlap only for rotate, and reads it as every other duration", () => {
    expect(() => parseKeysArguments(["create", "--name", "x", "--overlap", "1d"], {})).toThrow(
      "--overlap is an option of rotate.",
    );
    expect(() => parseKeysArguments(["rotate", "key_x", "--overlap", "1y"], {})).toThrow(
      '--overlap must be a whole number and a unit, s, m, h, d or w (for example 1h or 30d), not "1y".',
    );
  });
});

describe("keys list: last use and --unused-for", () => {
  const now = new Date("2026-12-01T12:00:00Z");
  const longAgo = new Date("2026-01-01T00:00:00Z");

  it("shows each key's last use per operation, newest first, and with --unused-for 90d only working keys unused that long", async () => {
    const table = await freshTable();
    const keyStore = store(table);
    const usage = new DynamoKeyUsageStore(documentClient(), table);
    const make = async (name: string, at = longAgo, lifetimeSeconds?: number) =>
      (await issueApiKey(keyStore, "local", name, { now: at, ...(lifetimeSeconds ? { lifetimeSeconds } : {}) })).record
        .keyId;
    const use = (keyId: string, operationId: string, lastUsedOn: string) =>
      usage.recordUse({ keyId, operationId, lastUsedOn });
    // 90 days before `now` is 2026-09-02T12:00Z: a use on that day may have been after it.
    const staleUse = await make("stale use");
    await use(staleUse, "listPets", "2026-08-01");
    const recentUse = await make("recent use");
    await use(recentUse, "getPet", "2026-08-01");
    await use(recentUse, "listPets", "2026-11-28");
    const neverUsed = await make("never used");
    const neverUsedButNew = await make("new, never used", new Date("2026-11-01T00:00:00Z"));
    const usedOnCutoffDay = await make("used on the cutoff's day");
    await use(usedOnCutoffDay, "listPets", "2026-09-02");
    const usedTheDayBefore = await make("used the day before the cutoff's");
    await use(usedTheDayBefore, "listPets", "2026-09-01");
    const revoked = await make("revoked");
    await keyStore.revoke(revoked, longAgo);
    const expired = await make("expired", longAgo, 30 * 86_400);

    const all = rowsOf((await keys(["list"], { now, table })).printed);
    const unused = await keys(["list", "--unused-for", "90d"], { now, table });
    const nothingUnused = await keys(["list", "--unused-for", "400d"], { now, table });

    expect(all.get(recentUse)?.at(-1)).toBe("listPets 2026-11-28, getPet 2026-08-01");
    expect(all.get(staleUse)?.at(-1)).toBe("listPets 2026-08-01");
    expect(all.get(neverUsed)?.at(-1)).toBe("never");
    expect(all.get(expired)?.[6]).toBe(new Date(longAgo.getTime() + 30 * DAY_MS).toISOString());
    // Not: recentUse, neverUsedButNew, usedOnCutoffDay, revoked, expired.
    expect([...rowsOf(unused.printed).keys()].sort()).toEqual([staleUse, neverUsed, usedTheDayBefore].sort());
    expect(all.has(neverUsedButNew) && all.has(usedOnCutoffDay) && all.has(revoked)).toBe(true);
    expect(nothingUnused.printed).toEqual(["No working key has gone unused for 400d."]);
  });

  it("refuses --unused-for on another command, and a bad duration, in one line", () => {
    expect(() => parseKeysArguments(["revoke", "key_x", "--unused-for", "90d"], {})).toThrow(
      "--unused-for is an option of list.",
    );
    expect(() => parseKeysArguments(["list", "--unused-for", "three months"], {})).toThrow(
      '--unused-for must be a whole number above 0 and a unit, s, m, h, d or w (for example 1h or 30d), not "three months".',
    );
  });
});

describe("the README's keys commands", () => {
  const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## API keys"), readme.indexOf("**A staging tester"));
  const lines = [...section.matchAll(/^npm run keys -- (.+?)\s{2,}#\s*(.*)$/gm)].map((match) => ({
    argv: (match[1] as string).match(/"[^"]*"|\S+/g)?.map((part) => part.replace(/^"|"$/g, "")) ?? [],
    comment: match[2] as string,
  }));

  it("are ones the command accepts", () => {
    expect(lines.map(({ argv }) => argv[0])).toEqual([
      "create",
      "create",
      "create",
      "create",
      "list",
      "list",
      "rotate",
    ]);
    for (const { argv } of lines) expect(() => parseKeysArguments(argv, {}), argv.join(" ")).not.toThrow();
  });

  it("name the list's columns in its order, and the default overlap", async () => {
    const listed = await keys(["list"]);
    const columns = lines.find(({ argv }) => argv.join(" ") === "list")?.comment.replace("a header row, then ", "");
    const rotate = lines.find(({ argv }) => argv[0] === "rotate")?.comment ?? "";

    expect(columns?.split(", ")).toEqual(listed.printed[0]?.split(/ {2,}/));
    expect(rotate).toContain(`the old one works ${DEFAULT_ROTATION_OVERLAP_SECONDS / 86_400} more days`);
  });
});
