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
import { itemKeys, STATUS_INDEX } from "../db/table";

export interface PetPageQuery {
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

/** Every call takes the request's deadline, past which it gives up (see lib/db/deadline.ts). */
export interface PetRepository {
  /** A new id, never handed out before. Gaps are possible (a create that fails after this). */
  allocateId(deadline?: Deadline): Promise<number>;
  /** Stores a pet unless one with its id exists; says which happened. */
  insert(pet: Pet, deadline?: Deadline): Promise<"created" | "exists">;
  get(id: number, deadline?: Deadline): Promise<Pet | undefined>;
  page(query: PetPageQuery, deadline?: Deadline): Promise<PetPage>;
}

export class IdSpaceExhaustedError extends Error {
  override readonly name = "IdSpaceExhaustedError";
}

/** The stored form of a pet. Exported for test fixtures, which must write exactly this. */
export function petItem(pet: Pet, createdAt: Date): Record<string, unknown> {
  return { ...itemKeys.pet(pet.id), ...pet, createdAt: createdAt.toISOString() };
}

/** A pet from its stored form (also as kept inside an idempotency record). */
export function toPet(item: Record<string, unknown>): Pet {
  return {
    id: item.id as number,
    name: item.name as string,
    categoryId: item.categoryId as number,
    status: item.status as PetStatus,
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

  async insert(pet: Pet, deadline?: Deadline): Promise<"created" | "exists"> {
    try {
      await storeCall(
        (options) =>
          this.client.send(
            new PutCommand({
              TableName: this.tableName,
              Item: petItem(pet, new Date()),
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

  async get(id: number, deadline?: Deadline): Promise<Pet | undefined> {
    const result = await storeCall(
      (options) =>
        this.client.send(
          new GetCommand({ TableName: this.tableName, Key: itemKeys.pet(id), ConsistentRead: true }),
          options,
        ),
      deadline,
    );
    return result.Item ? toPet(result.Item) : undefined;
  }

  async page({ limit, afterId, status }: PetPageQuery, deadline?: Deadline): Promise<PetPage> {
    // One item more than the page tells whether another page exists without an empty last page.
    const wanted = limit + 1;
    const base: QueryCommandInput =
      status === null
        ? {
            TableName: this.tableName,
            KeyConditionExpression: "pk = :pk AND sk > :after",
            ExpressionAttributeValues: { ":pk": itemKeys.petPartition, ":after": itemKeys.pet(afterId).sk },
            ConsistentRead: true,
          }
        : {
            TableName: this.tableName,
            IndexName: STATUS_INDEX,
            KeyConditionExpression: "#status = :status AND id > :after",
            ExpressionAttributeNames: { "#status": "status" },
            ExpressionAttributeValues: { ":status": status, ":after": afterId },
          };
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    // Query stops at 1 MB; keep reading until the page is full or the matches run out.
    do {
      const result = await storeCall(
        (options) =>
          this.client.send(
            new QueryCommand({ ...base, Limit: wanted - items.length, ExclusiveStartKey: startKey }),
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
