/** Read cost and id uniqueness at a realistic size, measured by what DynamoDB reports. */

import { BatchWriteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler as createListPets } from "../../functions/listPets";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { itemKeys } from "../../lib/db/table";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import type { LocalApi } from "../../local/server";
import { bearer, fetchJson, invoke, issueTestKey, startTestApi } from "../support/api";
import { documentClient, recordReads, tableName } from "../support/dynamo";

const TOTAL = 10_000;

/** Writes pets 1..count straight to the table in the repository's own item format. */
async function seedPets(count: number, statusOf: (id: number) => PetStatus): Promise<void> {
  const client = documentClient();
  const items = Array.from({ length: count }, (_, index) =>
    petItem(
      { id: index + 1, name: `pet ${index + 1}`, categoryId: 1, status: statusOf(index + 1) },
      new Date(),
      SHARED_PETS,
    ),
  );
  const batches: Record<string, unknown>[][] = [];
  for (let start = 0; start < items.length; start += 25) batches.push(items.slice(start, start + 25));
  for (let start = 0; start < batches.length; start += 8) {
    await Promise.all(
      batches
        .slice(start, start + 8)
        .map((batch) =>
          client.send(
            new BatchWriteCommand({ RequestItems: { [tableName()]: batch.map((Item) => ({ PutRequest: { Item } })) } }),
          ),
        ),
    );
  }
  // New pets must get ids after the seeded ones.
  await client.send(new PutCommand({ TableName: tableName(), Item: { ...itemKeys.petIdCounter, lastId: count } }));
}

describe(`listing among ${TOTAL} pets of which 1% are sold`, () => {
  const client = documentClient();
  const reads = recordReads(client);
  let key: string;
  let listPets: ReturnType<typeof createListPets>;

  beforeAll(async () => {
    await seedPets(TOTAL, (id) => (id % 100 === 0 ? "sold" : id % 2 === 0 ? "available" : "pending"));
    key = (await issueTestKey()).key;
    listPets = createListPets({
      pets: new DynamoPetRepository(client, tableName()),
      keys: createApiKeyVerifier(new DynamoApiKeyStore(documentClient(), tableName()), "local"),
      clock: () => new Date(),
    });
  }, 180_000);

  it("answers 20 sold pets for status=sold&limit=20 while reading at most 21 items", async () => {
    reads.reset();

    const response = await invoke(listPets, { path: "/pets?status=sold&limit=20", headers: bearer(key) });

    const pets = response.json as Pet[];
    expect(pets).toHaveLength(20);
    expect(pets.every((pet) => pet.status === "sold")).toBe(true);
    expect(pets.map((pet) => pet.id)).toEqual(Array.from({ length: 20 }, (_, index) => (index + 1) * 100));
    expect(reads.calls.map((call) => call.command)).toEqual(["QueryCommand"]);
    expect(reads.itemsRead()).toBeLessThanOrEqual(21);
  });

  it("reads in proportion to the page on every page of the filtered walk, and finds all 100 sold pets", async () => {
    let path: string | undefined = "/pets?status=sold&limit=20";
    const seen: number[] = [];
    while (path) {
      reads.reset();
      const response = await invoke(listPets, { path, headers: bearer(key) });
      const page = response.json as Pet[];
      seen.push(...page.map((pet) => pet.id));
      expect(reads.itemsRead()).toBeLessThanOrEqual(page.length + 1);
      path = /^<\/v1([^>]+)>/.exec(response.headers.link ?? "")?.[1];
    }

    expect(seen).toEqual(Array.from({ length: 100 }, (_, index) => (index + 1) * 100));
  });

  it("reads limit + 1 items for an unfiltered page deep in the table", async () => {
    const first = await invoke(listPets, { path: "/pets?limit=100", headers: bearer(key) });
    const next = /^<\/v1([^>]+)>/.exec(first.headers.link ?? "")?.[1] ?? "";
    reads.reset();

    const response = await invoke(listPets, { path: next, headers: bearer(key) });

    expect((response.json as Pet[]).map((pet) => pet.id)).toEqual(
      Array.from({ length: 100 }, (_, index) => index + 101),
    );
    expect(reads.itemsRead()).toBe(101);
  });
});

describe("200 concurrent creates", () => {
  let api: LocalApi;

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(() => api.close());

  it("yield 200 distinct ids, all of them listed", async () => {
    const { key } = await issueTestKey("concurrency");
    const headers = { ...bearer(key), "Content-Type": "application/json" };

    const created = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        fetchJson(`${api.baseUrl}/pets`, {
          method: "POST",
          headers,
          body: JSON.stringify({ name: `concurrent ${index}`, categoryId: 7, status: "pending" }),
        }),
      ),
    );

    expect(created.map((response) => response.status)).toEqual(Array(200).fill(201));
    const ids = created.map((response) => (response.json as Pet).id);
    expect(new Set(ids).size).toBe(200);
    const listed: number[] = [];
    let next: string | undefined = `${api.baseUrl}/pets?limit=100&status=pending`;
    while (next) {
      const page = await fetchJson(next, { headers });
      listed.push(...(page.json as Pet[]).filter((pet) => pet.name.startsWith("concurrent ")).map((pet) => pet.id));
      const path = /^<\/v1([^>]+)>/.exec(page.headers.link ?? "")?.[1];
      next = path ? `${api.baseUrl}${path}` : undefined;
    }
    expect(listed.sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
  });
});
