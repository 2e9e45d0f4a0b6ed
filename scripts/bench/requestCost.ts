/**
 * What one request of each kind costs in billed units, with the real handlers in-process against dynalite: request
 * units (ReturnConsumedCapacity), log and answer bytes, duration. dynalite reports the table's units only; DynamoDB
 * also charges the `byStatus` index a write per pet item (projection ALL), added here
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations).
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyResult, Context } from "aws-lambda";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { stageConfigs } from "../../infra/config";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier, isRefusal } from "../../lib/auth/verifier";
import { itemKeys, type TableArea, tableAreas } from "../../lib/db/table";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { toProxyEvent } from "../../local/proxyEvent";
import { COSTED_KINDS, COSTED_REQUESTS, type CostedRequest, LOG_EVENT_OVERHEAD_BYTES, SEEDED_PETS } from "./costed";
import { median, percentile, round } from "./stats";

export interface RequestCost {
  /** The DynamoDB calls one request makes (the key lookup excluded: see `keyLookup`). */
  readonly calls: readonly string[];
  /** Request units as DynamoDB reports them, and the index's writes (see above). */
  readonly readUnits: number;
  readonly writeUnits: number;
  readonly indexWriteUnits: number;
  /** Units by the part of the table they land on, index writes included: what the per-partition limits divide. */
  readonly areas: Readonly<Partial<Record<TableArea, { readonly readUnits: number; readonly writeUnits: number }>>>;
  /** Log events and bytes (message + per-event overhead) one request adds, by stage id. */
  readonly logs: Readonly<Record<string, { readonly events: number; readonly bytes: number }>>;
  /** Production's answer: its body, and its headers as HTTP/1.1 writes them (`name: value` and CRLF each). */
  readonly response: { readonly bodyBytes: number; readonly headerBytes: number };
  /** The handler's wall time per request (median and p90 over the measured requests), ms. */
  readonly durationMs: { readonly p50: number; readonly p90: number };
}

export interface RequestCostResult {
  readonly requests: Readonly<Record<CostedRequest, RequestCost>>;
  /** The bearer check's GetItem, once per key and container every 30 s (lib/auth/verifier.ts): not in a warm request. */
  readonly keyLookup: { readonly readUnits: number };
  /** Requests timed per kind, and the Node they ran on. */
  readonly samples: number;
  readonly node: string;
}

const TABLE = "petstore-bench-cost";
const USER_AGENT = "petstore-client/1.4 (+https://example.com) node/24";
/** `_X_AMZN_TRACE_ID` of a traced invocation (https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader). */
const LAMBDA_TRACE_HEADER = "Root=1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4;Parent=6c2d1b3a0f9e8d7c;Sampled=1";
const context = {
  awsRequestId: "00000000-0000-4000-8000-000000000000",
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

/** One call's units: read, written to the table, and written to the `byStatus` index. */
type Recorded = { command: string; area: TableArea; read: number; write: number; index: number };

/** Which part of the table (lib/db/table.ts) a call's partition key or index names. */
function areaOf(pk: string | undefined, indexName: string | undefined): TableArea {
  for (const [name, area] of Object.entries(tableAreas) as [TableArea, (typeof tableAreas)[TableArea]][]) {
    const matches = (key: string) => (key.endsWith("*") ? pk?.startsWith(key.slice(0, -1)) : pk === key);
    if ("index" in area ? indexName === area.index : !indexName && area.partitionKeys.some(matches)) return name;
  }
  throw new Error(`a call outside the table's known areas (pk ${pk}, index ${indexName})`);
}

type KeyValue = string | { S?: string } | undefined;
const text = (value: KeyValue) => (typeof value === "string" ? value : value?.S);

/** Asks DynamoDB for the consumed capacity of every call and records it by kind and area. */
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

/** What a request's recorded calls used, in total and by area (index writes to the index's). */
function unitsOf(calls: readonly Recorded[]) {
  const total = (field: "read" | "write" | "index") => calls.reduce((sum, call) => sum + call[field], 0);
  const areas: Partial<Record<TableArea, { readUnits: number; writeUnits: number }>> = {};
  const add = (area: TableArea, readUnits: number, writeUnits: number) => {
    const current = areas[area] ?? { readUnits: 0, writeUnits: 0 };
    areas[area] = { readUnits: current.readUnits + readUnits, writeUnits: current.writeUnits + writeUnits };
  };
  for (const call of calls) {
    add(call.area, call.read, call.write);
    if (call.index > 0) add("petsByStatus", 0, call.index);
  }
  return {
    calls: calls.map((call) => call.command),
    readUnits: total("read"),
    writeUnits: total("write"),
    indexWriteUnits: total("index"),
    areas,
  };
}

async function seed(client: DynamoDBDocumentClient): Promise<void> {
  const createdAt = new Date();
  const items = Array.from({ length: SEEDED_PETS }, (_, index) =>
    petItem(
      { id: index + 1, name: `Pet number ${index + 1}`, categoryId: 3, status: index % 2 ? "available" : "pending" },
      createdAt,
      SHARED_PETS,
    ),
  );
  // The counter too, so that new pets get ids after the seeded ones.
  items.push({ ...itemKeys.petIdCounter, lastId: SEEDED_PETS });
  for (let start = 0; start < items.length; start += 25) {
    const batch = items.slice(start, start + 25).map((Item) => ({ PutRequest: { Item } }));
    await client.send(new BatchWriteCommand({ RequestItems: { [TABLE]: batch } }));
  }
}

/** The bytes of a handler's answer (text, single-valued headers): its body, and its headers as HTTP/1.1 lines. */
const responseBytes = ({ body, headers = {} }: APIGatewayProxyResult): RequestCost["response"] => {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return { bodyBytes: Buffer.byteLength(body), headerBytes: Buffer.byteLength(lines.join("")) };
};

export async function measureRequestCost(options: { samples?: number } = {}): Promise<RequestCostResult> {
  const samples = options.samples ?? 200;
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  const credentials = { accessKeyId: "local", secretAccessKey: "local" };
  const rawClient = () => new DynamoDBClient({ region: "us-east-1", endpoint: dynamo.endpoint, credentials });
  const newClient = () =>
    DynamoDBDocumentClient.from(rawClient(), { marshallOptions: { removeUndefinedValues: true } });
  try {
    await ensureTable(rawClient(), TABLE);
    const setup = newClient();
    await seed(setup);
    const { key } = await issueApiKey(new DynamoApiKeyStore(setup, TABLE), "local", "cost");

    // The key lookup through a recorded client of its own, once: warm requests reuse its answer.
    const keyClient = newClient();
    const keyCalls = recordCapacity(keyClient);
    const verifier = createApiKeyVerifier(new DynamoApiKeyStore(keyClient, TABLE), "local");
    if (isRefusal(await verifier.verify(key))) throw new Error("the bench's key was not recognised");

    const client = newClient();
    const calls = recordCapacity(client);
    const lines: string[] = [];
    const handlersFor = (config: (typeof stageConfigs)[keyof typeof stageConfigs]) => {
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
          // One write may hold several lines (the request line and the metrics line go out together); Lambda makes each
          // line a log event of its own.
          write: (written) => lines.push(...written.split("\n")),
          fallbackTraceHeader: () => LAMBDA_TRACE_HEADER,
        }),
      };
      const create = { listPets: createListPets, getPet: createGetPet, createPet: createCreatePet };
      return Object.fromEntries(
        COSTED_KINDS.map((kind) => [kind, create[COSTED_REQUESTS[kind].operation](deps)]),
      ) as Record<CostedRequest, ProxyHandler>;
    };
    const stages = Object.values(stageConfigs);
    const handlers = Object.fromEntries(stages.map((config) => [config.id, handlersFor(config)]));
    let counter = 0;
    let lastResult: APIGatewayProxyResult | undefined;
    /** Sends request `counter` of `kind` and answers its duration; any other status than expected fails the run. */
    const invoke = async (handler: ProxyHandler, kind: CostedRequest): Promise<number> => {
      const { search, petId, body, headers } = COSTED_REQUESTS[kind].request(counter++);
      const event = toProxyEvent({
        method: body ? "POST" : "GET",
        path: petId ? `/pets/${petId}` : "/pets",
        search: new URLSearchParams(search ?? ""),
        headers: {
          authorization: `Bearer ${key}`,
          "user-agent": USER_AGENT,
          ...(body ? { "content-type": "application/json" } : {}),
          ...headers,
        },
        body: body ?? "",
        resource: petId ? "/pets/{petId}" : "/pets",
        pathParameters: petId ? { petId } : null,
        sourceIp: "203.0.113.7",
      });
      const started = performance.now();
      lastResult = await handler(event, context);
      const elapsed = performance.now() - started;
      const expected = body ? 201 : 200;
      if (lastResult.statusCode !== expected)
        throw new Error(`${kind} answered ${lastResult.statusCode}: ${lastResult.body}`);
      return elapsed;
    };

    const requests = {} as Record<CostedRequest, RequestCost>;
    for (const kind of COSTED_KINDS) {
      const logs: Record<string, { events: number; bytes: number }> = {};
      let units: ReturnType<typeof unitsOf> | undefined;
      let response: RequestCost["response"] | undefined;
      for (const { id } of stages) {
        // A warm container: the first request of each handler (its cold start) is not counted.
        const handler = handlers[id]?.[kind] as ProxyHandler;
        await invoke(handler, kind);
        calls.length = 0;
        lines.length = 0;
        await invoke(handler, kind);
        logs[id] = {
          events: lines.length,
          bytes: lines.reduce((sum, line) => sum + Buffer.byteLength(line) + LOG_EVENT_OVERHEAD_BYTES, 0),
        };
        const measured = unitsOf(calls);
        // The stages differ in log level only: different calls would mean the measurement is wrong.
        if (units && JSON.stringify(units) !== JSON.stringify(measured)) {
          throw new Error(`${kind} used the table differently in two stages`);
        }
        units = measured;
        if (id === stageConfigs.Production.id && lastResult) response = responseBytes(lastResult);
      }
      // Durations with the production stage's handlers (its log level), after the warm-up above.
      const production = handlers[stageConfigs.Production.id]?.[kind] as ProxyHandler;
      const durations: number[] = [];
      for (let index = 0; index < samples; index++) durations.push(await invoke(production, kind));
      requests[kind] = {
        ...(units as ReturnType<typeof unitsOf>),
        logs,
        response: response as RequestCost["response"],
        durationMs: { p50: round(median(durations), 2), p90: round(percentile(durations, 90), 2) },
      };
    }
    return { requests, keyLookup: { readUnits: unitsOf(keyCalls).readUnits }, samples, node: process.version };
  } finally {
    await dynamo.close();
  }
}
