/**
 * Designs that would carry creates past one partition's write limit, built minimally against
 * dynalite so their cost can be measured beside the current design (docs/capacity.md). Both use
 * ids without a single counter: milliseconds since an epoch, times 1,024, plus a random suffix; the
 * pet is written with a conditional put, and a clash (two creates drawing the same id) draws
 * again. Ids stay safe integers, increase with time and keep `GET /pets` "oldest first".
 * - ShardedPetStore shards every pet: `PET#<id mod shards>`, and the status index over
 *   `<status>#<shard>`; a page is a k-way merge of one Query per shard, so every page pays for
 *   every shard.
 * - EpochPetStore shards by period ("epochs", each from an id on): a period of quiet creates keeps
 *   today's single `PET` partition and plain status (one Query per page, as today), a period of
 *   busy creates spreads them over `PET#E<epoch>#<shard>` and status `E<epoch>#<shard>#<status>`
 *   (the same `byStatus` index). Only pages of pets created while creates were busy pay the merge.
 * Both return the same pets in the same order as one Query of the single partition. Nothing here
 * is wired into the service: it exists to be measured and compared.
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
import { itemKeys, petTable, STATUS_INDEX } from "../../lib/db/table";
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
  create(newPet: Omit<Pet, "id">, now: () => number = Date.now, suffix?: () => number): Promise<Pet> {
    return createWithoutCounter(this.client, this.tableName, (pet) => this.item(pet, new Date()), newPet, now, suffix);
  }

  /** Seeds pets with the ids they already have (to compare with the current design). */
  async putAll(pets: readonly Pet[]): Promise<void> {
    const createdAt = new Date();
    await batchPut(
      this.client,
      this.tableName,
      pets.map((pet) => this.item(pet, createdAt)),
    );
  }

  /**
   * A page in id order, merged from one Query per shard. `chunk` is how many items each Query asks
   * for: `limit + 1` reads every shard once (one parallel round, up to shards × (limit + 1) items);
   * smaller chunks read fewer items but may need more rounds.
   */
  async page({ limit, afterId, status }: PetPageQuery, chunk: number = limit + 1): Promise<PetPage> {
    const sources = Array.from(
      { length: this.shards },
      (_, shard): QueryCommandInput =>
        status === null
          ? {
              TableName: this.tableName,
              KeyConditionExpression: "pk = :pk AND sk > :after",
              ExpressionAttributeValues: {
                ":pk": `${itemKeys.petPartition}#${shard}`,
                ":after": String(afterId).padStart(ID_DIGITS, "0"),
              },
              ConsistentRead: true,
            }
          : {
              TableName: this.tableName,
              IndexName: SHARDED_STATUS_INDEX,
              KeyConditionExpression: "#key = :key AND id > :after",
              ExpressionAttributeNames: { "#key": STATUS_SHARD },
              ExpressionAttributeValues: { ":key": `${status}#${shard}`, ":after": afterId },
            },
    );
    const merged = await mergedRead(this.client, sources, limit + 1, chunk);
    return { pets: merged.slice(0, limit).map(toPet), hasMore: merged.length > limit };
  }
}

/**
 * Up to `wanted` items in id order, merged from Queries that each return items in id order.
 * Each source is read `chunk` items at a time, and only when the merge needs its next item.
 */
async function mergedRead(
  client: DynamoDBDocumentClient,
  sources: readonly QueryCommandInput[],
  wanted: number,
  chunk: number,
): Promise<Record<string, unknown>[]> {
  const states = sources.map((input) => ({
    input,
    buffer: [] as Record<string, unknown>[],
    startKey: undefined as Record<string, unknown> | undefined,
    done: false,
  }));
  const fill = async (state: (typeof states)[number]) => {
    const result = await client.send(
      new QueryCommand({ ...state.input, Limit: chunk, ExclusiveStartKey: state.startKey }),
    );
    state.buffer.push(...(result.Items ?? []));
    state.startKey = result.LastEvaluatedKey;
    state.done = state.startKey === undefined;
  };
  const merged: Record<string, unknown>[] = [];
  while (merged.length < wanted) {
    // A source with nothing buffered might hold the next smallest id: read it before choosing.
    const empty = states.filter((state) => state.buffer.length === 0 && !state.done);
    await Promise.all(empty.map(fill));
    let next: (typeof states)[number] | undefined;
    for (const state of states) {
      const head = state.buffer[0];
      if (head && (!next || (head.id as number) < ((next.buffer[0] as Record<string, unknown>).id as number))) {
        next = state;
      }
    }
    if (!next) break;
    merged.push(next.buffer.shift() as Record<string, unknown>);
  }
  return merged;
}

/** A period of creates: pets whose id is `fromId` or more (until the next epoch's) are spread over `shards` partitions. */
export interface Epoch {
  readonly fromId: number;
  readonly shards: number;
}

/**
 * Pets partitioned by period. The schedule would be part of the deployed config, and an epoch is
 * added by a deploy that ends before its first id's time (so every writer and reader agrees on
 * where each id lives): ids are time-ordered, so "from this id" is "from this time".
 */
export class EpochPetStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
    readonly epochs: readonly Epoch[],
  ) {
    if (epochs[0]?.fromId !== 0) throw new Error("the first epoch must start at id 0");
    for (const [index, epoch] of epochs.entries()) {
      if (!Number.isInteger(epoch.shards) || epoch.shards < 1)
        throw new Error("shards must be a whole number of at least 1");
      if (index > 0 && epoch.fromId <= (epochs[index - 1] as Epoch).fromId)
        throw new Error("epochs must start at increasing ids");
    }
  }

  /** The epochs the last page() read, by index: what its cost depended on. */
  lastRead: number[] = [];

  epochOf(id: number): number {
    let found = 0;
    for (const [index, epoch] of this.epochs.entries()) if (epoch.fromId <= id) found = index;
    return found;
  }

  /** The partition of an epoch's shard: a one-shard epoch's is today's `PET`. */
  partition(epoch: number, shard: number): string {
    return (this.epochs[epoch] as Epoch).shards === 1
      ? itemKeys.petPartition
      : `${itemKeys.petPartition}#E${epoch}#${shard}`;
  }

  /**
   * The stored status (the `byStatus` index partition) of an epoch's shard: a one-shard epoch's is
   * the plain status, as today; the status stays last, where itemKeys.petStatusOf reads it back.
   */
  statusKey(epoch: number, shard: number, status: PetStatus): string {
    return (this.epochs[epoch] as Epoch).shards === 1 ? status : `E${epoch}#${shard}#${status}`;
  }

  /** Where a pet lives: a one-shard epoch's pets are today's items exactly. */
  keysOf(id: number, status: PetStatus): { pk: string; status: string } {
    const epoch = this.epochOf(id);
    const shard = id % (this.epochs[epoch] as Epoch).shards;
    return { pk: this.partition(epoch, shard), status: this.statusKey(epoch, shard, status) };
  }

  item(pet: Pet, createdAt: Date): Record<string, unknown> {
    return { ...petItem(pet, createdAt, SHARED_PETS), ...this.keysOf(pet.id, pet.status) };
  }

  /** One conditional put per create (a clash on the id, rare, draws again): no counter. */
  create(newPet: Omit<Pet, "id">, now: () => number = Date.now, suffix?: () => number): Promise<Pet> {
    return createWithoutCounter(this.client, this.tableName, (pet) => this.item(pet, new Date()), newPet, now, suffix);
  }

  async putAll(pets: readonly Pet[]): Promise<void> {
    await batchPut(
      this.client,
      this.tableName,
      pets.map((pet) => this.item(pet, new Date())),
    );
  }

  /**
   * A page in id order: epoch by epoch from the cursor's, each epoch's id range read with one Query
   * per shard (merged when there are several, `chunk` items at a time; by default a share of what
   * is still wanted, plus one), until the page and its look-ahead item are full.
   */
  async page({ limit, afterId, status }: PetPageQuery, chunk?: number): Promise<PetPage> {
    const wanted = limit + 1;
    const items: Record<string, unknown>[] = [];
    this.lastRead = [];
    for (let index = this.epochOf(afterId + 1); index < this.epochs.length && items.length < wanted; index++) {
      const epoch = this.epochs[index] as Epoch;
      const from = Math.max(afterId + 1, epoch.fromId);
      const next = this.epochs[index + 1];
      const to = next ? next.fromId - 1 : Number.MAX_SAFE_INTEGER;
      const sources = Array.from(
        { length: epoch.shards },
        (_, shard): QueryCommandInput =>
          status === null
            ? {
                TableName: this.tableName,
                KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
                ExpressionAttributeValues: {
                  ":pk": this.partition(index, shard),
                  ":from": String(from).padStart(ID_DIGITS, "0"),
                  ":to": String(to).padStart(ID_DIGITS, "0"),
                },
                ConsistentRead: true,
              }
            : {
                TableName: this.tableName,
                IndexName: STATUS_INDEX,
                KeyConditionExpression: "#status = :key AND id BETWEEN :from AND :to",
                ExpressionAttributeNames: { "#status": "status" },
                ExpressionAttributeValues: { ":key": this.statusKey(index, shard, status), ":from": from, ":to": to },
              },
      );
      const still = wanted - items.length;
      // One shard is read as today (exactly what is still wanted); several, a share each plus one.
      const size = chunk ?? (epoch.shards === 1 ? still : Math.ceil(still / epoch.shards) + 1);
      this.lastRead.push(index);
      items.push(...(await mergedRead(this.client, sources, still, size)));
    }
    return { pets: items.slice(0, limit).map(toPet), hasMore: items.length > limit };
  }
}

/**
 * Writes a new pet under a time-ordered id with one conditional put, drawing another id on the
 * rare clash (two creates in the same millisecond drawing the same suffix).
 */
async function createWithoutCounter(
  client: DynamoDBDocumentClient,
  tableName: string,
  item: (pet: Pet) => Record<string, unknown>,
  newPet: Omit<Pet, "id">,
  now: () => number,
  suffix: () => number = () => randomInt(ID_SUFFIXES),
): Promise<Pet> {
  for (let draw = 0; draw < MAX_ID_DRAWS; draw++) {
    const pet = { ...newPet, id: timeOrderedId(now(), suffix()) };
    try {
      await client.send(
        new PutCommand({ TableName: tableName, Item: item(pet), ConditionExpression: "attribute_not_exists(pk)" }),
      );
      return pet;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
  throw new Error(`no free id after ${MAX_ID_DRAWS} draws`);
}

/** Writes items in batches of 25, retrying what DynamoDB leaves unprocessed. */
export async function batchPut(
  client: DynamoDBDocumentClient,
  tableName: string,
  items: readonly Record<string, unknown>[],
) {
  for (let start = 0; start < items.length; start += 25) {
    let unprocessed: Record<string, unknown>[] | undefined = items
      .slice(start, start + 25)
      .map((Item) => ({ PutRequest: { Item } }));
    while (unprocessed && unprocessed.length > 0) {
      const result = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: unprocessed } }));
      unprocessed = result.UnprocessedItems?.[tableName] as Record<string, unknown>[] | undefined;
    }
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

/** What the pages of one kind cost in a design, on average, and how many there were. */
export interface PagesCost extends PageCost {
  readonly pages: number;
}

export interface ListComparison {
  readonly case: string;
  /** Pages of the whole walk (every pet of the case listed once). */
  readonly pages: number;
  readonly current: PageCost;
  /**
   * The epochs design: pages that read only one-shard epochs (every pet was created while creates
   * were quiet), and pages that read a sharded epoch. `null` when no page was of that kind.
   */
  readonly epochs: { readonly oneShard: PagesCost | null; readonly sharded: PagesCost | null };
  /** Every pet sharded, by shard count: every shard read for the whole page at once, and in smaller chunks. */
  readonly sharded: Record<string, { readonly oneRound: PageCost; readonly chunked: PageCost; readonly chunk: number }>;
}

export interface ShardedDesignResult {
  readonly pets: number;
  readonly shardCounts: readonly number[];
  /** The epochs of the compared pets: from which of them (0-based, in id order) and their shard count. */
  readonly epochs: readonly { readonly fromPet: number; readonly shards: number }[];
  readonly lists: readonly ListComparison[];
  /** Table writes and their request units per create (the index write, the same in all, aside). */
  readonly creates: {
    readonly current: { readonly writes: number; readonly writeUnits: number };
    readonly sharded: { readonly writes: number; readonly writeUnits: number };
    /** In a sharded epoch; a one-shard epoch's create is the same single put, on `PET`. */
    readonly epochs: { readonly writes: number; readonly writeUnits: number };
  };
}

export const SHARD_COUNTS = [4, 16] as const;
export const COMPARED_PETS = 500;
/**
 * The epochs of the comparison: quiet creates (today's partition), a busy period spread over 4
 * partitions, quiet again. Positions are in the compared pets, oldest first.
 */
export const COMPARED_EPOCHS = [
  { fromPet: 0, shards: 1 },
  { fromPet: 200, shards: 4 },
  { fromPet: 400, shards: 1 },
] as const;
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

/** The epochs of a list of pets (sorted by id) from positions in it. */
export function epochsAt(pets: readonly Pet[], schedule: readonly { fromPet: number; shards: number }[]): Epoch[] {
  return schedule.map(({ fromPet, shards }) => ({ fromId: fromPet === 0 ? 0 : (pets[fromPet] as Pet).id, shards }));
}

/**
 * Seeds the same pets into the current table, an epochs table and tables sharded throughout, walks
 * every page of each case through all of them (failing if any page differs from the current
 * design's), and creates pets through each, recording what DynamoDB read and wrote.
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
    await batchPut(
      client,
      currentTable,
      pets.map((pet) => petItem(pet, createdAt, SHARED_PETS)),
    );
    const current = new DynamoPetRepository(client, currentTable);
    const epochTable = `capacity-epochs-${suffix}`;
    await ensureTable(raw, epochTable);
    const epochs = new EpochPetStore(client, epochTable, epochsAt(pets, COMPARED_EPOCHS));
    await epochs.putAll(pets);
    const stores = new Map<number, ShardedPetStore>();
    for (const shards of SHARD_COUNTS) {
      const table = `capacity-sharded-${shards}-${suffix}`;
      await createShardedTable(raw, table);
      const store = new ShardedPetStore(client, table, shards);
      await store.putAll(pets);
      stores.set(shards, store);
    }
    const sameAsCurrent = (walked: Pet[][], expected: Pet[][], design: string, name: string) => {
      if (JSON.stringify(walked) !== JSON.stringify(expected)) {
        throw new Error(`the ${design} returned other pages than the current design (${name})`);
      }
    };

    const lists: ListComparison[] = [];
    for (const { name, limit, status } of CASES) {
      resetCalls(log);
      const expected = await walkPages((query) => current.page(query), { limit, status }, Infinity);
      const pages = expected.length;
      const currentCost = perPage(log, pages);

      // Each page of the epochs design, costed on its own: which epochs it read decides its cost.
      const byKind = { oneShard: emptyLog(), sharded: emptyLog() };
      const counts = { oneShard: 0, sharded: 0 };
      const walkedEpochs = await walkPages(
        async (query) => {
          resetCalls(log);
          const page = await epochs.page(query);
          const kind = epochs.lastRead.some((index) => (epochs.epochs[index] as Epoch).shards > 1)
            ? "sharded"
            : "oneShard";
          addCalls(byKind[kind], log);
          counts[kind] += 1;
          return page;
        },
        { limit, status },
        Infinity,
      );
      sameAsCurrent(walkedEpochs, expected, "epochs design", name);
      const epochCost = (kind: "oneShard" | "sharded"): PagesCost | null =>
        counts[kind] === 0 ? null : { ...perPage(byKind[kind], counts[kind]), pages: counts[kind] };

      const sharded: ListComparison["sharded"] = {};
      for (const [shards, store] of stores) {
        const chunk = Math.ceil((limit + 1) / shards) + 1;
        const costs: PageCost[] = [];
        for (const size of [limit + 1, chunk]) {
          resetCalls(log);
          const walked = await walkPages((query) => store.page(query, size), { limit, status }, Infinity);
          sameAsCurrent(walked, expected, `sharded read (${shards} shards)`, name);
          costs.push(perPage(log, pages));
        }
        sharded[String(shards)] = { oneRound: costs[0] as PageCost, chunked: costs[1] as PageCost, chunk };
      }
      lists.push({
        case: name,
        pages,
        current: currentCost,
        epochs: { oneShard: epochCost("oneShard"), sharded: epochCost("sharded") },
        sharded,
      });
    }

    const CREATES = 20;
    const newPet = { name: "Rex", categoryId: 3, status: "available" as const };
    const createsThrough = async (create: () => Promise<unknown>) => {
      resetCalls(log);
      for (let index = 0; index < CREATES; index++) await create();
      return { writes: log.writes / CREATES, writeUnits: log.writeUnits / CREATES };
    };
    const busyNow = new EpochPetStore(client, epochTable, [
      { fromId: 0, shards: 1 },
      { fromId: timeOrderedId(Date.now() - 60_000, 0), shards: 4 },
    ]);
    return {
      pets: COMPARED_PETS,
      shardCounts: SHARD_COUNTS,
      epochs: COMPARED_EPOCHS,
      lists,
      creates: {
        current: await createsThrough(() => createPet(current, newPet, SHARED_PETS)),
        sharded: await createsThrough(() => (stores.get(SHARD_COUNTS[0]) as ShardedPetStore).create(newPet)),
        epochs: await createsThrough(() => busyNow.create(newPet)),
      },
    };
  } finally {
    raw.destroy();
    await dynamo?.close();
  }
}

const emptyLog = (): CallLog => ({ queries: 0, itemsRead: 0, readUnits: 0, writes: 0, writeUnits: 0 });
const addCalls = (sum: CallLog, log: CallLog) => {
  for (const key of Object.keys(sum) as (keyof CallLog)[]) sum[key] += log[key];
};
