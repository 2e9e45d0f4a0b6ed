import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { MAX_SAFE_ID, type Pet, type PetStatus } from "../contract/schemas";
import type { Deadline } from "../db/deadline";
import { storeCall } from "../db/storeErrors";
import { epochSeconds, itemKeys, STATUS_INDEX, TTL_ATTRIBUTE } from "../db/table";
import { type PetCollection, SYNTHETIC_PET_RETENTION_SECONDS } from "./collection";

export interface PetPageQuery {
  /** Whose pets: only this collection's are read (lib/pets/collection.ts). */
  readonly collection: PetCollection;
  readonly limit: number;
  /** Only pets with a larger id; 0 for the first page. */
  readonly afterId: number;
  readonly status: PetStatus | null;
}

export interface PetPage {
  /** At most `limit` pets in ascending id order. */
  readonly pets: Pet[];
  /** True when at least one more pet matches after the last one returned. */
  readonly hasMore: boolean;
}

/**
 * Every call takes the request's deadline, past which it gives up (see lib/db/deadline.ts), and
 * reads or writes one collection's pets only (lib/pets/collection.ts). Ids come from one counter
 * for all collections, so an id names at most one pet anywhere.
 */
export interface PetRepository {
  /** A new id, never handed out before. Gaps are possible (a create that fails after this). */
  allocateId(deadline?: Deadline): Promise<number>;
  /** Stores a pet in the collection unless one with its id exists there; says which happened. */
  insert(pet: Pet, collection: PetCollection, deadline?: Deadline): Promise<"created" | "exists">;
  /** The collection's pet with this id; undefined when the collection has none. */
  get(id: number, collection: PetCollection, deadline?: Deadline): Promise<Pet | undefined>;
  page(query: PetPageQuery, deadline?: Deadline): Promise<PetPage>;
}

export class IdSpaceExhaustedError extends Error {
  override readonly name = "IdSpaceExhaustedError";
}

/**
 * The stored form of a pet in its collection: a synthetic key's pets also carry the table's TTL
 * attribute. Exported for test fixtures, which must write exactly this.
 */
export function petItem(pet: Pet, createdAt: Date, collection: PetCollection): Record<string, unknown> {
  return {
    ...itemKeys.pet(pet.id, collection),
    ...pet,
    status: itemKeys.petStatusKey(pet.status, collection),
    createdAt: createdAt.toISOString(),
    ...(collection.kind === "synthetic"
      ? { [TTL_ATTRIBUTE]: epochSeconds(createdAt) + SYNTHETIC_PET_RETENTION_SECONDS }
      : {}),
  };
}

/** A pet from its stored form (also as kept inside an idempotency record). */
export function toPet(item: Record<string, unknown>): Pet {
  return {
    id: item.id as number,
    name: item.name as string,
    categoryId: item.categoryId as number,
    status: itemKeys.petStatusOf(item.status as string) as PetStatus,
  };
}

/** A synthetic key's pet past its expiry (clients' pets never expire); DynamoDB deletes it later. */
function hasExpired(item: Record<string, unknown>): boolean {
  return typeof item[TTL_ATTRIBUTE] === "number" && item[TTL_ATTRIBUTE] <= epochSeconds(new Date());
}

/**
 * A synthetic collection's query, leaving out expired pets: TTL deletes them only within days, and
 * until then they "still show up in reads, queries, and scans"; AWS's advice is this filter
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ttl-expired-items.html). A
 * check's listing must reach its own new pets. Expired pets have the lowest ids of the collection
 * (they are its oldest), so only a listing's first page reads them, and only a synthetic key's:
 * clients' queries never touch a synthetic partition.
 */
function unexpired(query: QueryCommandInput): QueryCommandInput {
  return {
    ...query,
    FilterExpression: "#expiresAt > :now",
    ExpressionAttributeNames: { ...query.ExpressionAttributeNames, "#expiresAt": TTL_ATTRIBUTE },
    ExpressionAttributeValues: { ...query.ExpressionAttributeValues, ":now": epochSeconds(new Date()) },
  };
}

export class DynamoPetRepository implements PetRepository {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async allocateId(deadline?: Deadline): Promise<number> {
    // An atomic counter: each ADD returns a value no caller ever got before, without transactions.
    const result = await storeCall(
      (options) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKeys.petIdCounter,
            UpdateExpression: "ADD #last :one",
            ExpressionAttributeNames: { "#last": "lastId" },
            ExpressionAttributeValues: { ":one": 1 },
            ReturnValues: "UPDATED_NEW",
          }),
          options,
        ),
      deadline,
    );
    const id = result.Attributes?.lastId as number | undefined;
    if (id === undefined || id > MAX_SAFE_ID) throw new IdSpaceExhaustedError("The pet id counter is exhausted.");
    return id;
  }

  async insert(pet: Pet, collection: PetCollection, deadline?: Deadline): Promise<"created" | "exists"> {
    try {
      await storeCall(
        (options) =>
          this.client.send(
            new PutCommand({
              TableName: this.tableName,
              Item: petItem(pet, new Date(), collection),
              ConditionExpression: "attribute_not_exists(pk)",
            }),
            options,
          ),
        deadline,
      );
      return "created";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "exists";
      throw error;
    }
  }

  async get(id: number, collection: PetCollection, deadline?: Deadline): Promise<Pet | undefined> {
    const result = await storeCall(
      (options) =>
        this.client.send(
          new GetCommand({ TableName: this.tableName, Key: itemKeys.pet(id, collection), ConsistentRead: true }),
          options,
        ),
      deadline,
    );
    return result.Item && !hasExpired(result.Item) ? toPet(result.Item) : undefined;
  }

  async page({ collection, limit, afterId, status }: PetPageQuery, deadline?: Deadline): Promise<PetPage> {
    // One item more than the page tells whether another page exists without an empty last page.
    const wanted = limit + 1;
    const after = itemKeys.pet(afterId, collection);
    const base: QueryCommandInput =
      status === null
        ? {
            TableName: this.tableName,
            KeyConditionExpression: "pk = :pk AND sk > :after",
            ExpressionAttributeValues: { ":pk": after.pk, ":after": after.sk },
            ConsistentRead: true,
          }
        : {
            TableName: this.tableName,
            IndexName: STATUS_INDEX,
            KeyConditionExpression: "#status = :status AND id > :after",
            ExpressionAttributeNames: { "#status": "status" },
            ExpressionAttributeValues: { ":status": itemKeys.petStatusKey(status, collection), ":after": afterId },
          };
    const query = collection.kind === "shared" ? base : unexpired(base);
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    // Query stops at 1 MB; keep reading until the page is full or the matches run out.
    do {
      const result = await storeCall(
        (options) =>
          this.client.send(
            new QueryCommand({
              ...query,
              // Limit counts items read before the filter: a synthetic collection's expired pets
              // would otherwise take one round trip per page size (see unexpired).
              ...(query.FilterExpression ? {} : { Limit: wanted - items.length }),
              ExclusiveStartKey: startKey,
            }),
            options,
          ),
        deadline,
      );
      items.push(...(result.Items ?? []));
      startKey = result.LastEvaluatedKey;
    } while (startKey && items.length < wanted);
    return { pets: items.slice(0, limit).map(toPet), hasMore: items.length > limit };
  }
}
