import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { Deadline } from "../db/deadline";
import { storeCall } from "../db/storeErrors";
import { epochSeconds, itemKeys, TTL_ATTRIBUTE } from "../db/table";
import type { ApiKeyRecord, ApiKeyStore } from "./apiKeys";

function toRecord(item: Record<string, unknown>): ApiKeyRecord {
  return {
    keyId: item.keyId as string,
    name: item.name as string,
    keyHash: item.sk as string,
    createdAt: item.createdAt as string,
    revokedAt: item.revokedAt as string | undefined,
    ...(item.synthetic === true ? { synthetic: true } : {}),
    // The TTL attribute holds epoch seconds (lib/db/table.ts).
    ...(typeof item[TTL_ATTRIBUTE] === "number"
      ? { expiresAt: new Date(item[TTL_ATTRIBUTE] * 1000).toISOString() }
      : {}),
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
            // In the table's TTL attribute, so that DynamoDB deletes an expired key's record by itself
            // ("typically within two days of expiration; items that have expired and not been deleted
            // will still show up in reads", https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html),
            // so the verifier checks the expiry itself.
            ...(record.expiresAt === undefined ? {} : { [TTL_ATTRIBUTE]: epochSeconds(new Date(record.expiresAt)) }),
          },
          ConditionExpression: "attribute_not_exists(pk)",
        }),
        options,
      ),
    );
  }

  async list(): Promise<ApiKeyRecord[]> {
    const records: ApiKeyRecord[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const result = await storeCall((options) =>
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: "pk = :pk",
            ExpressionAttributeValues: { ":pk": itemKeys.apiKeyPartition },
            ExclusiveStartKey: startKey,
          }),
          options,
        ),
      );
      records.push(...(result.Items ?? []).map(toRecord));
      startKey = result.LastEvaluatedKey;
    } while (startKey);
    return records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revoke(keyId: string, at: Date): Promise<boolean> {
    const record = (await this.list()).find((candidate) => candidate.keyId === keyId);
    if (!record) return false;
    try {
      await storeCall((options) =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: itemKeys.apiKey(record.keyHash),
            UpdateExpression: "SET revokedAt = if_not_exists(revokedAt, :at)",
            ConditionExpression: "attribute_exists(pk)",
            ExpressionAttributeValues: { ":at": at.toISOString() },
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
