/**
 * DynamoDB read cost: items DynamoDB read per item returned, as DynamoDB itself reports it
 * (ScannedCount of each Query; a GetItem reads the one item its key names), on an in-memory
 * dynalite seeded with 1,000 and then 10,000 pets, 1% of them sold.
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { itemKeys } from "../../lib/db/table";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import type { Dependencies } from "../../lib/http/types";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { toProxyEvent } from "../../local/proxyEvent";
import { round } from "./stats";

const TABLE = "petstore-bench-reads";
const context = { awsRequestId: "bench", getRemainingTimeInMillis: () => 10_000 } as unknown as Context;

/** 1% sold (every 100th id), the rest alternating available and pending, as in the scale test. */
export const statusOf = (id: number): PetStatus => (id % 100 === 0 ? "sold" : id % 2 === 0 ? "available" : "pending");

interface Call {
  readonly command: string;
  readonly scanned: number;
  readonly returned: number;
  readonly capacityUnits: number | undefined;
}

/** Records what each call read, from DynamoDB's own answer; asks it for consumed capacity too. */
function recordReads(client: DynamoDBDocumentClient): { calls: Call[] } {
  const log = { calls: [] as Call[] };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const output = result.output as {
        ScannedCount?: number;
        Count?: number;
        Item?: unknown;
        ConsumedCapacity?: { CapacityUnits?: number };
      };
      const command = String(context.commandName);
      const isGet = command === "GetItemCommand" || command === "GetCommand";
      log.calls.push({
        command,
        // GetItem reports no ScannedCount: it reads at most the one item its key names.
        scanned: isGet ? 1 : (output.ScannedCount ?? 0),
        returned: isGet ? (output.Item ? 1 : 0) : (output.Count ?? 0),
        capacityUnits: output.ConsumedCapacity?.CapacityUnits,
      });
      return result;
    },
    { step: "initialize", name: "benchRecordReads" },
  );
  return log;
}

async function seed(client: DynamoDBDocumentClient, fromId: number, toId: number): Promise<void> {
  const createdAt = new Date();
  const batches: Record<string, unknown>[][] = [];
  for (let start = fromId; start <= toId; start += 25) {
    const batch: Record<string, unknown>[] = [];
    for (let id = start; id <= Math.min(toId, start + 24); id++) {
      batch.push(petItem({ id, name: `pet ${id}`, categoryId: 1, status: statusOf(id) }, createdAt, SHARED_PETS));
    }
    batches.push(batch);
  }
  for (let start = 0; start < batches.length; start += 8) {
    await Promise.all(
      batches.slice(start, start + 8).map(async (batch) => {
        let unprocessed: Record<string, unknown>[] | undefined = batch.map((Item) => ({ PutRequest: { Item } }));
        while (unprocessed && unprocessed.length > 0) {
          const result = await client.send(new BatchWriteCommand({ RequestItems: { [TABLE]: unprocessed } }));
          unprocessed = result.UnprocessedItems?.[TABLE] as Record<string, unknown>[] | undefined;
        }
      }),
    );
  }
  await client.send(new PutCommand({ TableName: TABLE, Item: { ...itemKeys.petIdCounter, lastId: toId } }));
}

export interface WalkResult {
  readonly pages: number;
  readonly itemsReturned: number;
  readonly itemsRead: number;
  /** itemsRead / itemsReturned over the whole walk. */
  readonly readPerReturned: number;
  /** The largest itemsRead / itemsReturned of any single page (or get). */
  readonly worstPage: number;
  readonly capacityUnits: number;
}

async function walk(
  handler: ProxyHandler,
  log: { calls: Call[] },
  key: string,
  firstQuery: string,
  maxPages: number,
): Promise<WalkResult> {
  let query: string | undefined = firstQuery;
  let pages = 0;
  let itemsReturned = 0;
  let itemsRead = 0;
  let worstPage = 0;
  let capacityUnits = 0;
  while (query !== undefined && pages < maxPages) {
    log.calls.length = 0;
    const result: APIGatewayProxyResult = await handler(
      toProxyEvent({
        method: "GET",
        path: "/pets",
        search: new URLSearchParams(query),
        headers: { authorization: `Bearer ${key}` },
        body: "",
        resource: "/pets",
        pathParameters: null,
        sourceIp: "127.0.0.1",
      }),
      context,
    );
    if (result.statusCode !== 200) throw new Error(`GET /pets?${query} answered ${result.statusCode}: ${result.body}`);
    const returned = (JSON.parse(result.body) as Pet[]).length;
    const read = log.calls.reduce((sum, call) => sum + call.scanned, 0);
    pages += 1;
    itemsReturned += returned;
    itemsRead += read;
    capacityUnits += log.calls.reduce((sum, call) => sum + (call.capacityUnits ?? 0), 0);
    if (returned > 0) worstPage = Math.max(worstPage, read / returned);
    const link = /<\/v1\/pets\?([^>]+)>; rel="next"/.exec(String(result.headers?.Link ?? ""));
    query = link?.[1];
  }
  return {
    pages,
    itemsReturned,
    itemsRead,
    readPerReturned: round(itemsRead / itemsReturned, 4),
    worstPage: round(worstPage, 4),
    capacityUnits: round(capacityUnits, 2),
  };
}

async function getMany(
  handler: ProxyHandler,
  log: { calls: Call[] },
  key: string,
  ids: readonly number[],
): Promise<WalkResult> {
  log.calls.length = 0;
  let itemsReturned = 0;
  for (const id of ids) {
    const result = await handler(
      toProxyEvent({
        method: "GET",
        path: `/pets/${id}`,
        search: new URLSearchParams(),
        headers: { authorization: `Bearer ${key}` },
        body: "",
        resource: "/pets/{petId}",
        pathParameters: { petId: String(id) },
        sourceIp: "127.0.0.1",
      }),
      context,
    );
    if (result.statusCode !== 200) throw new Error(`GET /pets/${id} answered ${result.statusCode}`);
    itemsReturned += 1;
  }
  const itemsRead = log.calls.reduce((sum, call) => sum + call.scanned, 0);
  const worst = Math.max(...log.calls.map((call) => (call.returned > 0 ? call.scanned / call.returned : Infinity)));
  return {
    pages: ids.length,
    itemsReturned,
    itemsRead,
    readPerReturned: round(itemsRead / itemsReturned, 4),
    worstPage: round(worst, 4),
    capacityUnits: round(
      log.calls.reduce((sum, call) => sum + (call.capacityUnits ?? 0), 0),
      2,
    ),
  };
}

export interface ReadCostResult {
  readonly seedSeconds: Record<string, number>;
  /** size → case → result, e.g. `10000` → `sold, limit 20`. */
  readonly sizes: Record<string, Record<string, WalkResult>>;
}

export const READ_COST_SIZES = [1_000, 10_000] as const;
export const READ_COST_LIMITS = [20, 100] as const;
/** Unfiltered walks stop after this many pages; filtered walks and gets cover what is asked. */
const UNFILTERED_PAGES = 10;
const GETS = 50;

export async function measureReadCost(): Promise<ReadCostResult> {
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  try {
    const raw = new DynamoDBClient({
      region: "us-east-1",
      endpoint: dynamo.endpoint,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    await ensureTable(raw, TABLE);
    const seeder = DynamoDBDocumentClient.from(raw);
    // Key lookups go through their own client, so the recorded reads are the pet reads alone.
    const keyStore = new DynamoApiKeyStore(seeder, TABLE);
    const { key } = await issueApiKey(keyStore, "local", "bench");
    const petsClient = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        region: "us-east-1",
        endpoint: dynamo.endpoint,
        credentials: { accessKeyId: "local", secretAccessKey: "local" },
      }),
      { marshallOptions: { removeUndefinedValues: true } },
    );
    const log = recordReads(petsClient);
    const deps: Dependencies = {
      pets: new DynamoPetRepository(petsClient, TABLE),
      keys: createApiKeyVerifier(keyStore, "local"),
      clock: () => new Date(),
    };
    const listPets = createListPets(deps);
    const getPet = createGetPet(deps);

    const result: ReadCostResult = { seedSeconds: {}, sizes: {} };
    let seeded = 0;
    for (const size of READ_COST_SIZES) {
      const started = performance.now();
      await seed(seeder, seeded + 1, size);
      seeded = size;
      result.seedSeconds[size] = round((performance.now() - started) / 1000, 1);
      const cases: Record<string, WalkResult> = {};
      for (const limit of READ_COST_LIMITS) {
        cases[`status=sold, limit ${limit}`] = await walk(listPets, log, key, `status=sold&limit=${limit}`, Infinity);
        cases[`unfiltered, limit ${limit}`] = await walk(listPets, log, key, `limit=${limit}`, UNFILTERED_PAGES);
      }
      const step = Math.floor(size / GETS);
      cases.getPet = await getMany(
        getPet,
        log,
        key,
        Array.from({ length: GETS }, (_, index) => 1 + index * step),
      );
      result.sizes[size] = cases;
    }
    return result;
  } finally {
    await dynamo.close();
  }
}
