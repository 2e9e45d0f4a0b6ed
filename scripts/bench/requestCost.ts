/**
 * What one request of each operation costs in the units AWS bills: DynamoDB request units (as
 * DynamoDB reports them with ReturnConsumedCapacity, here on dynalite), bytes of log lines written
 * to CloudWatch Logs, bytes of the answer (what leaves AWS as data transfer out), and the handler's
 * duration. Handlers run in-process with the real repository, idempotency store and key verifier
 * against an in-memory dynalite over HTTP, so every store call is a real round trip, as in Lambda.
 *
 * dynalite computes request units as DynamoDB documents them (item size in 1 KB steps for writes,
 * 4 KB steps for reads, half for eventually consistent reads) for the table only: DynamoDB also
 * charges a write to the `byStatus` index for every pet item written (projection ALL, so the same
 * size), which is added here from the pet writes dynalite measured.
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { stageConfigs } from "../../infra/config";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier, isRefusal } from "../../lib/auth/verifier";
import type { PetStatus } from "../../lib/contract/schemas";
import { itemKeys, type TableArea, tableAreas } from "../../lib/db/table";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { toProxyEvent } from "../../local/proxyEvent";
import { LOG_EVENT_OVERHEAD_BYTES } from "./capacity";
import { median, percentile, round } from "./stats";

/** The requests costed, one per way an operation uses the table. */
export const COSTED_REQUESTS = {
  listPets: "GET /pets (page of 20)",
  listPetsByStatus: "GET /pets?status=available (page of 20)",
  getPet: "GET /pets/{petId}",
  createPet: "POST /pets",
  createPetIdempotent: "POST /pets with Idempotency-Key",
} as const;
export type CostedRequest = keyof typeof COSTED_REQUESTS;

export interface RequestCost {
  /** The DynamoDB calls one request makes (the key lookup excluded: see `keyLookup`). */
  readonly calls: readonly string[];
  /** Read request units, as DynamoDB reports them. */
  readonly readUnits: number;
  /** Write request units on the table, as DynamoDB reports them. */
  readonly writeUnits: number;
  /** Write request units on the `byStatus` index: one per pet item written (see above). */
  readonly indexWriteUnits: number;
  /**
   * Request units by the part of the table they land on (one partition each, or one partition of the
   * index: the one of the pet's status), index writes included: what the per-partition limits divide.
   */
  readonly areas: Readonly<Partial<Record<TableArea, { readonly readUnits: number; readonly writeUnits: number }>>>;
  /** Log events and bytes (message + per-event overhead) one request adds, by stage id. */
  readonly logs: Readonly<Record<string, { readonly events: number; readonly bytes: number }>>;
  /**
   * The answer the handler gives (production's handlers): its body, and its headers as HTTP/1.1
   * writes them (`name: value` and CRLF each). API Gateway adds its own headers and the status line
   * (./capacity.ts sizes those).
   */
  readonly response: { readonly bodyBytes: number; readonly headerBytes: number };
  /** The handler's wall time per request (median and p90 over the measured requests), ms. */
  readonly durationMs: { readonly p50: number; readonly p90: number };
}

export interface RequestCostResult {
  readonly requests: Readonly<Record<CostedRequest, RequestCost>>;
  /**
   * The bearer check's GetItem, made once per key and container every 30 s (lib/auth/verifier.ts):
   * not part of a warm request, listed so its cost is known.
   */
  readonly keyLookup: { readonly readUnits: number };
  /** Requests timed per operation. */
  readonly samples: number;
  readonly node: string;
}

const SEEDED_PETS = 100;
const TABLE = "petstore-bench-cost";
const USER_AGENT = "petstore-client/1.4 (+https://example.com) node/24";
/**
 * `_X_AMZN_TRACE_ID` as Lambda sets it for a traced invocation, so the request line carries its
 * trace id as on AWS (https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader).
 */
const LAMBDA_TRACE_HEADER = "Root=1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4;Parent=6c2d1b3a0f9e8d7c;Sampled=1";
const context = {
  awsRequestId: "00000000-0000-4000-8000-000000000000",
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

interface Recorded {
  command: string;
  /** The part of the table the call touched (lib/db/table.ts's names). */
  area: TableArea;
  read: number;
  write: number;
  index: number;
}

/** Which part of the table a call's partition key or index names. */
function areaOf(pk: string | undefined, indexName: string | undefined): TableArea {
  for (const [name, area] of Object.entries(tableAreas) as [TableArea, (typeof tableAreas)[TableArea]][]) {
    if ("index" in area) {
      if (indexName === area.index) return name;
    } else if (
      indexName === undefined &&
      pk !== undefined &&
      area.partitionKeys.some((key) => (key.endsWith("*") ? pk.startsWith(key.slice(0, -1)) : pk === key))
    ) {
      return name;
    }
  }
  throw new Error(`a call outside the table's known areas (pk ${pk}, index ${indexName})`);
}

type KeyValue = string | { S?: string } | undefined;
const text = (value: KeyValue) => (typeof value === "string" ? value : value?.S);

/** Asks DynamoDB for the consumed capacity of every call and records it by kind. */
function recordCapacity(client: DynamoDBDocumentClient): Recorded[] {
  const calls: Recorded[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as {
        ReturnConsumedCapacity?: string;
        Item?: { pk?: KeyValue };
        Key?: { pk?: KeyValue };
        IndexName?: string;
        ExpressionAttributeValues?: Record<string, KeyValue>;
      };
      input.ReturnConsumedCapacity = "TOTAL";
      const result = await next(args);
      const units = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity
        ?.CapacityUnits;
      // The document client's commands (GetCommand) and the table API's (GetItemCommand) alike.
      const command = String(context.commandName)
        .replace(/Command$/, "")
        .replace(/^(Get|Put|Update|Delete)$/, "$1Item");
      if (units === undefined) throw new Error(`${command} reported no consumed capacity`);
      const isRead = command === "GetItem" || command === "Query";
      // A Query names its partition in the key condition's `:pk` value (lib/pets/repository.ts).
      const pk = text(input.Item?.pk ?? input.Key?.pk ?? input.ExpressionAttributeValues?.[":pk"]);
      // Only pet items carry the index's keys (lib/db/table.ts), so only they are written to it.
      const isPetWrite = command === "PutItem" && pk === itemKeys.petPartition;
      calls.push({
        command,
        area: areaOf(pk, input.IndexName),
        read: isRead ? units : 0,
        write: isRead ? 0 : units,
        index: isPetWrite ? units : 0,
      });
      return result;
    },
    { step: "initialize", name: "benchRecordCapacity" },
  );
  return calls;
}

function areaUnits(calls: readonly Recorded[]): RequestCost["areas"] {
  const areas: Partial<Record<TableArea, { readUnits: number; writeUnits: number }>> = {};
  const add = (area: TableArea, readUnits: number, writeUnits: number) => {
    const current = areas[area] ?? { readUnits: 0, writeUnits: 0 };
    areas[area] = { readUnits: current.readUnits + readUnits, writeUnits: current.writeUnits + writeUnits };
  };
  for (const call of calls) {
    add(call.area, call.read, call.write);
    if (call.index > 0) add("petsByStatus", 0, call.index);
  }
  return areas;
}

const statusOf = (id: number): PetStatus => (id % 2 === 0 ? "available" : "pending");

async function seed(client: DynamoDBDocumentClient): Promise<void> {
  const createdAt = new Date();
  const items = Array.from({ length: SEEDED_PETS }, (_, index) =>
    petItem(
      { id: index + 1, name: `Pet number ${index + 1}`, categoryId: 3, status: statusOf(index + 1) },
      createdAt,
      SHARED_PETS,
    ),
  );
  for (let start = 0; start < items.length; start += 25) {
    const batch = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
    await client.send(new BatchWriteCommand({ RequestItems: { [TABLE]: batch } }));
  }
  await client.send(new PutCommand({ TableName: TABLE, Item: { ...itemKeys.petIdCounter, lastId: SEEDED_PETS } }));
}

interface RequestShape {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly resource: string;
  readonly search?: string;
  readonly pathParameters?: Record<string, string>;
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

/** Request `index` of each costed kind; every create is a new pet, every idempotent one a new key. */
function requestFor(kind: CostedRequest, index: number): RequestShape {
  const newPet = JSON.stringify({ name: `Rex the ${index}th`, categoryId: 3, status: "available" });
  switch (kind) {
    case "listPets":
      return { method: "GET", path: "/pets", resource: "/pets", search: "limit=20" };
    case "listPetsByStatus":
      return { method: "GET", path: "/pets", resource: "/pets", search: "status=available&limit=20" };
    case "getPet": {
      const id = String(1 + (index % SEEDED_PETS));
      return { method: "GET", path: `/pets/${id}`, resource: "/pets/{petId}", pathParameters: { petId: id } };
    }
    case "createPet":
      return { method: "POST", path: "/pets", resource: "/pets", body: newPet };
    case "createPetIdempotent":
      return {
        method: "POST",
        path: "/pets",
        resource: "/pets",
        body: newPet,
        headers: { "idempotency-key": `order-${index.toString().padStart(8, "0")}-9f1c2b7e` },
      };
  }
}

const expectedStatus: Record<CostedRequest, number> = {
  listPets: 200,
  listPetsByStatus: 200,
  getPet: 200,
  createPet: 201,
  createPetIdempotent: 201,
};

/** The bytes of a handler's answer: its body as sent, and its headers as HTTP/1.1 lines. */
export function responseBytes(result: APIGatewayProxyResult): RequestCost["response"] {
  const body = result.body ?? "";
  const bodyBytes = result.isBase64Encoded ? Buffer.from(body, "base64").length : Buffer.byteLength(body);
  const lines = [
    ...Object.entries(result.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ...Object.entries(result.multiValueHeaders ?? {}).flatMap(([name, values]) =>
      values.map((value) => `${name}: ${value}`),
    ),
  ];
  return { bodyBytes, headerBytes: lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 2, 0) };
}

export async function measureRequestCost(options: { samples?: number } = {}): Promise<RequestCostResult> {
  const samples = options.samples ?? 200;
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  const rawClient = () =>
    new DynamoDBClient({
      region: "us-east-1",
      endpoint: dynamo.endpoint,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
  const newClient = () =>
    DynamoDBDocumentClient.from(rawClient(), { marshallOptions: { removeUndefinedValues: true } });
  try {
    await ensureTable(rawClient(), TABLE);
    const setup = newClient();
    await seed(setup);
    const { key } = await issueApiKey(new DynamoApiKeyStore(setup, TABLE), "local", "cost");

    // The key lookup through its own recorded client, once.
    const keyClient = newClient();
    const keyCalls = recordCapacity(keyClient);
    const keyStore = new DynamoApiKeyStore(keyClient, TABLE);
    const verifier = createApiKeyVerifier(keyStore, "local");
    if (isRefusal(await verifier.verify(key))) throw new Error("the bench's key was not recognised");
    const keyLookup = { readUnits: keyCalls.reduce((sum, call) => sum + call.read, 0) };

    const client = newClient();
    const calls = recordCapacity(client);
    const lines: string[] = [];
    const handlersFor = (stageId: string) => {
      const config = stageConfigs[stageId as keyof typeof stageConfigs];
      const deps = {
        pets: new DynamoPetRepository(client, TABLE),
        idempotency: new DynamoIdempotencyStore(client, TABLE),
        keys: verifier,
        clock: () => new Date(),
        telemetry: createTelemetry({
          service: "petstore",
          stage: config.stage,
          level: config.functions.logLevel,
          format: "json",
          // One write may hold several lines (the request line and the metrics line go out
          // together); Lambda makes each line a log event of its own.
          write: (written) => lines.push(...written.split("\n")),
          fallbackTraceHeader: () => LAMBDA_TRACE_HEADER,
        }),
      };
      const list = createListPets(deps);
      return {
        listPets: list,
        listPetsByStatus: list,
        getPet: createGetPet(deps),
        createPet: createCreatePet(deps),
        createPetIdempotent: createCreatePet(deps),
      } satisfies Record<CostedRequest, ProxyHandler>;
    };
    const stageIds = Object.keys(stageConfigs);
    const handlers = Object.fromEntries(stageIds.map((id) => [id, handlersFor(id)]));
    let counter = 0;
    let lastResult: APIGatewayProxyResult | undefined;
    const invoke = async (handler: ProxyHandler, kind: CostedRequest): Promise<number> => {
      const shape = requestFor(kind, counter++);
      const event = toProxyEvent({
        method: shape.method,
        path: shape.path,
        search: new URLSearchParams(shape.search ?? ""),
        headers: {
          authorization: `Bearer ${key}`,
          "user-agent": USER_AGENT,
          ...(shape.body ? { "content-type": "application/json" } : {}),
          ...shape.headers,
        },
        body: shape.body ?? "",
        resource: shape.resource,
        pathParameters: shape.pathParameters ?? null,
        sourceIp: "203.0.113.7",
      });
      const started = performance.now();
      const result: APIGatewayProxyResult = await handler(event, context);
      const elapsed = performance.now() - started;
      lastResult = result;
      if (result.statusCode !== expectedStatus[kind]) {
        throw new Error(`${COSTED_REQUESTS[kind]} answered ${result.statusCode}: ${result.body}`);
      }
      return elapsed;
    };

    const requests = {} as Record<CostedRequest, RequestCost>;
    for (const kind of Object.keys(COSTED_REQUESTS) as CostedRequest[]) {
      const logs: Record<string, { events: number; bytes: number }> = {};
      let units: Omit<RequestCost, "logs" | "response" | "durationMs"> | undefined;
      let response: RequestCost["response"] | undefined;
      for (const stageId of stageIds) {
        const handler = handlers[stageId]?.[kind] as ProxyHandler;
        // A warm container: the first request of each handler (its cold start) is not counted.
        await invoke(handler, kind);
        calls.length = 0;
        lines.length = 0;
        await invoke(handler, kind);
        logs[stageId] = {
          events: lines.length,
          bytes: lines.reduce((sum, line) => sum + Buffer.byteLength(line) + LOG_EVENT_OVERHEAD_BYTES, 0),
        };
        const measured = {
          calls: calls.map((call) => call.command),
          readUnits: calls.reduce((sum, call) => sum + call.read, 0),
          writeUnits: calls.reduce((sum, call) => sum + call.write, 0),
          indexWriteUnits: calls.reduce((sum, call) => sum + call.index, 0),
          areas: areaUnits(calls),
        };
        if (units && JSON.stringify(units) !== JSON.stringify(measured)) {
          throw new Error(`${COSTED_REQUESTS[kind]} used the table differently in two stages`);
        }
        units = measured;
        if (stageId === stageConfigs.Production.id) response = responseBytes(lastResult as APIGatewayProxyResult);
      }
      // Durations with the production stage's handlers (its log level), after the warm-up above.
      const production = handlers[stageConfigs.Production.id]?.[kind] as ProxyHandler;
      const durations: number[] = [];
      for (let index = 0; index < samples; index++) durations.push(await invoke(production, kind));
      requests[kind] = {
        ...(units as Omit<RequestCost, "logs" | "response" | "durationMs">),
        logs,
        response: response as RequestCost["response"],
        durationMs: { p50: round(median(durations), 2), p90: round(percentile(durations, 90), 2) },
      };
    }
    return { requests, keyLookup, samples, node: process.version };
  } finally {
    await dynamo.close();
  }
}
