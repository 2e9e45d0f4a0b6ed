/**
 * `npm run keys -- create --synthetic --expires-in DURATION` against dynalite: the key's record
 * expires when asked (the deploy pipeline mints a one-hour key per run), bad values are refused in
 * one line before anything is written, and a synthetic key cannot be made to live longer than its
 * default. (Ordinary keys with --expires-in/--expires-at: keysScopesAndRotation.test.ts.)
 */
import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, inject, it } from "vitest";
import { hashApiKey, SYNTHETIC_KEY_LIFETIME_SECONDS } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { itemKeys, TTL_ATTRIBUTE } from "../../lib/db/table";
import { parseDuration } from "../../scripts/duration";
import { parseKeysArguments, runKeys } from "../../scripts/keys";
import { documentClient, tableName } from "../support/dynamo";
import { projectRoot, runToEnd } from "../support/processes";

const env = () => ({ DYNAMODB_ENDPOINT: inject("dynamoEndpoint"), PETS_TABLE_NAME: tableName(), DYNAMODB_PORT: "" });

/** runKeys in this process, against dynalite, with what it printed and warned. */
async function keys(args: string[]) {
  const printed: string[] = [];
  const warned: string[] = [];
  await runKeys(
    args,
    (line) => printed.push(line),
    (line) => warned.push(line),
    { env: env() },
  );
  return { printed, warned };
}

/** Every key record's names, for "nothing was written". */
async function keyNames(): Promise<string[]> {
  const { Items = [] } = await documentClient().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": itemKeys.apiKeyPartition },
    }),
  );
  return Items.map((item) => String(item.name));
}

describe("--expires-in values", () => {
  it.each([
    ["90s", 90],
    ["15m", 900],
    ["1h", 3600],
    ["7d", 604_800],
    ["30d", SYNTHETIC_KEY_LIFETIME_SECONDS],
  ])("reads %s as %i seconds", (text, seconds) => {
    expect(parseDuration(text, "--expires-in")).toBe(seconds);
  });

  it.each(["0h", "1", "h", "1.5h", "-1h", "1y", "1 h", " 1h", "1H", "", "1h30m"])(
    'refuses "%s" in one line naming the form it takes',
    (text) => {
      expect(() => parseDuration(text, "--expires-in")).toThrow(
        `--expires-in must be a whole number above 0 and a unit, s, m, h, d or w (for example 1h or 30d), not "${text}".`,
      );
    },
  );

  it("refuses a synthetic key a lifetime longer than its default: the option only shortens it", () => {
    const create = (duration: string) => () =>
      parseKeysArguments(["create", "--name", "x", "--synthetic", "--expires-in", duration], env());

    expect(create("31d")).toThrow(
      `--expires-in: a synthetic key lives at most ${SYNTHETIC_KEY_LIFETIME_SECONDS / 86_400}d (its default lifetime).`,
    );
    expect(create(`${SYNTHETIC_KEY_LIFETIME_SECONDS + 1}s`)).toThrow(/lives at most/);
    expect(create("30d")).not.toThrow();
  });

  it("is an option of create, for ordinary keys too, where the synthetic cap does not apply", () => {
    expect(parseKeysArguments(["create", "--name", "x", "--expires-in", "52w"], env())).toMatchObject({
      command: "create",
      synthetic: false,
      lifetimeSeconds: 52 * 604_800,
    });
    expect(() => parseKeysArguments(["list", "--expires-in", "1h"], env())).toThrow(
      "--expires-in is an option of create.",
    );
    expect(parseKeysArguments(["create", "--name", "x", "--synthetic", "--expires-in", "2h"], env())).toMatchObject({
      command: "create",
      synthetic: true,
      lifetimeSeconds: 7200,
    });
  });
});

describe("a synthetic key created with --expires-in", () => {
  it("expires that long after it is made: in its record's TTL attribute, the notice, and the verifier", async () => {
    const before = Math.floor(Date.now() / 1000);
    const { printed, warned } = await keys([
      "create",
      "--name",
      "pipeline run 1",
      "--synthetic",
      "--expires-in",
      "1h",
      "--quiet",
    ]);
    const after = Math.floor(Date.now() / 1000);
    const [key = ""] = printed;
    const store = new DynamoApiKeyStore(documentClient(), tableName());
    const record = await store.findByHash(hashApiKey(key));
    const { Items = [] } = await documentClient().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: "pk = :pk AND sk = :sk",
        ExpressionAttributeValues: { ":pk": itemKeys.apiKeyPartition, ":sk": hashApiKey(key) },
      }),
    );
    const ttl = Number(Items[0]?.[TTL_ATTRIBUTE]);
    const verifier = createApiKeyVerifier(store, "local", () => (ttl - 1) * 1000);
    const lateVerifier = createApiKeyVerifier(store, "local", () => ttl * 1000);

    // --quiet: standard output is the key alone, the expiry goes to standard error.
    expect(printed).toEqual([expect.stringMatching(/^petstore_local_synthetic_[0-9A-Za-z]{43}$/)]);
    expect(ttl).toBeGreaterThanOrEqual(before + 3600);
    expect(ttl).toBeLessThanOrEqual(after + 3600);
    expect(record?.expiresAt).toBe(new Date(ttl * 1000).toISOString());
    expect(warned).toContain(`keys: synthetic key ${record?.keyId} created. It expires at ${record?.expiresAt}.`);
    expect(await verifier.verify(key)).toMatchObject({ keyId: record?.keyId, synthetic: true });
    expect(await lateVerifier.verify(key)).toEqual({ refused: "expired", expiredAt: record?.expiresAt });
  });

  it("keeps the default lifetime without the option", async () => {
    const { printed } = await keys(["create", "--name", "default lifetime", "--synthetic", "--quiet"]);
    const record = await new DynamoApiKeyStore(documentClient(), tableName()).findByHash(hashApiKey(printed[0] ?? ""));
    const days = (Date.parse(record?.expiresAt ?? "") - Date.now()) / 86_400_000;

    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
  });
});

describe("npm run keys with a bad --expires-in", () => {
  it.each([
    [["--synthetic", "--expires-in", "1y"], /^keys: --expires-in must be a whole number above 0 and a unit/],
    [["--synthetic", "--expires-in", "31d"], /^keys: --expires-in: a synthetic key lives at most 30d/],
    [["--synthetic", "--expires-in"], /^keys: Option '--expires-in <value>' argument missing$/],
  ])("with %j: exits 1 with one line and writes no key", async (extra, message) => {
    const name = `refused ${Date.now()}`;

    const result = await runToEnd("scripts/keys.ts", ["create", "--name", name, ...extra], {
      cwd: projectRoot,
      env: env(),
    });

    expect(result.code).toBe(1);
    expect(result.output.trim().split("\n")).toHaveLength(1);
    expect(result.output.trim()).toMatch(message);
    expect(await keyNames()).not.toContain(name);
  });
});
