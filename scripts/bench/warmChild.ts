/**
 * The warm bench's measuring process (started by ./warm.ts; result as JSON on a descriptor). Per operation four sides,
 * each on its own quiet clock (./steppedClock.ts): bare (the operation alone), ours (createHandler, the deployed
 * chain), powertools (the operation in Middy with Logger and Metrics as documented) and powertoolsSame (the same,
 * writing our request line and metrics). Every Middy side uses MIDDY_OPTIONS.
 */
import { randomUUID } from "node:crypto";
import { fstatSync, statSync, writeSync } from "node:fs";
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
import { issueApiKey, KEY_CACHE_TTL_MS, scopeOf } from "../../lib/auth/apiKeys";
import { InMemoryApiKeyStore } from "../../lib/auth/inMemoryApiKeyStore";
import { createKeyUseRecorder } from "../../lib/auth/keyUsage";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { loadRuntimeConfig } from "../../lib/config";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import type { Deadline } from "../../lib/db/deadline";
import { storeCall } from "../../lib/db/storeErrors";
import { MIDDY_OPTIONS, type Operation } from "../../lib/http/apiHandler";
import { pickChainHeaders } from "../../lib/http/middleware/requestHeaders";
import type { ApiEvent } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { METRICS_NAMESPACE, metricNames, roundedMs } from "../../lib/observability/metrics";
import { type PetCollection, SHARED_PETS } from "../../lib/pets/collection";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";
import type { PetPageQuery } from "../../lib/pets/repository";
import { type OperationId, routes } from "../../lib/routes";
import { runtimeDependencies } from "../../lib/runtime";
import { proxyEventProblems } from "../rehearse/apiGateway";
import { lambdaTraceHeader } from "./lambdaEnvironment";
import { proxyEventText } from "./proxyEvents";
import { median, percentile, seededRandom, shuffled } from "./stats";
import { CLOCK_STEP_MS, enterContainer, installSteppedClock, type QuietClock } from "./steppedClock";

export const SIDES = ["bare", "ours", "powertools", "powertoolsSame"] as const;
export type SideName = (typeof SIDES)[number];

export type WarmResult = Awaited<ReturnType<typeof measure>>;

/** The in-memory repository called as the DynamoDB one is: through storeCall with the request's deadline, counted. */
class CountedPets extends InMemoryPetRepository {
  calls = 0;
  #call<T>(call: () => Promise<T>, deadline: Deadline | undefined): Promise<T> {
    this.calls += 1;
    return storeCall(call, deadline);
  }
  override allocateId(deadline?: Deadline) {
    return this.#call(() => super.allocateId(), deadline);
  }
  override insert(pet: Pet, collection: PetCollection, deadline?: Deadline) {
    return this.#call(() => super.insert(pet, collection), deadline);
  }
  override get(id: number, collection: PetCollection, deadline?: Deadline) {
    return this.#call(() => super.get(id, collection), deadline);
  }
  override page(query: PetPageQuery, deadline?: Deadline) {
    return this.#call(() => super.page(query), deadline);
  }
}

const config = loadRuntimeConfig();
const operations: Record<OperationId, [(deps: CreatePetDependencies) => Operation, typeof createCreatePet]> = {
  listPets: [listPetsOperation, createListPets],
  getPet: [getPetOperation, createGetPet],
  createPet: [createPetOperation, createCreatePet],
};

type Answer = { readonly statusCode: number; readonly body?: string };
type Invoke = (event: never, context: Context) => Promise<Answer>;
interface Side {
  readonly name: SideName;
  readonly clock: QuietClock;
  readonly pets: CountedPets;
  /** The event as this side is handed it, made outside the timed span. */
  readonly prepare: (event: APIGatewayProxyEvent) => unknown;
  readonly invoke: Invoke;
  invocations: number;
  /** Nanoseconds per timed invocation, one array per round. */
  readonly rounds: number[][];
}

async function pets(): Promise<CountedPets> {
  const repository = new CountedPets();
  for (let n = 1; n <= 100; n++) {
    const status = (["available", "pending", "sold"] as const)[n % 3] as PetStatus;
    await repository.insert(
      { id: await repository.allocateId(), name: `pet ${n}`, categoryId: 1, status },
      SHARED_PETS,
    );
  }
  repository.calls = 0;
  return repository;
}

/** Powertools' Logger and Metrics around `inner`, in Middy with our options; `same`: writing what our chain writes. */
function powertools(operationId: OperationId, inner: (event: ApiEvent) => Promise<Answer>, same: boolean): Invoke {
  const route = routes[operationId];
  const logger = new Logger({ serviceName: "petstore", ...(same ? { persistentKeys: { stage: config.stage } } : {}) });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: "petstore" });
  if (same) {
    // Our dimensions [Stage, Operation] in place of Powertools' `service` (lib/observability/metrics.ts).
    metrics.clearDefaultDimensions();
    metrics.setDefaultDimensions({ Stage: config.stage, Operation: operationId });
  }
  let coldStart = true;
  const handler = async (event: ApiEvent) => {
    const startedAt = performance.now();
    const answer = await inner(event);
    const status = answer.statusCode;
    if (!same) {
      logger.info("request", { operation: operationId, status });
      metrics.addMetric(metricNames.requests, MetricUnit.Count, 1);
      return answer;
    }
    const latencyMs = roundedMs(performance.now() - startedAt);
    const { path, principal, requestContext } = event;
    logger.info("request", {
      ...{ operation: operationId, method: route.method, route: route.path, path, status, latencyMs },
      ...{ requestId: requestContext?.requestId, apiKeyId: principal?.keyId },
      userAgent: requestContext?.identity?.userAgent ?? undefined,
    });
    // Our record's metrics, in its order (lib/observability/metrics.ts), one call each.
    metrics.addMetric(metricNames.requests, MetricUnit.Count, 1);
    metrics.addMetric(metricNames.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
    metrics.addMetric(metricNames.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0);
    metrics.addMetric(metricNames.latency, MetricUnit.Milliseconds, latencyMs);
    metrics.addMetric(metricNames.coldStarts, MetricUnit.Count, coldStart ? 1 : 0);
    metrics.addMetric(metricNames.petsCreated, MetricUnit.Count, status === 201 ? 1 : 0);
    metrics.addMetric(metricNames.authFailures, MetricUnit.Count, status === 401 ? 1 : 0);
    coldStart = false;
    return answer;
  };
  return middy(handler, MIDDY_OPTIONS).use(injectLambdaContext(logger)).use(logMetrics(metrics)) as unknown as Invoke;
}

async function sidesFor(operationId: OperationId): Promise<{ sides: Side[]; keys: InMemoryApiKeyStore; text: string }> {
  const keys = new InMemoryApiKeyStore();
  const { key, record } = await issueApiKey(keys, config.stage, "bench");
  const principal = { keyId: record.keyId, scope: scopeOf(record) };
  const [operation, createHandler] = operations[operationId];
  const build = async (name: SideName): Promise<Side> => {
    const deps = {
      pets: await pets(),
      idempotency: new InMemoryIdempotencyStore(),
      // Installed stepped clock: the verifier and the recorder see each request in a new second.
      keys: createApiKeyVerifier(keys, config.stage, Date.now),
      keyUses: createKeyUseRecorder({ recordUse: async () => true, list: async () => [] }),
      clock: () => new Date(Date.now()),
      telemetry: runtimeDependencies.telemetry,
    };
    const run = operation(deps);
    const bare = async (event: ApiEvent) => {
      const { statusCode, headers, body } = await run(event);
      return { statusCode, ...(headers ? { headers } : {}), body: JSON.stringify(body) };
    };
    const invoke: Invoke = {
      bare,
      ours: createHandler(deps),
      powertools: powertools(operationId, bare, false),
      powertoolsSame: powertools(operationId, bare, true),
    }[name];
    // As the chain hands the operation its event: its headers picked, the body parsed, the caller known.
    const chained = (event: APIGatewayProxyEvent): ApiEvent => {
      const body = event.body && JSON.parse(event.body);
      return { ...event, ...pickChainHeaders(event), body, principal };
    };
    const prepare = name === "ours" ? (event: APIGatewayProxyEvent) => event : chained;
    return { name, clock: { offsetMs: 0 }, pets: deps.pets, prepare, invoke, invocations: 0, rounds: [] };
  };
  return { sides: await Promise.all(SIDES.map(build)), keys, text: proxyEventText(operationId, key) };
}

const { AWS_LAMBDA_FUNCTION_NAME: functionName, AWS_LAMBDA_FUNCTION_MEMORY_SIZE: memoryLimitInMB } = process.env;
const lambdaContext = {
  ...{ functionName, memoryLimitInMB, functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION },
  invokedFunctionArn: `arn:aws:lambda:${config.region}:123456789012:function:${functionName}`,
  // As Lambda's: our chain's deadline (and Middy's early timeout, were it on) starts from it.
  getRemainingTimeInMillis: () => 10_000,
};
const context = () => ({ ...lambdaContext, awsRequestId: randomUUID() }) as unknown as Context;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** After the ticks queued so far: the stdout writes' completions, which Node defers to a tick. */
const afterQueuedTicks = () => new Promise<void>((resolve) => process.nextTick(resolve));

/** One invocation as Lambda makes it (outside the timed span: a turn, the side's next second, a new event and trace). */
async function invoke(side: Side, text: string): Promise<{ answer: Answer; ns: number }> {
  await nextTurn();
  enterContainer(side.clock);
  const trace = lambdaTraceHeader();
  process.env._X_AMZN_TRACE_ID = trace;
  const event = JSON.parse(text) as APIGatewayProxyEvent;
  event.headers["X-Amzn-Trace-Id"] = trace;
  if (event.multiValueHeaders) event.multiValueHeaders["X-Amzn-Trace-Id"] = [trace];
  const lambdaContext = context();
  const prepared = side.prepare(event) as never;
  side.invocations += 1;
  const started = process.hrtime.bigint();
  const answer = await side.invoke(prepared, lambdaContext);
  await afterQueuedTicks();
  return { answer, ns: Number(process.hrtime.bigint() - started) };
}

/** Fields of Powertools' request line named apart from ours for the same fact. */
const POWERTOOLS_NAMES: Record<string, string> = {
  coldStart: "cold_start",
  lambdaRequestId: "function_request_id",
  xrayTraceId: "xray_trace_id",
};

/** What `run` writes to stdout, as JSON records (stdout is /dev/null: nothing could read it back). */
async function written(run: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const { stdout } = process;
  const original = stdout.write;
  let text = "";
  stdout.write = ((chunk: string, ...rest: never[]) => {
    text += chunk;
    return original.call(stdout, chunk, ...rest);
  }) as never;
  await run().finally(() => {
    stdout.write = original;
  });
  return text.split("\n").flatMap((line) => (line ? [JSON.parse(line)] : []));
}

/** Once before timing: every side answers alike with the same store calls, and the same-content side writes our content. */
async function check(operationId: OperationId, sides: readonly Side[], text: string): Promise<void> {
  const problems = proxyEventProblems(JSON.parse(text)).join("; ");
  if (problems) throw new Error(`${operationId}: the event fails Powertools' schema: ${problems}`);
  const lines = new Map<SideName, Record<string, unknown>[]>();
  const answers = new Map<SideName, string>();
  for (const side of sides) {
    let answer: Answer = { statusCode: 0 };
    lines.set(side.name, await written(async () => ({ answer } = await invoke(side, text))));
    answers.set(side.name, `${answer.statusCode} ${answer.body} after ${side.pets.calls} store calls`);
  }
  const [name, differs] = [...answers].find(([, answer]) => answer !== answers.get("ours")) ?? [];
  if (differs) throw new Error(`${operationId}: ${name} answered ${differs}, ours ${answers.get("ours")}`);
  const [ourLine, ourMetrics] = lines.get("ours") ?? [];
  const [theirLine, theirMetrics] = lines.get("powertoolsSame") ?? [];
  const missing = Object.keys(ourLine ?? {}).filter(
    (field) => !((POWERTOOLS_NAMES[field] ?? field) in (theirLine ?? {})),
  );
  const metricsOf = (record?: Record<string, unknown>) =>
    JSON.stringify((record?._aws as { CloudWatchMetrics: unknown[] } | undefined)?.CloudWatchMetrics);
  if (missing.length > 0 || metricsOf(ourMetrics) !== metricsOf(theirMetrics)) {
    throw new Error(
      `${operationId}: Powertools same-content writes other content (missing: ${missing.join(", ") || "none"}; metrics ${metricsOf(theirMetrics)})`,
    );
  }
}

const summary = (ns: readonly number[]) => ({
  p50Us: Math.round(median(ns) / 10) / 100,
  p99Us: Math.round(percentile(ns, 99) / 10) / 100,
});

async function measure(iterations: number, rounds: number) {
  const stdout = fstatSync(1);
  if (!stdout.isCharacterDevice() || stdout.rdev !== statSync("/dev/null").rdev) {
    throw new Error("stdout must be /dev/null: run scripts/bench/warm.ts, which starts this process");
  }
  const random = seededRandom(0x5eed);
  const perRound = Math.ceil(iterations / rounds);
  const warmup = Math.min(2000, Math.ceil(iterations / 10));
  const built = new Map<OperationId, Awaited<ReturnType<typeof sidesFor>>>();
  for (const operationId of Object.keys(operations) as OperationId[]) {
    const own = await sidesFor(operationId);
    await check(operationId, own.sides, own.text);
    built.set(operationId, own);
  }
  const run = async (operationId: OperationId, count: number, keep: boolean) => {
    const { sides, text } = built.get(operationId) as Awaited<ReturnType<typeof sidesFor>>;
    const times = new Map(sides.map((side) => [side, [] as number[]]));
    for (let i = 0; i < count; i++) {
      for (const side of shuffled(sides, random)) {
        const { answer, ns } = await invoke(side, text);
        if (answer.statusCode >= 300) throw new Error(`${operationId}: ${side.name} answered ${answer.statusCode}`);
        times.get(side)?.push(ns);
      }
    }
    if (keep) for (const [side, ns] of times) side.rounds.push(ns);
  };
  for (const operationId of built.keys()) await run(operationId, warmup, false);
  for (let r = 0; r < rounds; r++) {
    for (const operationId of shuffled([...built.keys()], random)) await run(operationId, perRound, true);
  }
  const measured = [...built].map(([operationId, { sides, keys }]) => {
    const [bare, ours, documented, same] = sides as [Side, Side, Side, Side];
    const calls = new Set(sides.map((side) => side.pets.calls));
    if (calls.size !== 1) throw new Error(`${operationId}: the sides made different store calls (${[...calls]})`);
    // One lookup per KEY_CACHE_TTL_MS of our side's clock: one request in about 30.
    const expected = ours.invocations / Math.ceil(KEY_CACHE_TTL_MS / CLOCK_STEP_MS);
    if (Math.abs(keys.lookups - expected) > Math.max(3, expected / 20)) {
      throw new Error(
        `${operationId}: ${keys.lookups} key lookups in ${ours.invocations} requests, not ~${Math.round(expected)}`,
      );
    }
    // Per round: (ours − bare) / (peer − bare), each side's p50 of the round.
    const ratios = (peer: Side) =>
      ours.rounds.map((_, r) => {
        const p50 = (side: Side) => median(side.rounds[r] as number[]);
        return Math.round(((p50(ours) - p50(bare)) / (p50(peer) - p50(bare))) * 1000) / 1000;
      });
    const timed = Object.fromEntries(sides.map((side) => [side.name, summary(side.rounds.flat())] as const));
    const ratiosByRound = { peerRatioByRound: ratios(documented), equalPeerRatioByRound: ratios(same) };
    return [
      operationId,
      { ...ratiosByRound, sides: timed, invocations: ours.invocations, keyLookups: keys.lookups },
    ] as const;
  });
  return { node: process.version, warmup, operations: Object.fromEntries(measured) };
}

installSteppedClock();
const [iterations, rounds, resultFd] = process.argv.slice(2, 5).map(Number);
measure(iterations as number, rounds as number).then(
  (result) => {
    writeSync(resultFd as number, JSON.stringify(result));
    // Left to end by itself, as a function's process would; a handle left open must not hold it.
    setTimeout(() => process.exit(0), 5000).unref();
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  },
);
