/**
 * The design that would carry creates past one partition's write limit, built minimally against
 * dynalite so its cost can be measured beside the current design (docs/capacity.md):
 * - ids without a single counter: milliseconds since an epoch, times 1,024, plus a random suffix;
 *   the pet is written with a conditional put, and a clash (two creates drawing the same id) draws
 *   again. Ids stay safe integers, increase with time and keep `GET /pets` "oldest first";
 * - pets spread over `shards` partitions (`PET#<id mod shards>`), and the status index over
 *   `<status>#<shard>`, so no partition takes more than 1/shards of the writes;
 * - a page is a k-way merge of one Query per shard, in id order, so it returns the same pets in the
 *   same order as one Query of the single partition.
 * Nothing here is wired into the service: it exists to be measured and compared.
 */

import { randomInt } from "node:crypto";
import { ConditionalCheckFailedException, CreateTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { itemKeys, petTable } from "../../lib/db/table";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, type PetPage, type PetPageQuery, petItem, toPet } from "../../lib/pets/repository";
import { createPet } from "../../lib/pets/service";
import { ensureTable, startEmbeddedDynamo, waitUntilActive } from "../../local/dynamo";

/** The sharded index: partition `<status>#<shard>`, sort key the id. */
export const SHARDED_STATUS_INDEX = "byStatusShard";
const STATUS_SHARD = "statusShard";
const ID_DIGITS = 16;
/** 2026-01-01T00:00:00Z: ids of 2^53 run out in 2026 + 278 years at 1,024 ids per millisecond. */
const ID_EPOCH_MS = Date.UTC(2026, 0, 1);
const ID_SUFFIXES = 1024;
const MAX_ID_DRAWS = 5;

export function createShardedTableInput(tableName: string) {
  const { partitionKey, sortKey } = petTable;
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: [
      { AttributeName: partitionKey.name, AttributeType: partitionKey.type },
      { AttributeName: sortKey.name, AttributeType: sortKey.type },
      { AttributeName: STATUS_SHARD, AttributeType: "S" as const },
      { AttributeName: "id", AttributeType: "N" as const },
    ],
    KeySchema: [
      { AttributeName: partitionKey.name, KeyType: "HASH" as const },
      { AttributeName: sortKey.name, KeyType: "RANGE" as const },
    ],
    GlobalSecondaryIndexes: [
      {
        IndexName: SHARDED_STATUS_INDEX,
        KeySchema: [
          { AttributeName: STATUS_SHARD, KeyType: "HASH" as const },
          { AttributeName: "id", KeyType: "RANGE" as const },
        ],
        Projection: { ProjectionType: "ALL" as const },
      },
    ],
  };
}

export async function createShardedTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new CreateTableCommand(createShardedTableInput(tableName)));
  await waitUntilActive(client, tableName);
}

/** A new id from the clock and a random suffix: no shared item is written to get it. */
export function timeOrderedId(now: number = Date.now(), suffix: number = randomInt(ID_SUFFIXES)): number {
  return (now - ID_EPOCH_MS) * ID_SUFFIXES + suffix;
}

export class ShardedPetStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly shards: number,
  ) {
    if (!Number.isInteger(shards) || shards < 1) throw new Error("shards must be a whole number of at least 1");
  }

  shardOf(id: number): number {
    return id % this.shards;
  }

  item(pet: Pet, createdAt: Date): Record<string, unknown> {
    const shard = this.shardOf(pet.id);
    return {
      pk: `${itemKeys.petPartition}#${shard}`,
      sk: String(pet.id).padStart(ID_DIGITS, "0"),
      ...pet,
      [STATUS_SHARD]: `${pet.status}#${shard}`,
      createdAt: createdAt.toISOString(),
    };
  }

  /** One conditional put per create (a clash on the id, rare, draws again): no counter. */
  async create(
    newPet: Omit<Pet, "id">,
    now: () => number = Date.now,
    suffix: () => number = () => randomInt(ID_SUFFIXES),
  ): Promise<Pet> {
    for (let draw = 0; draw < MAX_ID_DRAWS; draw++) {
      const pet = { ...newPet, id: timeOrderedId(now(), suffix()) };
      try {
        await this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: this.item(pet, new Date()),
            ConditionExpression: "attribute_not_exists(pk)",
          }),
        );
        return pet;
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }
    }
    throw new Error(`no free id after ${MAX_ID_DRAWS} draws`);
  }

  /** Seeds pets with the ids they already have (to compare with the current design). */
  async putAll(pets: readonly Pet[]): Promise<void> {
    const createdAt = new Date();
    for (let start = 0; start < pets.length; start += 25) {
      let unprocessed: Record<string, unknown>[] | undefined = pets
        .slice(start, start + 25)
        .map((pet) => ({ PutRequest: { Item: this.item(pet, createdAt) } }));
      while (unprocessed && unprocessed.length > 0) {
        const result = await this.client.send(
          new BatchWriteCommand({ RequestItems: { [this.tableName]: unprocessed } }),
        );
        unprocessed = result.UnprocessedItems?.[this.tableName] as Record<string, unknown>[] | undefined;
      }
    }
  }

  /**
   * A page in id order, merged from one Query per shard. `chunk` is how many items each Query asks
   * for: `limit + 1` reads every shard once (one parallel round, up to shards × (limit + 1) items);
   * smaller chunks read fewer items but may need more rounds.
   */
  async page({ limit, afterId, status }: PetPageQuery, chunk: number = limit + 1): Promise<PetPage> {
    const wanted = limit + 1;
    const shards = Array.from({ length: this.shards }, (_, shard) => ({
      shard,
      buffer: [] as Record<string, unknown>[],
      startKey: undefined as Record<string, unknown> | undefined,
      done: false,
    }));
    const fill = async (state: (typeof shards)[number]) => {
      const input: QueryCommandInput =
        status === null
          ? {
              TableName: this.tableName,
              KeyConditionExpression: "pk = :pk AND sk > :after",
              ExpressionAttributeValues: {
                ":pk": `${itemKeys.petPartition}#${state.shard}`,
                ":after": String(afterId).padStart(ID_DIGITS, "0"),
              },
              ConsistentRead: true,
            }
          : {
              TableName: this.tableName,
              IndexName: SHARDED_STATUS_INDEX,
              KeyConditionExpression: "#key = :key AND id > :after",
              ExpressionAttributeNames: { "#key": STATUS_SHARD },
              ExpressionAttributeValues: { ":key": `${status}#${state.shard}`, ":after": afterId },
            };
      const result = await this.client.send(
        new QueryCommand({ ...input, Limit: chunk, ExclusiveStartKey: state.startKey }),
      );
      state.buffer.push(...(result.Items ?? []));
      state.startKey = result.LastEvaluatedKey;
      state.done = state.startKey === undefined;
    };
    const merged: Record<string, unknown>[] = [];
    while (merged.length < wanted) {
      // A shard with nothing buffered might hold the next smallest id: read it before choosing.
      const empty = shards.filter((state) => state.buffer.length === 0 && !state.done);
      await Promise.all(empty.map(fill));
      let next: (typeof shards)[number] | undefined;
      for (const state of shards) {
        const head = state.buffer[0];
        if (head && (!next || (head.id as number) < ((next.buffer[0] as Record<string, unknown>).id as number))) {
          next = state;
        }
      }
      if (!next) break;
      merged.push(next.buffer.shift() as Record<string, unknown>);
    }
    return { pets: merged.slice(0, limit).map(toPet), hasMore: merged.length > limit };
  }
}

/** What the reads and writes of a walk cost, from DynamoDB's own answers. */
export interface CallLog {
  queries: number;
  itemsRead: number;
  readUnits: number;
  writes: number;
  writeUnits: number;
}

/** Counts what each call read or wrote, asking DynamoDB for the consumed capacity. */
export function recordCalls(client: DynamoDBDocumentClient): CallLog {
  const log: CallLog = { queries: 0, itemsRead: 0, readUnits: 0, writes: 0, writeUnits: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const output = result.output as { ScannedCount?: number; ConsumedCapacity?: { CapacityUnits?: number } };
      const units = output.ConsumedCapacity?.CapacityUnits ?? 0;
      const command = String(context.commandName);
      if (/^Query/.test(command)) {
        log.queries += 1;
        log.itemsRead += output.ScannedCount ?? 0;
        log.readUnits += units;
      } else if (/^(Put|Update)/.test(command)) {
        log.writes += 1;
        log.writeUnits += units;
      }
      return result;
    },
    { step: "initialize", name: "shardedDesignRecordCalls" },
  );
  return log;
}

export const resetCalls = (log: CallLog) =>
  Object.assign(log, { queries: 0, itemsRead: 0, readUnits: 0, writes: 0, writeUnits: 0 });

/** The pets the comparison is seeded with: ids as a clock would give them, statuses mixed. */
export function comparisonPets(count: number): Pet[] {
  const statuses: PetStatus[] = ["available", "pending", "sold"];
  return Array.from({ length: count }, (_, index) => ({
    // A fixed stand-in for the random suffix (Knuth's multiplicative hash, top 10 bits): spread
    // over the shards independently of the status, as random suffixes are.
    id: timeOrderedId(ID_EPOCH_MS + 1_000_000 + index * 7, Math.imul(index + 1, 2654435761) >>> 22),
    name: `Pet number ${index + 1}`,
    categoryId: 3,
    status: statuses[index % 7 === 0 ? 2 : index % 2] as PetStatus,
  }));
}

export interface PageCost {
  /** Queries per page. */
  readonly queries: number;
  /** Items DynamoDB read per page (ScannedCount). */
  readonly itemsRead: number;
  /** Read request units per page, as DynamoDB reports them. */
  readonly readUnits: number;
}

export interface ListComparison {
  readonly case: string;
  readonly pages: number;
  readonly current: PageCost;
  /** By shard count: every shard read for the whole page at once, and in smaller chunks. */
  readonly sharded: Record<string, { readonly oneRound: PageCost; readonly chunked: PageCost; readonly chunk: number }>;
}

export interface ShardedDesignResult {
  readonly pets: number;
  readonly shardCounts: readonly number[];
  readonly lists: readonly ListComparison[];
  /** Table writes and their request units per create (the index write, the same in both, aside). */
  readonly creates: {
    readonly current: { readonly writes: number; readonly writeUnits: number };
    readonly sharded: { readonly writes: number; readonly writeUnits: number };
  };
}

export const SHARD_COUNTS = [4, 16] as const;
export const COMPARED_PETS = 500;
const PAGES = 10;
const CASES: readonly { name: string; limit: number; status: PetStatus | null }[] = [
  { name: "unfiltered, limit 20", limit: 20, status: null },
  { name: "unfiltered, limit 100", limit: 100, status: null },
  { name: "status=available, limit 20", limit: 20, status: "available" },
  { name: "status=sold, limit 20", limit: 20, status: "sold" },
];

/** Reads up to `pages` pages with `read`, page after page as a client following cursors would. */
export async function walkPages(
  read: (query: PetPageQuery) => Promise<PetPage>,
  query: { limit: number; status: PetStatus | null },
  pages: number,
): Promise<Pet[][]> {
  const walked: Pet[][] = [];
  let afterId = 0;
  while (walked.length < pages) {
    const page = await read({ ...query, afterId, collection: SHARED_PETS });
    walked.push(page.pets);
    const last = page.pets.at(-1);
    if (!page.hasMore || !last) break;
    afterId = last.id;
  }
  return walked;
}

const perPage = (log: CallLog, pages: number): PageCost => ({
  queries: round2(log.queries / pages),
  itemsRead: round2(log.itemsRead / pages),
  readUnits: round2(log.readUnits / pages),
});
const round2 = (value: number) => Math.round(value * 100) / 100;

/**
 * Seeds the same pets into the current table and into sharded tables, walks the same pages through
 * both (failing if any page differs), and creates pets through both, recording what DynamoDB read
 * and wrote.
 */
export async function measureShardedDesign(endpoint?: string): Promise<ShardedDesignResult> {
  const dynamo = endpoint ? undefined : await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  const raw = new DynamoDBClient({
    region: "us-east-1",
    endpoint: endpoint ?? dynamo?.endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  const client = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
  const log = recordCalls(client);
  const suffix = randomInt(1e9).toString(36);
  try {
    const pets = comparisonPets(COMPARED_PETS);
    const currentTable = `capacity-current-${suffix}`;
    await ensureTable(raw, currentTable);
    const createdAt = new Date();
    for (let start = 0; start < pets.length; start += 25) {
      const batch = pets
        .slice(start, start + 25)
        .map((pet) => ({ PutRequest: { Item: petItem(pet, createdAt, SHARED_PETS) } }));
      await client.send(new BatchWriteCommand({ RequestItems: { [currentTable]: batch } }));
    }
    const current = new DynamoPetRepository(client, currentTable);
    const stores = new Map<number, ShardedPetStore>();
    for (const shards of SHARD_COUNTS) {
      const table = `capacity-sharded-${shards}-${suffix}`;
      await createShardedTable(raw, table);
      const store = new ShardedPetStore(client, table, shards);
      await store.putAll(pets);
      stores.set(shards, store);
    }

    const lists: ListComparison[] = [];
    for (const { name, limit, status } of CASES) {
      resetCalls(log);
      const expected = await walkPages((query) => current.page(query), { limit, status }, PAGES);
      const pages = expected.length;
      const currentCost = perPage(log, pages);
      const sharded: ListComparison["sharded"] = {};
      for (const [shards, store] of stores) {
        const chunk = Math.ceil((limit + 1) / shards) + 1;
        const costs: PageCost[] = [];
        for (const size of [limit + 1, chunk]) {
          resetCalls(log);
          const walked = await walkPages((query) => store.page(query, size), { limit, status }, PAGES);
          if (JSON.stringify(walked) !== JSON.stringify(expected)) {
            throw new Error(
              `the sharded read (${shards} shards) returned other pages than the current design (${name})`,
            );
          }
          costs.push(perPage(log, pages));
        }
        sharded[String(shards)] = { oneRound: costs[0] as PageCost, chunked: costs[1] as PageCost, chunk };
      }
      lists.push({ case: name, pages, current: currentCost, sharded });
    }

    const CREATES = 20;
    const newPet = { name: "Rex", categoryId: 3, status: "available" as const };
    resetCalls(log);
    for (let index = 0; index < CREATES; index++) await createPet(current, newPet, SHARED_PETS);
    const currentCreates = { writes: log.writes / CREATES, writeUnits: log.writeUnits / CREATES };
    resetCalls(log);
    const store = stores.get(SHARD_COUNTS[0]) as ShardedPetStore;
    for (let index = 0; index < CREATES; index++) await store.create(newPet);
    const shardedCreates = { writes: log.writes / CREATES, writeUnits: log.writeUnits / CREATES };
    return {
      pets: COMPARED_PETS,
      shardCounts: SHARD_COUNTS,
      lists,
      creates: { current: currentCreates, sharded: shardedCreates },
    };
  } finally {
    raw.destroy();
    await dynamo?.close();
  }
}
