import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type { Deadline } from "../db/deadline";
import { partitionItems } from "../db/partitionItems";
import { storeCall } from "../db/storeErrors";
import { epochSeconds, itemKeys, TTL_ATTRIBUTE } from "../db/table";
import type { ApiKeyRecord, ApiKeyStore, KeyScope } from "./apiKeys";

/**
 * Where an ordinary key's expiry is kept (epoch seconds): not in the TTL attribute, so that DynamoDB
 * keeps the record after it; a synthetic key's is the TTL attribute (ApiKeyRecord.expiresAt).
 */
const ORDINARY_EXPIRY_ATTRIBUTE = "validUntil";

const expiryAttributeOf = (record: Pick<ApiKeyRecord, "synthetic">) =>
  record.synthetic ? TTL_ATTRIBUTE : ORDINARY_EXPIRY_ATTRIBUTE;

function toRecord(item: Record<string, unknown>): ApiKeyRecord {
  const expiry = item[expiryAttributeOf({ synthetic: item.synthetic === true })];
  return {
    keyId: item.keyId as string,
    name: item.name as string,
    keyHash: item.sk as string,
    createdAt: item.createdAt as string,
    revokedAt: item.revokedAt as string | undefined,
    ...(item.synthetic === true ? { synthetic: true } : {}),
    // Epoch seconds, as the TTL attribute holds a time (lib/db/table.ts).
    ...(typeof expiry === "number" ? { expiresAt: new Date(expiry * 1000).toISOString() } : {}),
    ...(typeof item.scope === "string" ? { scope: item.scope as KeyScope } : {}),
    ...(typeof item.replaces === "string" ? { replaces: item.replaces } : {}),
    ...(typeof item.replacedBy === "string" ? { replacedBy: item.replacedBy } : {}),
    ...(typeof item.revocationNote === "string" ? { revocationNote: item.revocationNote } : {}),
  };
}

export class DynamoApiKeyStore implements ApiKeyStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async findByHash(keyHash: string, deadline?: Deadline): Promise<ApiKeyRecord | undefined> {
    const result = await storeCall(
      (options) =>
        this.client.send(new GetCommand({ TableName: this.tableName, Key: itemKeys.apiKey(keyHash) }), options),
      deadline,
    );
    return result.Item ? toRecord(result.Item) : undefined;
  }

  async save(record: ApiKeyRecord): Promise<void> {
    await storeCall((options) =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...itemKeys.apiKey(record.keyHash),
            keyId: record.keyId,
            name: record.name,
            createdAt: record.createdAt,
            revokedAt: record.revokedAt,
            ...(record.synthetic ? { synthetic: true } : {}),
            ...(record.scope === undefined ? {} : { scope: record.scope }),
            ...(record.replaces === undefined ? {} : { replaces: record.replaces }),
            // A synthetic key's in the table's TTL attribute, so that DynamoDB deletes its record by
            // itself ("typically within two days of expiration; items that have expired and not been
            // deleted will still show up in reads", https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html),
            // so the verifier checks the expiry itself.
            ...(record.expiresAt === undefined
              ? {}
              : { [expiryAttributeOf(record)]: epochSeconds(new Date(record.expiresAt)) }),
          },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
        options,
      ),
    );
  }

  async list(): Promise<ApiKeyRecord[]> {
    const items = await partitionItems(this.client, this.tableName, itemKeys.apiKeyPartition);
    return items.map(toRecord).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revoke(keyId: string, at: Date, note?: string): Promise<boolean> {
    const record = (await this.list()).find((candidate) => candidate.keyId === keyId);
    if (!record) return false;
    return this.update(record, {
      UpdateExpression: `SET revokedAt = if_not_exists(revokedAt, :at)${note === undefined ? "" : ", revocationNote = if_not_exists(revocationNote, :note)"}`,
      ExpressionAttributeValues: { ":at": at.toISOString(), ...(note === undefined ? {} : { ":note": note }) },
    });
  }

  async markReplaced(record: ApiKeyRecord, replacement: string, expiresAt: Date): Promise<boolean> {
    return this.update(record, {
      UpdateExpression: "SET replacedBy = :replacement, #expiry = :expiry",
      ExpressionAttributeNames: { "#expiry": expiryAttributeOf(record) },
      ExpressionAttributeValues: { ":replacement": replacement, ":expiry": epochSeconds(expiresAt) },
    });
  }

  /** Applies `parts` to `record`'s item; false when it is no longer stored. */
  private async update(record: ApiKeyRecord, parts: UpdateParts): Promise<boolean> {
    try {
      await storeCall((options) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKeys.apiKey(record.keyHash),
            ConditionExpression: "attribute_exists(pk)",
            ...parts,
          }),
          options,
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }
}

type UpdateParts = Pick<
  UpdateCommandInput,
  "UpdateExpression" | "ExpressionAttributeNames" | "ExpressionAttributeValues"
>;
