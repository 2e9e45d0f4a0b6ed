import { ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { Deadline } from "../db/deadline";
import { partitionItems } from "../db/partitionItems";
import { storeCall } from "../db/storeErrors";
import { epochSeconds, itemKeys, TTL_ATTRIBUTE } from "../db/table";
import { SYNTHETIC_KEY_LIFETIME_SECONDS } from "./apiKeys";
import type { KeyUsageStore, KeyUse } from "./keyUsage";

/**
 * Only a later day moves it: racing containers change the item once a day, and a late write of
 * yesterday never hides today's (docs/capacity.md prices the writes this refuses).
 */
export const LATER_DAY_ONLY = "attribute_not_exists(lastUsedOn) OR lastUsedOn < :day";

export class DynamoKeyUsageStore implements KeyUsageStore {
  constructor(
    private readonly client: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  async recordUse(use: KeyUse, options: { synthetic?: boolean; deadline?: Deadline } = {}): Promise<boolean> {
    // A synthetic key lives a month at most (lib/auth/apiKeys.ts): its uses go with it, by TTL.
    const expiry = options.synthetic
      ? epochSeconds(new Date(Date.parse(use.lastUsedOn) + SYNTHETIC_KEY_LIFETIME_SECONDS * 1000 * 2))
      : undefined;
    try {
      await storeCall(
        (callOptions) =>
          this.client.send(
            new UpdateCommand({
              TableName: this.tableName,
              Key: itemKeys.keyUse(use.keyId, use.operationId),
              UpdateExpression: `SET keyId = :keyId, operationId = :operationId, lastUsedOn = :day${expiry === undefined ? "" : ", #ttl = :ttl"}`,
              ConditionExpression: LATER_DAY_ONLY,
              ...(expiry === undefined ? {} : { ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE } }),
              ExpressionAttributeValues: {
                ":keyId": use.keyId,
                ":operationId": use.operationId,
                ":day": use.lastUsedOn,
                ...(expiry === undefined ? {} : { ":ttl": expiry }),
              },
            }),
            callOptions,
          ),
        options.deadline,
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async list(): Promise<KeyUse[]> {
    const items = await partitionItems(this.client, this.tableName, itemKeys.keyUsePartition);
    return items.map((item) => ({
      keyId: item.keyId as string,
      operationId: item.operationId as string,
      lastUsedOn: item.lastUsedOn as string,
    }));
  }
}
