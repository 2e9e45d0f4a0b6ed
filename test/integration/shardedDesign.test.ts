/**
 * The designs past the first ceiling of docs/capacity.md (scripts/bench/shardedDesign.ts): every
 * pet sharded, and epochs (sharded only while creates are busy). Their reads must return exactly
 * what the current single-partition read returns, page for page; the epochs' must cost what
 * today's does where no busy epoch is read.
 */

import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { SHARED_PETS } from "../../lib/pets/collection";
import type { PetPage, PetPageQuery } from "../../lib/pets/repository";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import { ensureTable } from "../../local/dynamo";
import {
  batchPut,
  comparisonPets,
  createShardedTable,
  type Epoch,
  EpochPetStore,
  epochsAt,
  recordCalls,
  resetCalls,
  ShardedPetStore,
  timeOrderedId,
  walkPages,
} from "../../scripts/bench/shardedDesign";
import { documentClient, rawClient, tableName } from "../support/dynamo";

/** The pets stored as the current design stores them, in the shared test table. */
function writeCurrentDesign(pets: readonly Pet[]): Promise<void> {
  const createdAt = new Date();
  return batchPut(
    documentClient(),
    tableName(),
    pets.map((pet) => petItem(pet, createdAt, SHARED_PETS)),
  );
}

const PETS = 120;
const SHARD_COUNTS = [1, 4, 16] as const;

/**
 * A design walks every page of `query` to the same pets, in the same order, as the current one:
 * read in one round and in chunks of 2.
 */
async function expectSameWalks(
  current: { page: (query: PetPageQuery) => Promise<PetPage> },
  design: { page: (query: PetPageQuery, chunk?: number) => Promise<PetPage> },
  query: { limit: number; status: PetStatus | null },
  pages: number,
): Promise<void> {
  const expected = await walkPages((page) => current.page(page), query, pages);
  const oneRound = await walkPages((page) => design.page(page), query, pages);
  const chunked = await walkPages((page) => design.page(page, 2), query, pages);

  expect(expected.flat().length).toBeGreaterThan(0);
  expect(oneRound).toEqual(expected);
  expect(chunked).toEqual(expected);
}

describe("the sharded pet partitions, read with a merge", () => {
  const client = documentClient();
  const pets = comparisonPets(PETS);
  const stores = new Map<number, ShardedPetStore>();
  let current: DynamoPetRepository;

  beforeAll(async () => {
    await writeCurrentDesign(pets);
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
      await expectSameWalks(current, store, { limit, status }, limit === 1 ? 15 : Number.POSITIVE_INFINITY);
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

describe("the epochs design: pets sharded only while creates are busy", () => {
  const client = documentClient();
  const log = recordCalls(client);
  const pets = comparisonPets(PETS);
  let current: DynamoPetRepository;
  const schedules: Record<string, readonly { fromPet: number; shards: number }[]> = {
    "one quiet epoch (today's layout)": [{ fromPet: 0, shards: 1 }],
    "quiet, busy (4), quiet": [
      { fromPet: 0, shards: 1 },
      { fromPet: 40, shards: 4 },
      { fromPet: 80, shards: 1 },
    ],
    "a busy epoch from a page's edge on, then a busier one": [
      { fromPet: 0, shards: 1 },
      { fromPet: 20, shards: 3 },
      { fromPet: 61, shards: 16 },
    ],
  };
  const stores = new Map<string, EpochPetStore>();

  beforeAll(async () => {
    await writeCurrentDesign(pets);
    current = new DynamoPetRepository(client, tableName());
    for (const [name, schedule] of Object.entries(schedules)) {
      const table = `epochs-${randomUUID()}`;
      await ensureTable(rawClient(), table);
      const store = new EpochPetStore(client, table, epochsAt(pets, schedule));
      await store.putAll(pets);
      stores.set(name, store);
    }
  }, 120_000);

  const cases: { limit: number; status: PetStatus | null }[] = [
    { limit: 1, status: null },
    { limit: 20, status: null },
    { limit: 100, status: null },
    { limit: 20, status: "available" },
    { limit: 7, status: "sold" },
  ];

  it.each(Object.keys(schedules).flatMap((schedule) => cases.map((query) => ({ schedule, ...query }))))(
    "returns the same pets in the same order as the current design on every page ($schedule, limit $limit, status $status)",
    async ({ schedule, limit, status }) => {
      const store = stores.get(schedule) as EpochPetStore;
      await expectSameWalks(current, store, { limit, status }, limit === 1 ? 70 : Number.POSITIVE_INFINITY);
    },
  );

  it("reads today's items as they are, with the same single Query a page", async () => {
    const today = new EpochPetStore(client, tableName(), [{ fromId: 0, shards: 1 }]);
    const queriesPerPage = async (read: (query: PetPageQuery) => Promise<PetPage>) => {
      const counts: number[] = [];
      const walked = await walkPages(
        async (query) => {
          resetCalls(log);
          const page = await read(query);
          counts.push(log.queries);
          return page;
        },
        { limit: 20, status: "available" },
        Infinity,
      );
      return { walked, counts };
    };

    const now = await queriesPerPage((query) => current.page(query));
    const epochs = await queriesPerPage((query) => today.page(query));

    expect(epochs.walked).toEqual(now.walked);
    expect(epochs.counts).toEqual(now.counts);
    expect(epochs.counts.every((count) => count === 1)).toBe(true);
  });

  it("costs a page one Query inside a quiet epoch and one per shard where it reads a busy one", async () => {
    const store = stores.get("quiet, busy (4), quiet") as EpochPetStore;
    const kinds: { busy: boolean; queries: number }[] = [];
    await walkPages(
      async (query) => {
        resetCalls(log);
        const page = await store.page(query);
        kinds.push({
          busy: store.lastRead.some((index) => (store.epochs[index] as Epoch).shards > 1),
          queries: log.queries,
        });
        return page;
      },
      { limit: 10, status: null },
      Infinity,
    );

    const quiet = kinds.filter((page) => !page.busy);
    const busy = kinds.filter((page) => page.busy);
    expect(quiet.length).toBeGreaterThan(0);
    expect(busy.length).toBeGreaterThan(0);
    expect(quiet.every((page) => page.queries === 1)).toBe(true);
    expect(busy.every((page) => page.queries >= 4)).toBe(true);
  });

  it("writes a create without a counter: to PET in a quiet epoch, to one of the busy epoch's shards in a busy one", async () => {
    const table = `epochs-creates-${randomUUID()}`;
    await ensureTable(rawClient(), table);
    const busyFrom = Date.UTC(2027, 0, 1);
    const store = new EpochPetStore(client, table, [
      { fromId: 0, shards: 1 },
      { fromId: timeOrderedId(busyFrom, 0), shards: 4 },
    ]);
    const quiet = await store.create(
      { name: "Early", categoryId: 1, status: "available" },
      () => busyFrom - 5,
      () => 7,
    );
    const busy = await store.create(
      { name: "Late", categoryId: 1, status: "sold" },
      () => busyFrom + 5,
      () => 9,
    );

    resetCalls(log);
    await store.create({ name: "Later", categoryId: 1, status: "pending" }, () => busyFrom + 6);
    expect(log.writes).toBe(1);
    expect(store.keysOf(quiet.id, quiet.status)).toEqual({ pk: "PET", status: "available" });
    expect(store.keysOf(busy.id, busy.status)).toEqual({
      pk: `PET#E1#${busy.id % 4}`,
      status: `E1#${busy.id % 4}#sold`,
    });
    const listed = await walkPages((query) => store.page(query), { limit: 2, status: null }, Infinity);
    expect(listed.flat().map((pet) => pet.name)).toEqual(["Early", "Late", "Later"]);
    const sold = await walkPages((query) => store.page(query), { limit: 5, status: "sold" }, Infinity);
    expect(sold.flat()).toEqual([busy]);
  });

  it("refuses a schedule that does not start at id 0 or whose epochs do not start at increasing ids", () => {
    expect(() => new EpochPetStore(client, tableName(), [{ fromId: 5, shards: 1 }])).toThrow(/id 0/);
    expect(
      () =>
        new EpochPetStore(client, tableName(), [
          { fromId: 0, shards: 1 },
          { fromId: 0, shards: 4 },
        ]),
    ).toThrow(/increasing/);
  });
});
