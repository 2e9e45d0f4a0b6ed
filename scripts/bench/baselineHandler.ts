/**
 * The cold-start baseline: the smallest honest Lambda that reads one pet. It builds the same
 * DynamoDB document client as lib/db/client.ts (same client options), with no Middy and no project
 * code, so that "ours / baseline" isolates what the project adds on top of the SDK.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";

const tableName = process.env.PETS_TABLE_NAME;
const client = DynamoDBDocumentClient.from(
  new DynamoDBClient({
    region: process.env.AWS_REGION,
    maxAttempts: 3,
    requestHandler: { requestTimeout: 1500, connectionTimeout: 500 },
  }),
  { marshallOptions: { removeUndefinedValues: true } },
);

export const handler = async (event: { pathParameters?: { petId?: string } | null }) => {
  const id = event.pathParameters?.petId ?? "1";
  const { Item } = await client.send(
    new GetCommand({ TableName: tableName, Key: { pk: "PET", sk: id.padStart(16, "0") }, ConsistentRead: true }),
  );
  return { statusCode: Item ? 200 : 404, body: JSON.stringify(Item ?? null) };
};
