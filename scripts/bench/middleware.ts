/**
 * Middleware overhead: warm, in-process invocations of each handler (the full Middy chain, with
 * the repository and key store in memory) against the bare operation the chain wraps, and against
 * the same bare operation wrapped in what a user would pick instead: Powertools' Logger and Metrics
 * middlewares. Every side gets the same kind of request; log and metric lines are built in full
 * but written nowhere, so the figures include their cost but no I/O.
 */

import { fileURLToPath } from "node:url";
import { Logger } from "@aws-lambda-powertools/logger";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import middy from "@middy/core";
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
import { apiHandler, type ChainHooks, chainSteps, type Operation, type ProxyHandler } from "../../lib/http/apiHandler";
import type { ApiEvent } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import { SHARED_PETS } from "../../lib/pets/collection";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";
import { type OperationId, routes } from "../../lib/routes";
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

/** The proxy result a handler must hand back: the operation's answer with its body as JSON text. */
interface ProxyAnswer {
  readonly statusCode: number;
  readonly headers?: Record<string, string>;
  readonly body: string;
}
type Bare = (event: ApiEvent) => Promise<ProxyAnswer>;

/**
 * The bare operation as a handler would have to run it: the operation, then its body serialised.
 * Serialising is part of answering at all (API Gateway takes the body as text), whatever wraps
 * the operation, so it is on the bare side and every side pays it once.
 */
function bareHandler(operation: Operation): Bare {
  return async (event) => {
    const { statusCode, headers, body } = await operation(event);
    return { statusCode, ...(headers ? { headers } : {}), body: JSON.stringify(body) };
  };
}

/** Lines Powertools built, counted and dropped: its console, replaced as ours writes to a no-op. */
function discardingConsole(counter: { lines: number; last: string }) {
  const write = (line: unknown) => {
    counter.lines += 1;
    counter.last = String(line);
  };
  return { log: write, info: write, warn: write, error: write, debug: write, trace: write };
}

/**
 * The peer: the same bare operation wrapped, as Powertools' documentation shows, in Middy with
 * Logger's injectLambdaContext and Metrics' logMetrics, one `logger.info` and one `addMetric` per
 * request. Their output is discarded at the console, after each line is built.
 */
function powertoolsHandler(operationId: OperationId, bare: Bare) {
  const counter = { lines: 0, last: "" };
  const logger = new Logger({ serviceName: "petstore", logLevel: "INFO" });
  const metrics = new Metrics({ namespace: "PetStore", serviceName: "petstore" });
  // Both keep their Console in a field of that name (setConsole in their sources).
  for (const instance of [logger, metrics] as unknown as { console: unknown }[]) {
    instance.console = discardingConsole(counter);
  }
  const handler = middy(async (event: ApiEvent) => {
    const answer = await bare(event);
    logger.info("request", { operation: operationId, status: answer.statusCode });
    metrics.addMetric("Requests", MetricUnit.Count, 1);
    return answer;
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics));
  return { handler: handler as unknown as (event: ApiEvent, context: Context) => Promise<ProxyAnswer>, counter };
}

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
  functionVersion: "$LATEST",
  invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:bench",
  memoryLimitInMB: "256",
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
    await pets.insert(
      { id: await pets.allocateId(), name: `pet ${id}`, categoryId: 1, status: statuses[id % 3] as PetStatus },
      SHARED_PETS,
    );
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
  const peer = await dependencies(false);
  const shape = requests[operationId];
  const viaChain = await handlerFactories[operationId](chained.deps)(proxyEventFor(shape, chained.key), context);
  const viaBare = await bareHandler(bareOperations[operationId](bare.deps))(
    operationEventFor(shape, bare.key, bare.keyId),
  );
  const powertools = powertoolsHandler(operationId, bareHandler(bareOperations[operationId](peer.deps)));
  const viaPeer = await powertools.handler(operationEventFor(shape, peer.key, peer.keyId), context);
  for (const [name, answer] of [
    ["bare operation", viaBare],
    ["Powertools-wrapped operation", viaPeer],
  ] as const) {
    if (viaChain.statusCode !== answer.statusCode || viaChain.body !== answer.body) {
      throw new Error(
        `${operationId}: the bench's ${name} no longer matches functions/${operationId}.ts ` +
          `(${viaChain.statusCode} ${viaChain.body} vs ${answer.statusCode} ${answer.body})`,
      );
    }
  }
  // One log line and one EMF line per request, built in full (and then dropped).
  if (powertools.counter.lines !== 2 || !JSON.parse(powertools.counter.last)._aws) {
    throw new Error(`${operationId}: Powertools wrote ${powertools.counter.lines} lines, not a log and a metric line`);
  }
}

type Summary = { p50: number; p99: number };

export interface OperationOverhead {
  readonly bareUs: Summary;
  readonly handlerUs: Summary;
  readonly handlerWithoutTelemetryUs: Summary;
  readonly powertoolsUs: Summary;
  /** handler p50 − bare p50 */
  readonly addedP50Us: number;
  readonly addedP99Us: number;
  /** Powertools-wrapped p50 − bare p50 */
  readonly powertoolsAddedP50Us: number;
  /** handler p50 − handler-without-telemetry p50: what the request log and metric lines cost. */
  readonly telemetryP50Us: number;
  /** Median over rounds of (handler − bare) / (Powertools − bare), each round's p50s. */
  readonly peerRatio: number;
  readonly peerRatioByRound: number[];
  /** Median µs of each step of the chain (Middy's hooks around each), in the order they run. */
  readonly steps: Record<string, number>;
}

export interface OverheadResult {
  readonly iterations: number;
  readonly rounds: number;
  readonly operations: Record<string, OperationOverhead>;
}

const summary = (ns: readonly number[]): Summary => ({
  p50: round(median(ns) / 1000, 2),
  p99: round(percentile(ns, 99) / 1000, 2),
});

const SIDES = ["handler", "handlerWithoutTelemetry", "bare", "powertools"] as const;
type SideName = (typeof SIDES)[number];
interface Side {
  readonly name: SideName;
  /** Builds the request (before the clock starts) and returns the timed invocation. */
  readonly call: () => () => Promise<{ statusCode: number }>;
  /** Nanoseconds per invocation, one array per round. */
  readonly rounds: number[][];
}

async function sidesFor(operationId: OperationId): Promise<Side[]> {
  const shape = requests[operationId];
  const chained = await dependencies(true);
  const quiet = await dependencies(false);
  const bareSide = await dependencies(false);
  const peerSide = await dependencies(false);
  const handler = handlerFactories[operationId](chained.deps);
  const handlerQuiet = handlerFactories[operationId](quiet.deps);
  const bare = bareHandler(bareOperations[operationId](bareSide.deps));
  const peer = powertoolsHandler(operationId, bareHandler(bareOperations[operationId](peerSide.deps))).handler;
  const calls: Record<SideName, Side["call"]> = {
    handler: () => {
      const event = proxyEventFor(shape, chained.key);
      return () => handler(event, context);
    },
    handlerWithoutTelemetry: () => {
      const event = proxyEventFor(shape, quiet.key);
      return () => handlerQuiet(event, context);
    },
    bare: () => {
      const event = operationEventFor(shape, bareSide.key, bareSide.keyId);
      return () => bare(event);
    },
    powertools: () => {
      const event = operationEventFor(shape, peerSide.key, peerSide.keyId);
      return () => peer(event, context);
    },
  };
  return SIDES.map((name) => ({ name, call: calls[name], rounds: [] }));
}

/** `count` invocations of every side, interleaved with a rotating order; times kept when `keep`. */
async function runSides(operationId: OperationId, sides: readonly Side[], count: number, keep: boolean) {
  const times = sides.map(() => [] as number[]);
  for (let i = 0; i < count; i++) {
    // Rotate which side goes first so that none always follows another's garbage.
    for (let s = 0; s < sides.length; s++) {
      const index = (i + s) % sides.length;
      const side = sides[index] as Side;
      const invoke = side.call();
      const started = process.hrtime.bigint();
      const answer = await invoke();
      const elapsed = Number(process.hrtime.bigint() - started);
      if (answer.statusCode >= 300) throw new Error(`${operationId} ${side.name} answered ${answer.statusCode}`);
      times[index]?.push(elapsed);
    }
  }
  if (!keep) return;
  for (const [index, side] of sides.entries()) side.rounds.push(times[index] as number[]);
}

/**
 * Each step's time: the full chain of the operation, built with Middy hooks that read the clock
 * around every middleware and around the operation (which includes Middy's early-timeout race).
 * "Middy" is what is left of the whole invocation: its own bookkeeping and the hooks'.
 */
async function stepTimes(operationId: OperationId, count: number): Promise<Record<string, number>> {
  const { deps, key } = await dependencies(true);
  const route = routes[operationId];
  const steps = chainSteps(route, deps);
  const sequence = [
    ...steps.filter((step) => step.middleware.before).map((step) => step.name),
    "operation",
    ...steps
      .filter((step) => step.middleware.after)
      .reverse()
      .map((step) => `${step.name} (after)`),
  ];
  const samples = new Map<string, number[]>([...sequence, "Middy", "total"].map((name) => [name, []]));
  let index = 0;
  let stepStarted = 0;
  let requestStarted = 0;
  let stepsSum = 0;
  const endStep = () => {
    const elapsed = performance.now() - stepStarted;
    samples.get(sequence[index] as string)?.push(elapsed);
    stepsSum += elapsed;
    index += 1;
  };
  const hooks: ChainHooks = {
    requestStart: () => {
      index = 0;
      stepsSum = 0;
      requestStarted = performance.now();
    },
    beforeMiddleware: () => {
      stepStarted = performance.now();
    },
    afterMiddleware: endStep,
    beforeHandler: () => {
      stepStarted = performance.now();
    },
    afterHandler: endStep,
    requestEnd: () => {
      const total = performance.now() - requestStarted;
      samples.get("total")?.push(total);
      samples.get("Middy")?.push(total - stepsSum);
    },
  };
  const operations: Record<OperationId, (deps: CreatePetDependencies) => Operation> = bareOperations;
  const handler = apiHandler(route, deps, operations[operationId](deps), hooks);
  const shape = requests[operationId];
  for (let i = 0; i < count; i++) {
    const answer = await handler(proxyEventFor(shape, key), context);
    if (answer.statusCode >= 300) throw new Error(`${operationId} (timed steps) answered ${answer.statusCode}`);
    if (index !== sequence.length) throw new Error(`${operationId}: ${index} steps ran, expected ${sequence.length}`);
  }
  const result: Record<string, number> = {};
  // Warm-up: the first fifth is left out.
  for (const [name, ms] of samples) result[name] = round(median(ms.slice(Math.floor(count / 5))) * 1000, 3);
  return result;
}

const ratio = (handler: number, bare: number, peer: number) => (handler - bare) / (peer - bare);

export async function measureMiddlewareOverhead(
  iterations: number,
  warmup: number,
  rounds: number,
): Promise<OverheadResult> {
  const result: OverheadResult = { iterations, rounds, operations: {} };
  const operationIds = Object.keys(requests) as OperationId[];
  const sides = new Map<OperationId, Side[]>();
  for (const operationId of operationIds) {
    await checkSameAnswers(operationId);
    const own = await sidesFor(operationId);
    sides.set(operationId, own);
    await runSides(operationId, own, warmup, false);
  }
  // Rounds interleave the operations too, so that a busy spell of the machine touches them all.
  const perRound = Math.ceil(iterations / rounds);
  for (let r = 0; r < rounds; r++) {
    for (const operationId of operationIds)
      await runSides(operationId, sides.get(operationId) as Side[], perRound, true);
  }
  for (const operationId of operationIds) {
    const byName = Object.fromEntries((sides.get(operationId) as Side[]).map((side) => [side.name, side])) as Record<
      SideName,
      Side
    >;
    const all = (name: SideName) => summary(byName[name].rounds.flat());
    const roundP50 = (name: SideName, r: number) => median(byName[name].rounds[r] as number[]);
    const peerRatioByRound = Array.from({ length: rounds }, (_, r) =>
      round(ratio(roundP50("handler", r), roundP50("bare", r), roundP50("powertools", r)), 3),
    );
    const [handlerUs, quietUs, bareUs, powertoolsUs] = [
      all("handler"),
      all("handlerWithoutTelemetry"),
      all("bare"),
      all("powertools"),
    ];
    result.operations[operationId] = {
      bareUs,
      handlerUs,
      handlerWithoutTelemetryUs: quietUs,
      powertoolsUs,
      addedP50Us: round(handlerUs.p50 - bareUs.p50, 2),
      addedP99Us: round(handlerUs.p99 - bareUs.p99, 2),
      powertoolsAddedP50Us: round(powertoolsUs.p50 - bareUs.p50, 2),
      telemetryP50Us: round(handlerUs.p50 - quietUs.p50, 2),
      peerRatio: round(median(peerRatioByRound), 3),
      peerRatioByRound,
      steps: await stepTimes(operationId, Math.max(2000, Math.round(iterations / 4))),
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
  rounds: number,
): Promise<OverheadResult> {
  return runJsonChild(
    node,
    ["--import", "tsx", childScript, String(iterations), String(warmup), String(rounds)],
    { cwd: projectRoot },
    `middleware bench on ${node} failed`,
  );
}
