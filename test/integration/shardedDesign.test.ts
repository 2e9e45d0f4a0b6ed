/**
 * The sharded design of docs/capacity.md (scripts/bench/shardedDesign.ts): its merged read must
 * return exactly what the current single-partition read returns, page for page.
 */

import { randomUUID } from "node:crypto";
import { BatchWriteCommand } from "@aws-sdk/lib-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import {
  comparisonPets,
  createShardedTable,
  ShardedPetStore,
  timeOrderedId,
  walkPages,
} from "../../scripts/bench/shardedDesign";
import { documentClient, rawClient, tableName } from "../support/dynamo";

const PETS = 120;
const SHARD_COUNTS = [1, 4, 16] as const;

describe("the sharded pet partitions, read with a merge", () => {
  const client = documentClient();
  const pets = comparisonPets(PETS);
  const stores = new Map<number, ShardedPetStore>();
  let current: DynamoPetRepository;

  beforeAll(async () => {
    const createdAt = new Date();
    for (let start = 0; start < pets.length; start += 25) {
      const batch = pets
        .slice(start, start + 25)
        .map((pet) => ({ PutRequest: { Item: petItem(pet, createdAt, SHARED_PETS) } }));
      await client.send(new BatchWriteCommand({ RequestItems: { [tableName()]: batch } }));
    }
    current = new DynamoPetRepository(client, tableName());
    for (const shards of SHARD_COUNTS) {
      const table = `sharded-${shards}-${randomUUID()}`;
      await createShardedTable(rawClient(), table);
      const store = new ShardedPetStore(client, table, shards);
      await store.putAll(pets);
      stores.set(shards, store);
    }
  }, 120_000);

  const cases: { limit: number; status: PetStatus | null }[] = [
    { limit: 1, status: null },
    { limit: 7, status: null },
    { limit: 20, status: null },
    { limit: 100, status: null },
    { limit: 20, status: "available" },
    { limit: 7, status: "sold" },
  ];

  it.each(SHARD_COUNTS.flatMap((shards) => cases.map((query) => ({ shards, ...query }))))(
    "returns the same pets in the same order as the current design on every page ($shards shards, limit $limit, status $status)",
    async ({ shards, limit, status }) => {
      const store = stores.get(shards) as ShardedPetStore;
      const pages = limit === 1 ? 15 : Number.POSITIVE_INFINITY;
      const expected = await walkPages((query) => current.page(query), { limit, status }, pages);

      const oneRound = await walkPages((query) => store.page(query), { limit, status }, pages);
      const chunked = await walkPages((query) => store.page(query, 2), { limit, status }, pages);

      expect(expected.flat().length).toBeGreaterThan(0);
      expect(oneRound).toEqual(expected);
      expect(chunked).toEqual(expected);
    },
  );

  it("walks every pet exactly once, in id order, across all pages", async () => {
    const walked = await walkPages(
      (query) => (stores.get(4) as ShardedPetStore).page(query, 3),
      { limit: 20, status: null },
      Infinity,
    );

    const ids = walked.flat().map((pet) => pet.id);
    expect(ids).toEqual([...pets.map((pet) => pet.id)].sort((a, b) => a - b));
  });

  it("creates pets with increasing ids, without a counter, and lists them oldest first", async () => {
    const table = `sharded-creates-${randomUUID()}`;
    await createShardedTable(rawClient(), table);
    const store = new ShardedPetStore(client, table, 4);
    let clock = Date.UTC(2027, 0, 1);
    const created: Pet[] = [];
    for (let index = 0; index < 12; index++) {
      clock += 3;
      created.push(await store.create({ name: `Rex ${index}`, categoryId: 1, status: "available" }, () => clock));
    }

    const listed = await walkPages((query) => store.page(query), { limit: 5, status: null }, Infinity);

    expect(created.map((pet) => pet.id)).toEqual([...created.map((pet) => pet.id)].sort((a, b) => a - b));
    expect(listed.flat()).toEqual(created);
    expect(created.every((pet) => Number.isSafeInteger(pet.id))).toBe(true);
  });

  it("draws another id when two creates in the same millisecond draw the same suffix", async () => {
    const table = `sharded-clash-${randomUUID()}`;
    await createShardedTable(rawClient(), table);
    const store = new ShardedPetStore(client, table, 4);
    const now = () => Date.UTC(2027, 0, 1);
    const draws = [5, 5, 9];
    const suffix = () => draws.shift() as number;

    const first = await store.create({ name: "First", categoryId: 1, status: "available" }, now, suffix);
    const second = await store.create({ name: "Second", categoryId: 1, status: "pending" }, now, suffix);

    expect(first.id).toBe(timeOrderedId(now(), 5));
    expect(second.id).toBe(timeOrderedId(now(), 9));
    const listed = await walkPages((query) => store.page(query), { limit: 10, status: null }, Infinity);
    expect(listed.flat().map((pet) => pet.name)).toEqual(["First", "Second"]);
  });
});
