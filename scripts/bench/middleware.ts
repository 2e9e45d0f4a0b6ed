/**
 * Middleware overhead: warm, in-process invocations of each handler (the full Middy chain, with
 * the repository and key store in memory) against the bare operation the chain wraps. Both sides
 * get the same kind of request; telemetry builds its log and metric lines but writes them nowhere,
 * so the figure includes their cost but no I/O.
 */
import { fileURLToPath } from "node:url";
import type { APIGatewayProxyEvent, Context } from "aws-lambda";
import {
  type CreatePetDependencies,
  createHandler as createCreatePet,
  createPetOperation,
} from "../../functions/createPet";
import { createHandler as createGetPet, getPetOperation } from "../../functions/getPet";
import { createHandler as createListPets, listPetsOperation } from "../../functions/listPets";
import { type ApiKeyRecord, type ApiKeyStore, issueApiKey } from "../../lib/auth/apiKeys";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import type { NewPet, PetStatus } from "../../lib/contract/schemas";
import type { Operation, ProxyHandler } from "../../lib/http/apiHandler";
import type { ApiEvent } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";
import type { OperationId } from "../../lib/routes";
import { toProxyEvent } from "../../local/proxyEvent";
import { runJsonChild } from "./jsonChild";

/** The deployed functions' JSON telemetry at INFO, formatted in full but written nowhere. */
export function discardedTelemetry() {
  return createTelemetry({
    service: "petstore",
    stage: "local",
    level: "INFO",
    format: "json",
    write: () => undefined,
  });
}

import { median, percentile, round } from "./stats";

/** Keys in a Map: the verifier (hashing, shape check, cache) is the real one. */
class InMemoryKeyStore implements ApiKeyStore {
  private readonly records = new Map<string, ApiKeyRecord>();
  async findByHash(keyHash: string) {
    return this.records.get(keyHash);
  }
  async save(record: ApiKeyRecord) {
    this.records.set(record.keyHash, record);
  }
  async list() {
    return [...this.records.values()];
  }
  async revoke() {
    return false;
  }
}

/** The operations functions/*.ts wrap in the chain: the "bare" side of the comparison. */
const bareOperations: Record<OperationId, (deps: CreatePetDependencies) => Operation> = {
  listPets: listPetsOperation,
  getPet: getPetOperation,
  createPet: createPetOperation,
};

const handlerFactories: Record<OperationId, (deps: CreatePetDependencies) => ProxyHandler> = {
  listPets: createListPets,
  getPet: createGetPet,
  createPet: createCreatePet,
};

const context = {
  awsRequestId: "bench",
  functionName: "bench",
  // Real Lambda contexts have it, and Middy arms its early-timeout timer per invocation because of it.
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

interface RequestShape {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly resource: string;
  readonly pathParameters: Record<string, string> | null;
  readonly body: string;
}

const newPetBody = JSON.stringify({ name: "Rex", categoryId: 1, status: "available" } satisfies NewPet);
const requests: Record<OperationId, RequestShape> = {
  listPets: { method: "GET", path: "/pets", query: "limit=20", resource: "/pets", pathParameters: null, body: "" },
  getPet: {
    method: "GET",
    path: "/pets/7",
    query: "",
    resource: "/pets/{petId}",
    pathParameters: { petId: "7" },
    body: "",
  },
  createPet: { method: "POST", path: "/pets", query: "", resource: "/pets", pathParameters: null, body: newPetBody },
};

function proxyEventFor(shape: RequestShape, key: string): APIGatewayProxyEvent {
  return toProxyEvent({
    method: shape.method,
    path: shape.path,
    search: new URLSearchParams(shape.query),
    headers: {
      authorization: `Bearer ${key}`,
      "user-agent": "bench",
      ...(shape.body ? { "content-type": "application/json" } : {}),
    },
    body: shape.body,
    resource: shape.resource,
    pathParameters: shape.pathParameters,
    sourceIp: "127.0.0.1",
  });
}

/** The event as the chain hands it to the operation: headers lower-cased, body parsed, caller known. */
function operationEventFor(shape: RequestShape, key: string, keyId: string): ApiEvent {
  const event = proxyEventFor(shape, key);
  return { ...event, body: shape.body ? JSON.parse(shape.body) : null, principal: { keyId } };
}

async function dependencies(withTelemetry: boolean) {
  const store = new InMemoryKeyStore();
  const { key, record } = await issueApiKey(store, "local", "bench");
  const pets = new InMemoryPetRepository();
  const statuses: PetStatus[] = ["available", "pending", "sold"];
  for (let id = 1; id <= 100; id++) {
    await pets.insert({
      id: await pets.allocateId(),
      name: `pet ${id}`,
      categoryId: 1,
      status: statuses[id % 3] as PetStatus,
    });
  }
  const deps: CreatePetDependencies = {
    pets,
    idempotency: new InMemoryIdempotencyStore(),
    keys: createApiKeyVerifier(store, "local"),
    clock: () => new Date(),
    ...(withTelemetry
      ? {
          telemetry: discardedTelemetry(),
        }
      : {}),
  };
  return { deps, key, keyId: record.keyId };
}

async function checkSameAnswers(operationId: OperationId): Promise<void> {
  const chained = await dependencies(true);
  const bare = await dependencies(false);
  const shape = requests[operationId];
  const viaChain = await handlerFactories[operationId](chained.deps)(proxyEventFor(shape, chained.key), context);
  const viaBare = await bareOperations[operationId](bare.deps)(operationEventFor(shape, bare.key, bare.keyId));
  if (viaChain.statusCode !== viaBare.statusCode || viaChain.body !== JSON.stringify(viaBare.body)) {
    throw new Error(
      `${operationId}: the bench's bare operation no longer matches functions/${operationId}.ts ` +
        `(${viaChain.statusCode} ${viaChain.body} vs ${viaBare.statusCode} ${JSON.stringify(viaBare.body)})`,
    );
  }
}

export interface OverheadResult {
  readonly iterations: number;
  readonly operations: Record<
    string,
    {
      readonly bareUs: { p50: number; p99: number };
      readonly handlerUs: { p50: number; p99: number };
      readonly handlerWithoutTelemetryUs: { p50: number; p99: number };
      /** handler p50 − bare p50 */
      readonly addedP50Us: number;
      readonly addedP99Us: number;
      /** handler p50 − handler-without-telemetry p50: what the request log and metric lines cost. */
      readonly telemetryP50Us: number;
    }
  >;
}

const summary = (ns: readonly number[]) => ({
  p50: round(median(ns) / 1000, 2),
  p99: round(percentile(ns, 99) / 1000, 2),
});

export async function measureMiddlewareOverhead(iterations: number, warmup: number): Promise<OverheadResult> {
  const result: OverheadResult = { iterations, operations: {} };
  for (const operationId of Object.keys(requests) as OperationId[]) {
    await checkSameAnswers(operationId);
    const shape = requests[operationId];
    const chained = await dependencies(true);
    const quiet = await dependencies(false);
    const bareSide = await dependencies(false);
    const handler = handlerFactories[operationId](chained.deps);
    const handlerQuiet = handlerFactories[operationId](quiet.deps);
    const bare = bareOperations[operationId](bareSide.deps);
    // Each side builds its request before the clock starts; only the invocation is timed.
    const sides: { name: string; call: () => () => Promise<{ statusCode: number }>; times: number[] }[] = [
      {
        name: "handler",
        call: () => {
          const event = proxyEventFor(shape, chained.key);
          return () => handler(event, context);
        },
        times: [],
      },
      {
        name: "handler without telemetry",
        call: () => {
          const event = proxyEventFor(shape, quiet.key);
          return () => handlerQuiet(event, context);
        },
        times: [],
      },
      {
        name: "bare",
        call: () => {
          const event = operationEventFor(shape, bareSide.key, bareSide.keyId);
          return () => bare(event);
        },
        times: [],
      },
    ];
    for (let i = 0; i < warmup + iterations; i++) {
      // Rotate which side goes first so that none always follows another's garbage.
      for (let s = 0; s < sides.length; s++) {
        const side = sides[(i + s) % sides.length] as (typeof sides)[number];
        const invoke = side.call();
        const started = process.hrtime.bigint();
        const answer = await invoke();
        const elapsed = Number(process.hrtime.bigint() - started);
        if (answer.statusCode >= 300) throw new Error(`${operationId} ${side.name} answered ${answer.statusCode}`);
        if (i >= warmup) side.times.push(elapsed);
      }
    }
    const [handlerSide, quietSide, bareSideTimes] = sides.map((side) => summary(side.times)) as [
      ReturnType<typeof summary>,
      ReturnType<typeof summary>,
      ReturnType<typeof summary>,
    ];
    result.operations[operationId] = {
      bareUs: bareSideTimes,
      handlerUs: handlerSide,
      handlerWithoutTelemetryUs: quietSide,
      addedP50Us: round(handlerSide.p50 - bareSideTimes.p50, 2),
      addedP99Us: round(handlerSide.p99 - bareSideTimes.p99, 2),
      telemetryP50Us: round(handlerSide.p50 - quietSide.p50, 2),
    };
  }
  return result;
}

const childScript = fileURLToPath(new URL("./middlewareChild.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The same measurement on another Node binary, in a process of its own under the same loader (tsx)
 * as the bench, with the bench's environment.
 */
export async function measureMiddlewareOverheadOn(
  node: string,
  iterations: number,
  warmup: number,
): Promise<OverheadResult> {
  return runJsonChild(
    node,
    ["--import", "tsx", childScript, String(iterations), String(warmup)],
    { cwd: projectRoot },
    `middleware bench on ${node} failed`,
  );
}
