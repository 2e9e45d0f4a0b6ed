import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  DeleteCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type { Pet } from "../contract/schemas";
import type { Deadline } from "../db/deadline";
import { type CallOptions, storeCall } from "../db/storeErrors";
import { itemKeys, TTL_ATTRIBUTE } from "../db/table";
import { toPet } from "../pets/repository";
import type {
  BeginResult,
  IdempotencyRecord,
  IdempotencyScope,
  IdempotencyStore,
  NewLock,
  TakeOverResult,
} from "./store";
import { epochSeconds } from "./store";

const IN_PROGRESS = "in_progress";
const COMPLETED = "completed";

/** Every attribute goes through a name placeholder: `state` and friends must not collide with reserved words. */
const names = {
  "#state": "state",
  "#token": "lockToken",
  "#until": "lockedUntil",
  "#petId": "petId",
  "#expires": TTL_ATTRIBUTE,
} as const;

function attributeNames(...placeholders: (keyof typeof names)[]): Record<string, string> {
  return Object.fromEntries(placeholders.map((placeholder) => [placeholder, names[placeholder]]));
}

function toRecord(item: Record<string, unknown>): IdempotencyRecord {
  const base = { requestHash: item.requestHash as string, expiresAtSeconds: item[TTL_ATTRIBUTE] as number };
  if (item.state === COMPLETED) {
    return { ...base, state: "completed", pet: toPet(item.pet as Record<string, unknown>) };
  }
  return {
    ...base,
    state: "in_progress",
    lockToken: item.lockToken as string,
    lockedUntilMs: item.lockedUntil as number,
    petId: item.petId as number | undefined,
  };
}

/**
 * The idempotency records in the pets table. A conditional write that fails is followed by a
 * strongly consistent read where the answer matters: the SDK retries a write whose answer was
 * lost, and the retry then fails its own condition although the first attempt succeeded.
 */
export class DynamoIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async begin(
    scope: IdempotencyScope,
    record: { requestHash: string; expiresAtSeconds: number } & NewLock,
    now: Date,
    deadline?: Deadline,
  ): Promise<BeginResult> {
    const written = await this.conditionally(
      (options) =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...this.key(scope),
              state: IN_PROGRESS,
              requestHash: record.requestHash,
              lockToken: record.lockToken,
              lockedUntil: record.lockedUntilMs,
              [TTL_ATTRIBUTE]: record.expiresAtSeconds,
            },
            // An expired record is as good as absent: TTL deletion lags, and never happens locally.
            ConditionExpression: "attribute_not_exists(pk) OR #expires <= :now",
            ExpressionAttributeNames: attributeNames("#expires"),
            ExpressionAttributeValues: { ":now": epochSeconds(now) },
          }),
          options,
        ),
      deadline,
    );
    return written ? { acquired: true } : { acquired: false, current: await this.read(scope, deadline) };
  }

  async takeOver(
    scope: IdempotencyScope,
    previousToken: string,
    lock: NewLock,
    now: Date,
    deadline?: Deadline,
  ): Promise<TakeOverResult> {
    const result = await this.updateIfStill(
      scope,
      {
        UpdateExpression: "SET #token = :token, #until = :until",
        ConditionExpression: "#state = :inProgress AND #token = :previous AND #until <= :nowMs AND #expires > :now",
        ExpressionAttributeNames: attributeNames("#state", "#token", "#until", "#expires"),
        ExpressionAttributeValues: {
          ":token": lock.lockToken,
          ":until": lock.lockedUntilMs,
          ":inProgress": IN_PROGRESS,
          ":previous": previousToken,
          ":nowMs": now.getTime(),
          ":now": epochSeconds(now),
        },
        // The reserved id as of the takeover itself: one read earlier may predate its reservation.
        ReturnValues: "ALL_NEW",
      },
      deadline,
    );
    return result ? { acquired: true, petId: result.Attributes?.petId as number | undefined } : { acquired: false };
  }

  async reservePetId(scope: IdempotencyScope, lockToken: string, petId: number, deadline?: Deadline): Promise<boolean> {
    const written = await this.updateIfStill(
      scope,
      {
        UpdateExpression: "SET #petId = :petId",
        ConditionExpression: "#state = :inProgress AND #token = :token AND attribute_not_exists(#petId)",
        ExpressionAttributeNames: attributeNames("#state", "#token", "#petId"),
        ExpressionAttributeValues: { ":petId": petId, ":inProgress": IN_PROGRESS, ":token": lockToken },
      },
      deadline,
    );
    if (written) return true;
    const current = await this.read(scope, deadline);
    return current?.state === "in_progress" && current.lockToken === lockToken && current.petId === petId;
  }

  async complete(
    scope: IdempotencyScope,
    lockToken: string,
    pet: Pet,
    expiresAtSeconds: number,
    deadline?: Deadline,
  ): Promise<boolean> {
    const written = await this.updateIfStill(
      scope,
      {
        UpdateExpression: "SET #state = :completed, pet = :pet, #expires = :expires REMOVE #token, #until",
        ConditionExpression: "#state = :inProgress AND #token = :token",
        ExpressionAttributeNames: attributeNames("#state", "#token", "#until", "#expires"),
        ExpressionAttributeValues: {
          ":completed": COMPLETED,
          ":pet": { ...pet },
          ":expires": expiresAtSeconds,
          ":inProgress": IN_PROGRESS,
          ":token": lockToken,
        },
      },
      deadline,
    );
    if (written) return true;
    const current = await this.read(scope, deadline);
    return current?.state === "completed" && current.pet.id === pet.id;
  }

  async releaseLock(scope: IdempotencyScope, lockToken: string, deadline?: Deadline): Promise<void> {
    await this.updateIfStill(
      scope,
      {
        UpdateExpression: "SET #until = :released",
        ConditionExpression: "#state = :inProgress AND #token = :token",
        ExpressionAttributeNames: attributeNames("#state", "#token", "#until"),
        ExpressionAttributeValues: { ":released": 0, ":inProgress": IN_PROGRESS, ":token": lockToken },
      },
      deadline,
    );
  }

  async forget(scope: IdempotencyScope, lockToken: string, deadline?: Deadline): Promise<boolean> {
    const deleted = await this.conditionally(
      (options) =>
        this.client.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key: this.key(scope),
            ConditionExpression: "#state = :inProgress AND #token = :token AND attribute_not_exists(#petId)",
            ExpressionAttributeNames: attributeNames("#state", "#token", "#petId"),
            ExpressionAttributeValues: { ":inProgress": IN_PROGRESS, ":token": lockToken },
          }),
          options,
        ),
      deadline,
    );
    return deleted !== undefined;
  }

  /**
   * Runs a conditional write; undefined when its condition failed (someone else holds the record
   * now, or it is gone). Any other failure is thrown, transient ones as ServiceUnavailableError.
   */
  /** A conditional update of the record at `scope`; undefined when its condition no longer holds. */
  private updateIfStill(
    scope: IdempotencyScope,
    update: Omit<UpdateCommandInput, "TableName" | "Key">,
    deadline: Deadline | undefined,
  ) {
    return this.conditionally(
      (options) =>
        this.client.send(new UpdateCommand({ TableName: this.tableName, Key: this.key(scope), ...update }), options),
      deadline,
    );
  }

  private async conditionally<T>(
    write: (options: CallOptions) => Promise<T>,
    deadline: Deadline | undefined,
  ): Promise<T | undefined> {
    try {
      return await storeCall(write, deadline);
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return undefined;
      throw error;
    }
  }

  private async read(scope: IdempotencyScope, deadline?: Deadline): Promise<IdempotencyRecord | undefined> {
    const result = await storeCall(
      (options) =>
        this.client.send(
          new GetCommand({ TableName: this.tableName, Key: this.key(scope), ConsistentRead: true }),
          options,
        ),
      deadline,
    );
    return result.Item ? toRecord(result.Item) : undefined;
  }

  private key(scope: IdempotencyScope) {
    return itemKeys.idempotency(scope.apiKeyId, scope.key);
  }
}
