import { type DynamoDBDocumentClient, paginateQuery } from "@aws-sdk/lib-dynamodb";
import { storeCall } from "./storeErrors";
import { petTable } from "./table";

/**
 * Every item of one partition of the table, page after page: the key records and the keys' uses,
 * which commands (keys list, the deprecation report) read whole.
 */
export function partitionItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  partition: string,
): Promise<Record<string, unknown>[]> {
  return storeCall(async () => {
    const items: Record<string, unknown>[] = [];
    const pages = paginateQuery(
      { client },
      {
        TableName: tableName,
        KeyConditionExpression: "#pk = :pk",
        ExpressionAttributeNames: { "#pk": petTable.partitionKey.name },
        ExpressionAttributeValues: { ":pk": partition },
      },
    );
    for await (const page of pages) items.push(...(page.Items ?? []));
    return items;
  });
}
