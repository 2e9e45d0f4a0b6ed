/**
 * The bare handler the cold ratios compare ours with (./cold.ts): what a user would write without Middy, making our
 * function's DynamoDB calls in the same order (the bench fails if they differ). Built twice by ./build.ts: with our
 * esbuild options (the floor), and as NodejsFunction bundles by default (the peer).
 */
import { createHash, randomUUID } from "node:crypto";
import { ConditionalCheckFailedException, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { itemKeys } from "../../lib/db/table";

const TableName = process.env.PETS_TABLE_NAME;
// Region, endpoint and credentials from the environment, where Lambda puts them.
const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));
const SHARED = { kind: "shared" } as const;
const PAGE = 20;

const json = { "Content-Type": "application/json" };
const answer = (statusCode: number, body: unknown) => ({ statusCode, headers: json, body: JSON.stringify(body) });

/** An UpdateItem; false when its condition failed. */
async function update(Key: object, expression: string, values: object, condition?: string) {
  const input = { TableName, Key, UpdateExpression: expression, ExpressionAttributeValues: values };
  try {
    const result = await db.send(
      new UpdateCommand({ ...input, ConditionExpression: condition, ReturnValues: "UPDATED_NEW" }),
    );
    return result.Attributes;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

const put = (Item: Record<string, unknown>) =>
  db.send(new PutCommand({ TableName, Item, ConditionExpression: "attribute_not_exists(pk)" }));

async function createPet(body: { name: string; categoryId: number }, keyId: string, idempotencyKey?: string) {
  const record = idempotencyKey === undefined ? undefined : itemKeys.idempotency(keyId, idempotencyKey);
  const lock = { ":token": randomUUID() };
  if (record) await put({ ...record, state: "in_progress", lockToken: lock[":token"] });
  const counter = await update(itemKeys.petIdCounter, "ADD lastId :one", { ":one": 1 });
  const pet = { id: counter && (counter.lastId as number), ...body, status: "available" };
  if (record) await update(record, "SET petId = :id", { ...lock, ":id": pet.id }, "lockToken = :token");
  await put({ ...itemKeys.pet(pet.id as number, SHARED), ...pet, createdAt: new Date().toISOString() });
  if (record) await update(record, "SET pet = :pet REMOVE lockToken", { ...lock, ":pet": pet }, "lockToken = :token");
  return answer(201, pet);
}

export const handler = async (event: APIGatewayProxyEvent) => {
  const token = /^Bearer (.+)$/.exec(event.headers.authorization ?? "")?.[1] ?? "";
  const keyHash = createHash("sha256").update(token).digest("hex");
  const { Item: key } = await db.send(new GetCommand({ TableName, Key: itemKeys.apiKey(keyHash) }));
  if (!key || key.revokedAt) return answer(401, { message: "unauthorized" });
  const petId = event.pathParameters?.petId;
  const operationId = event.httpMethod === "POST" ? "createPet" : petId ? "getPet" : "listPets";
  const use = { ":keyId": key.keyId, ":operationId": operationId, ":day": new Date().toISOString().slice(0, 10) };
  const recordUse = "SET keyId = :keyId, operationId = :operationId, lastUsedOn = :day";
  await update(
    itemKeys.keyUse(key.keyId, operationId),
    recordUse,
    use,
    "attribute_not_exists(lastUsedOn) OR lastUsedOn < :day",
  );
  if (petId) {
    const { Item } = await db.send(
      new GetCommand({ TableName, Key: itemKeys.pet(Number(petId), SHARED), ConsistentRead: true }),
    );
    return Item
      ? answer(200, { id: Item.id, name: Item.name, categoryId: Item.categoryId, status: Item.status })
      : answer(404, {});
  }
  if (operationId === "listPets") {
    const { pk, sk } = itemKeys.pet(0, SHARED);
    const query = { TableName, KeyConditionExpression: "pk = :pk AND sk > :after", ConsistentRead: true };
    const values = { ":pk": pk, ":after": sk };
    const { Items = [] } = await db.send(
      new QueryCommand({ ...query, ExpressionAttributeValues: values, Limit: PAGE + 1 }),
    );
    return answer(200, Items.slice(0, PAGE));
  }
  const body = JSON.parse(event.body ?? "null");
  if (typeof body?.name !== "string" || typeof body.categoryId !== "number") return answer(400, {});
  return createPet({ name: body.name, categoryId: body.categoryId }, key.keyId, event.headers["idempotency-key"]);
};
