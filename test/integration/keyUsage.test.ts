/**
 * A key's last use per operation and day (lib/auth/keyUsage.ts, lib/auth/dynamoKeyUsageStore.ts)
 * against dynalite, through the real handler chain: how many UpdateItems the requests of a day
 * make, in one container and in two, what a late or failed write does, and that the request never
 * pays for a failed one.
 */
import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { createHandler as createListPets } from "../../functions/listPets";
import { SYNTHETIC_KEY_LIFETIME_SECONDS } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { DynamoKeyUsageStore } from "../../lib/auth/dynamoKeyUsageStore";
import { createKeyUseRecorder, type KeyUse } from "../../lib/auth/keyUsage";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { itemKeys } from "../../lib/db/table";
import { DynamoPetRepository } from "../../lib/pets/repository";
import { routes } from "../../lib/routes";
import { KEY_USE_RECORDS } from "../../scripts/bench/capacity";
import { bearer, invoke, issueTestKey } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";
import { throttling } from "../support/dynamoFaults";
import { capturedTelemetry } from "../support/telemetry";

const operationId = routes.listPets.operationId;

type Outcome = "changed" | "unchanged" | "failed";

type KeyValue = string | { S?: string } | undefined;
const text = (value: KeyValue) => (typeof value === "string" ? value : value?.S);

/**
 * Counts the UpdateItems sent to the KEYUSE partition, and what each did: changed the item,
 * refused by its condition, or failed (while `failing()`: rejected before reaching the table).
 */
function countKeyUseWrites(client: DynamoDBDocumentClient, outcomes: Outcome[], failing: () => boolean) {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const key = (args.input as { Key?: { pk?: KeyValue } }).Key;
      // The document client's UpdateCommand runs as the table API's UpdateItemCommand.
      const isUpdate = /^Update(Item)?Command$/.test(String(context.commandName));
      if (!isUpdate || text(key?.pk) !== itemKeys.keyUsePartition) return next(args);
      if (failing()) {
        outcomes.push("failed");
        throw throttling();
      }
      try {
        const result = await next(args);
        outcomes.push("changed");
        return result;
      } catch (error) {
        outcomes.push(error instanceof ConditionalCheckFailedException ? "unchanged" : "failed");
        throw error;
      }
    },
    { step: "initialize", name: "countKeyUseWrites", priority: "high" },
  );
}

/** One Lambda container's listPets: its own clients, key cache and use recorder, at `clock`'s time. */
function container(clock: () => Date, outcomes: Outcome[], failing: () => boolean = () => false) {
  const usageClient = documentClient();
  countKeyUseWrites(usageClient, outcomes, failing);
  const { telemetry, lines } = capturedTelemetry();
  const handler = createListPets({
    pets: new DynamoPetRepository(documentClient(), tableName()),
    keys: createApiKeyVerifier(new DynamoApiKeyStore(documentClient(), tableName()), "local"),
    keyUses: createKeyUseRecorder(new DynamoKeyUsageStore(usageClient, tableName()), telemetry.log),
    clock,
    telemetry,
  });
  const list = (key: string) => invoke(handler, { path: "/pets", headers: bearer(key) });
  return { list, lines };
}

/**
 * An item's size as DynamoDB counts it: each attribute's name and value in UTF-8, a number as about
 * one byte per two digits plus one (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
 */
function itemSize(item: Record<string, unknown>): number {
  let bytes = 0;
  for (const [name, value] of Object.entries(item)) {
    bytes += Buffer.byteLength(name);
    bytes +=
      typeof value === "number"
        ? Math.ceil(String(value).replace(/\D/g, "").length / 2) + 1
        : Buffer.byteLength(String(value));
  }
  return bytes;
}

async function usesOf(keyId: string): Promise<KeyUse[]> {
  return (await new DynamoKeyUsageStore(documentClient(), tableName()).list()).filter((use) => use.keyId === keyId);
}

describe("a key's last use", () => {
  it("is written once for 50 concurrent requests of a key in one container, and again once the next UTC day", async () => {
    const { key, keyId } = await issueTestKey("busy client");
    let now = new Date("2026-03-10T23:59:58.000Z");
    const outcomes: Outcome[] = [];
    const { list } = container(() => now, outcomes);

    const answers = await Promise.all(Array.from({ length: 50 }, () => list(key)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(50).fill(200));
    await list(key);
    expect(outcomes).toEqual(["changed"]);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-10" }]);

    now = new Date("2026-03-11T00:00:00.000Z");
    await Promise.all(Array.from({ length: 20 }, () => list(key)));
    expect(outcomes).toEqual(["changed", "changed"]);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-11" }]);
  });

  it("keeps its day when yesterday's write arrives after today's", async () => {
    const { keyId } = await issueTestKey("late writer");
    const store = new DynamoKeyUsageStore(documentClient(), tableName());

    expect(await store.recordUse({ keyId, operationId, lastUsedOn: "2026-03-11" })).toBe(true);
    expect(await store.recordUse({ keyId, operationId, lastUsedOn: "2026-03-10" })).toBe(false);
    expect(await store.recordUse({ keyId, operationId, lastUsedOn: "2026-03-11" })).toBe(false);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-11" }]);
  });

  it("is written once, in two attempts at most, when two containers race on the same day", async () => {
    const { key, keyId } = await issueTestKey("client of two containers");
    const now = new Date("2026-03-12T08:00:00.000Z");
    const outcomes: Outcome[] = [];
    const first = container(() => now, outcomes);
    const second = container(() => now, outcomes);

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? first : second).list(key)));

    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(outcomes.length).toBeLessThanOrEqual(2);
    expect(outcomes.filter((outcome) => outcome === "changed")).toHaveLength(1);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-12" }]);
  });

  it("does not move back when a container's clock steps back over midnight", async () => {
    const { key, keyId } = await issueTestKey("clock stepped back");
    let now = new Date("2026-03-13T00:00:01.000Z");
    const outcomes: Outcome[] = [];
    const { list } = container(() => now, outcomes);

    await list(key);
    now = new Date(now.getTime() - 2_000);
    await list(key);
    now = new Date(now.getTime() + 2_000);
    await list(key);

    expect(outcomes).toEqual(["changed"]);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-13" }]);
  });

  it("does not fail the request when the write fails, logs it, and retries it on the next request", async () => {
    const { key, keyId } = await issueTestKey("store trouble");
    const now = new Date("2026-03-14T09:00:00.000Z");
    const outcomes: Outcome[] = [];
    let failing = true;
    const { list, lines } = container(
      () => now,
      outcomes,
      () => failing,
    );

    expect((await list(key)).status).toBe(200);
    expect(outcomes).toEqual(["failed"]);
    expect(await usesOf(keyId)).toEqual([]);
    const warning = lines.map((line) => JSON.parse(line)).find((line) => line.keyId === keyId && line.level === "WARN");
    expect(warning?.message).toMatch(/recording a key's use failed/);

    expect((await list(key)).status).toBe(200);
    expect(outcomes).toEqual(["failed", "failed"]);

    failing = false;
    expect((await list(key)).status).toBe(200);
    await list(key);
    expect(outcomes).toEqual(["failed", "failed", "changed"]);
    expect(await usesOf(keyId)).toEqual([{ keyId, operationId, lastUsedOn: "2026-03-14" }]);
  });

  it("is an item of about 100 bytes, one write unit a write (docs/capacity.md)", async () => {
    const client = documentClient();
    const units: number[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = "TOTAL";
        const result = await next(args);
        units.push(
          (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ?? 0,
        );
        return result;
      },
      { step: "initialize", name: "consumedCapacity" },
    );
    const store = new DynamoKeyUsageStore(client, tableName());
    const longest = Object.values(routes).reduce((a, b) => (b.operationId.length > a.length ? b.operationId : a), "");
    const { keyId } = await issueTestKey("sized");
    const { keyId: syntheticId } = await issueTestKey("sized synthetic", { synthetic: true });

    await store.recordUse({ keyId, operationId: longest, lastUsedOn: "2026-03-16" });
    await store.recordUse({ keyId: syntheticId, operationId: longest, lastUsedOn: "2026-03-16" }, { synthetic: true });

    expect(units).toEqual([KEY_USE_RECORDS.writeUnitsPerWrite, KEY_USE_RECORDS.writeUnitsPerWrite]);
    const item = (id: string) =>
      client.send(new GetCommand({ TableName: tableName(), Key: itemKeys.keyUse(id, longest) }));
    expect(itemSize((await item(keyId)).Item ?? {})).toBeLessThanOrEqual(KEY_USE_RECORDS.itemBytes);
    expect(itemSize((await item(syntheticId)).Item ?? {})).toBeLessThan(1.25 * KEY_USE_RECORDS.itemBytes);
  });

  it("gives a synthetic key's use an expiry after the key's own, and an ordinary key's none", async () => {
    const store = new DynamoKeyUsageStore(documentClient(), tableName());
    const lastUsedOn = "2026-03-15";
    await store.recordUse({ keyId: "key_synthetic_use", operationId, lastUsedOn }, { synthetic: true });
    await store.recordUse({ keyId: "key_ordinary_use", operationId, lastUsedOn });
    const item = async (keyId: string) =>
      (
        await documentClient().send(
          new GetCommand({ TableName: tableName(), Key: itemKeys.keyUse(keyId, operationId) }),
        )
      ).Item;

    const expiresAt = (await item("key_synthetic_use"))?.expiresAt as number;
    expect(expiresAt * 1000).toBeGreaterThan(Date.parse(lastUsedOn) + SYNTHETIC_KEY_LIFETIME_SECONDS * 1000);
    expect((await item("key_ordinary_use"))?.expiresAt).toBeUndefined();
  });
});
