/**
 * The middleware measurement itself, run by scripts/bench/middlewareChild.ts in a process set up as
 * a Lambda function's (scripts/bench/middleware.ts starts it): Lambda's environment, stdout
 * /dev/null (middleware.ts says why), the result sent back on fd 3. What each side pays, as in
 * production:
 *
 * - the event: a full REGIONAL REST API proxy event (scripts/bench/proxyEvents.ts), parsed afresh
 *   for every invocation as Lambda's runtime parses each payload;
 * - real writes: our chain's telemetry is the production one (createTelemetry with no `write`: one
 *   process.stdout.write per request), Powertools' Logger and Metrics write with their own Console
 *   on process.stdout (two writes per request); on /dev/null Node's stdout is a SyncWriteStream,
 *   each write a write(2) made at once, as on Lambda's stdout pipe; deferred write completions run
 *   inside the timed span;
 * - the deadline: the in-memory stores hand each call's deadline to storeCall, which reads
 *   `deadline.signal` exactly as the DynamoDB stores do (so the chain's deadline is armed on the
 *   first store call). The key verifier's cache hit makes no store call, as in production;
 * - a quiet container's clock (./steppedClock.ts): every request starts in a new second, and
 *   Lambda's per-invocation _X_AMZN_TRACE_ID and request id change with every invocation;
 * - an event-loop turn between invocations, as between two Lambda invocations.
 *
 * What each side writes is checked here (./stdoutCheck.ts) before anything is timed and again after
 * everything was: a few requests per side with process.stdout.write wrapped, the method restored
 * before any timing. Last, the cost of one of the handler's writes to /dev/null and to a drained
 * pipe (./writeCost.ts).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { GCProfiler, getHeapStatistics } from "node:v8";
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
import { issueApiKey } from "../../lib/auth/apiKeys";
import { InMemoryApiKeyStore } from "../../lib/auth/inMemoryApiKeyStore";
import { createKeyUseRecorder } from "../../lib/auth/keyUsage";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { loadRuntimeConfig, type StageName } from "../../lib/config";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { type Deadline, deadlineTimer } from "../../lib/db/deadline";
import { storeCall } from "../../lib/db/storeErrors";
import { apiHandler, type ChainHooks, chainSteps, type Operation, type ProxyHandler } from "../../lib/http/apiHandler";
import { pickChainHeaders } from "../../lib/http/middleware/requestHeaders";
import type { ApiEvent } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import type { IdempotencyScope, NewLock } from "../../lib/idempotency/store";
import { METRICS_NAMESPACE, metricNames, roundedMs } from "../../lib/observability/metrics";
import { createTelemetry, type Telemetry } from "../../lib/observability/telemetry";
import { type PetCollection, SHARED_PETS } from "../../lib/pets/collection";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";
import type { PetPageQuery } from "../../lib/pets/repository";
import { type OperationId, routes } from "../../lib/routes";
import { proxyEventProblems, proxyEventText } from "./proxyEvents";
import { median, percentile, round } from "./stats";
import {
  type CheckedOutput,
  captureKey,
  checkCapturedOutput,
  checkStdoutIsDevNull,
  StdoutCapture,
} from "./stdoutCheck";
import { CLOCK_STEP_MS, realNow, stepClock } from "./steppedClock";
import { measureWriteCost, type WriteCost } from "./writeCost";

export const SIDES = ["handler", "handlerWithoutTelemetry", "bare", "powertools", "powertoolsEqual"] as const;
export type SideName = (typeof SIDES)[number];

/** Lines each side writes per successful request: ours one write of two lines, Powertools two writes. */
export const LINES_PER_REQUEST: Readonly<Record<SideName, number>> = {
  handler: 2,
  handlerWithoutTelemetry: 0,
  bare: 0,
  powertools: 2,
  powertoolsEqual: 2,
};

export type Summary = { p50: number; p99: number };
export type Spread = { min: number; max: number };

/** One operation's figures, as the child measures them. */
export interface MeasuredOperation {
  readonly bareUs: Summary;
  readonly handlerUs: Summary;
  readonly handlerWithoutTelemetryUs: Summary;
  /** Powertools as its documentation configures it: injectLambdaContext + logMetrics, one line and one metric. */
  readonly powertoolsUs: Summary;
  /** Powertools writing what our chain writes: the same request-line fields, the same 7 metrics and dimensions. */
  readonly powertoolsEqualUs: Summary;
  /** handler p50 − bare p50 */
  readonly addedP50Us: number;
  readonly addedP99Us: number;
  /** Documented Powertools p50 − bare p50 */
  readonly powertoolsAddedP50Us: number;
  /** Equal-content Powertools p50 − bare p50 */
  readonly powertoolsEqualAddedP50Us: number;
  /** handler p50 − handler-without-telemetry p50: what the request log and metric lines cost. */
  readonly telemetryP50Us: number;
  /** Median over rounds of (handler − bare) / (documented Powertools − bare), each round's p50s. */
  readonly peerRatio: number;
  readonly peerRatioByRound: number[];
  readonly peerRatioSpread: Spread;
  /** Median over rounds of (handler − bare) / (equal-content Powertools − bare), each round's p50s. */
  readonly equalPeerRatio: number;
  readonly equalPeerRatioByRound: number[];
  readonly equalPeerRatioSpread: Spread;
  /** Bytes allocated on the JS heap per request, each side alone (v8.GCProfiler), what building its event allocates left out. */
  readonly allocationBytes: Record<SideName, number>;
  /** Share of the chain's timed requests that started in another second than its previous one. */
  readonly timestampMissShare: number;
  /** Median µs of each step of the chain (Middy's hooks around each), in the order they run. */
  readonly steps: Record<string, number>;
  /** Bytes each side wrote to stdout per request (its checked requests). */
  readonly stdoutBytesPerRequest: Record<SideName, number>;
  /** write calls on process.stdout per request: each one a write(2). */
  readonly stdoutWritesPerRequest: Record<SideName, number>;
}

export interface MeasuredOverhead {
  readonly node: string;
  readonly iterations: number;
  readonly warmup: number;
  readonly rounds: number;
  readonly clockStepMs: number;
  /** Share of all the chain's timed requests that missed the log timestamp's per-second cache (1: every one). */
  readonly timestampMissShare: number;
  readonly allocationInvocations: number;
  /** Requests per side and operation whose output was checked, before the timing and again after. */
  readonly checkedRequests: number;
  readonly operations: Record<string, MeasuredOperation>;
  /** Fields of Powertools' equal-content request line that ours does not have (its content beyond ours). */
  readonly powertoolsEqualExtraFields: string[];
  /** One of the handler's writes (request line and metrics record) to /dev/null and to a drained pipe: informational. */
  readonly writeCost: WriteCost;
}

const config = loadRuntimeConfig();
const stage: StageName = config.stage;

/** The bare operation's answer with its body as JSON text, as a handler must hand it back. */
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

/**
 * Powertools as its documentation shows it: the bare operation in Middy with Logger's
 * injectLambdaContext and Metrics' logMetrics, one `logger.info` and one `addMetric` per request.
 * Both write with their own Console on process.stdout (their default outside POWERTOOLS_DEV).
 */
function documentedPowertools(operationId: OperationId, bare: Bare) {
  const logger = new Logger({ serviceName: "petstore", logLevel: "INFO" });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: "petstore" });
  return middy(async (event: ApiEvent) => {
    const answer = await bare(event);
    logger.info("request", { operation: operationId, status: answer.statusCode });
    metrics.addMetric(metricNames.requests, MetricUnit.Count, 1);
    return answer;
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics)) as unknown as (event: ApiEvent, context: Context) => Promise<ProxyAnswer>;
}

/**
 * Powertools as its documentation configures it (injectLambdaContext + logMetrics), made to write
 * what our chain writes (lib/observability/telemetry.ts, metrics.ts): a request line with the same
 * fields (injectLambdaContext adds the cold start and the Lambda request id, the Logger the
 * timestamp, level, service and xray_trace_id; `stage` is a persistent key) and one EMF record of
 * the same 7 metrics, units and dimensions [Stage, Operation] (as default dimensions, each function
 * serving one operation, in place of Powertools' own `service` dimension).
 */
function equalContentPowertools(operationId: OperationId, bare: Bare) {
  const route = routes[operationId];
  const logger = new Logger({ serviceName: "petstore", logLevel: "INFO", persistentKeys: { stage } });
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: "petstore" });
  metrics.clearDefaultDimensions();
  metrics.setDefaultDimensions({ Stage: stage, Operation: operationId });
  let coldStart = true;
  return middy(async (event: ApiEvent) => {
    const startedAt = performance.now();
    const answer = await bare(event);
    const latencyMs = roundedMs(performance.now() - startedAt);
    const status = answer.statusCode;
    logger.info("request", {
      operation: operationId,
      method: route.method,
      route: route.path,
      path: event.path,
      status,
      latencyMs,
      requestId: event.requestContext?.requestId,
      apiKeyId: event.principal?.keyId,
      userAgent: event.requestContext?.identity?.userAgent ?? undefined,
    });
    metrics.addMetric(metricNames.requests, MetricUnit.Count, 1);
    metrics.addMetric(metricNames.clientErrors, MetricUnit.Count, status >= 400 && status < 500 ? 1 : 0);
    metrics.addMetric(metricNames.serverErrors, MetricUnit.Count, status >= 500 ? 1 : 0);
    metrics.addMetric(metricNames.latency, MetricUnit.Milliseconds, latencyMs);
    metrics.addMetric(metricNames.coldStarts, MetricUnit.Count, coldStart ? 1 : 0);
    metrics.addMetric(metricNames.petsCreated, MetricUnit.Count, status === 201 ? 1 : 0);
    metrics.addMetric(metricNames.authFailures, MetricUnit.Count, status === 401 ? 1 : 0);
    coldStart = false;
    return answer;
  })
    .use(injectLambdaContext(logger))
    .use(logMetrics(metrics)) as unknown as (event: ApiEvent, context: Context) => Promise<ProxyAnswer>;
}

/**
 * The in-memory repository with each call made through storeCall with the request's deadline, as
 * lib/pets/repository.ts makes each DynamoDB call: it reads `deadline.signal` (arming the deadline
 * on the request's first call) and maps errors as the real store does. `callsWithDeadline` lets
 * the bench check that the chain's requests do hand their deadline over.
 */
class DeadlinePetRepository extends InMemoryPetRepository {
  callsWithDeadline = 0;
  #through<T>(call: () => Promise<T>, deadline: Deadline | undefined): Promise<T> {
    if (deadline !== undefined) this.callsWithDeadline += 1;
    return storeCall(call, deadline);
  }
  override allocateId(deadline?: Deadline) {
    return this.#through(() => super.allocateId(), deadline);
  }
  override insert(pet: Pet, collection: PetCollection, deadline?: Deadline) {
    return this.#through(() => super.insert(pet, collection), deadline);
  }
  override get(id: number, collection: PetCollection, deadline?: Deadline) {
    return this.#through(() => super.get(id, collection), deadline);
  }
  override page(query: PetPageQuery, deadline?: Deadline) {
    return this.#through(() => super.page(query), deadline);
  }
}

/** The same for the idempotency records (lib/idempotency/dynamoStore.ts). */
class DeadlineIdempotencyStore extends InMemoryIdempotencyStore {
  override begin(
    scope: IdempotencyScope,
    record: { requestHash: string; expiresAtSeconds: number } & NewLock,
    now: Date,
    deadline?: Deadline,
  ) {
    return storeCall(() => super.begin(scope, record, now), deadline);
  }
  override takeOver(scope: IdempotencyScope, previousToken: string, lock: NewLock, now: Date, deadline?: Deadline) {
    return storeCall(() => super.takeOver(scope, previousToken, lock, now), deadline);
  }
  override reservePetId(scope: IdempotencyScope, lockToken: string, petId: number, deadline?: Deadline) {
    return storeCall(() => super.reservePetId(scope, lockToken, petId), deadline);
  }
  override complete(
    scope: IdempotencyScope,
    lockToken: string,
    pet: Pet,
    expiresAtSeconds: number,
    deadline?: Deadline,
  ) {
    return storeCall(() => super.complete(scope, lockToken, pet, expiresAtSeconds), deadline);
  }
  override releaseLock(scope: IdempotencyScope, lockToken: string, deadline?: Deadline) {
    return storeCall(() => super.releaseLock(scope, lockToken), deadline);
  }
  override forget(scope: IdempotencyScope, lockToken: string, deadline?: Deadline) {
    return storeCall(() => super.forget(scope, lockToken), deadline);
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

/** The deployed functions' telemetry, unchanged: JSON at INFO, written to process.stdout. */
const productionTelemetry = () => createTelemetry({ service: "petstore", stage, level: "INFO", format: "json" });

interface BenchDependencies {
  readonly deps: CreatePetDependencies & { readonly pets: DeadlinePetRepository };
  readonly key: string;
  readonly keyId: string;
}

async function dependencies(telemetry?: Telemetry): Promise<BenchDependencies> {
  const store = new InMemoryApiKeyStore();
  const { key, record } = await issueApiKey(store, stage, "bench");
  const pets = new DeadlinePetRepository();
  const statuses: PetStatus[] = ["available", "pending", "sold"];
  for (let id = 1; id <= 100; id++) {
    await pets.insert(
      { id: await pets.allocateId(), name: `pet ${id}`, categoryId: 1, status: statuses[id % 3] as PetStatus },
      SHARED_PETS,
    );
  }
  const deps = {
    pets,
    idempotency: new DeadlineIdempotencyStore(),
    // The real clock: the key stays cached across the bench's clock steps, as a key in steady use
    // does in production; the stepped clock would expire it every 30 requests.
    keys: createApiKeyVerifier(store, stage, realNow),
    // As deployed (lib/runtime.ts): the chain records the key's use, written once a day, so every
    // measured request after the first takes the step's at-once path.
    keyUses: createKeyUseRecorder({ recordUse: async () => true, list: async () => [] }),
    clock: () => new Date(),
    ...(telemetry ? { telemetry } : {}),
  };
  return { deps, key, keyId: record.keyId };
}

// What Lambda changes with every invocation: the context's request id and the trace header.
const POOL = 1024;
const hex = (digits: number) => randomBytes(digits / 2).toString("hex");
const requestIds = Array.from({ length: POOL }, () => randomUUID());
/** As Lambda sets it: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime */
const traceHeaders = Array.from(
  { length: POOL },
  () =>
    `Root=1-${Math.floor(realNow() / 1000).toString(16)}-${hex(24)};Parent=${hex(16)};Sampled=0;Lineage=1:${hex(8)}:0`,
);
let invocationCount = 0;

const baseContext = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME ?? "petstore-bench",
  functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION ?? "$LATEST",
  invokedFunctionArn: `arn:aws:lambda:${config.region}:123456789012:function:${process.env.AWS_LAMBDA_FUNCTION_NAME ?? "petstore-bench"}:live`,
  memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? "512",
  logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME ?? "/aws/lambda/petstore-bench",
  logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? "bench",
  // Real Lambda contexts have it: Middy arms its early-timeout timer and our chain its deadline from it.
  getRemainingTimeInMillis: () => 10_000,
};

const currentTraceHeader = () => traceHeaders[invocationCount % POOL] as string;

/**
 * A parsed event as API Gateway sends this invocation: its X-Amzn-Trace-Id is the trace Lambda
 * continues (the same root as _X_AMZN_TRACE_ID), new with every request.
 */
function withInvocationTrace(event: APIGatewayProxyEvent): APIGatewayProxyEvent {
  const header = currentTraceHeader();
  if (event.headers) event.headers["X-Amzn-Trace-Id"] = header;
  if (event.multiValueHeaders) event.multiValueHeaders["X-Amzn-Trace-Id"] = [header];
  return event;
}

/** What happens between two invocations, outside the timed span: a second passes, Lambda sets the next trace. */
function nextInvocation(): Context {
  invocationCount += 1;
  stepClock();
  process.env._X_AMZN_TRACE_ID = currentTraceHeader();
  return { ...baseContext, awsRequestId: requestIds[invocationCount % POOL] } as unknown as Context;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Resolves after the ticks queued so far: the stdout writes' completions, which Node defers to a tick. */
const afterQueuedTicks = () => new Promise<void>((resolve) => process.nextTick(resolve));

interface Side {
  readonly name: SideName;
  /** Builds the invocation's event (outside the timed span) and returns the invocation. */
  readonly prepare: (context: Context) => () => Promise<{ statusCode: number; body?: string }>;
  readonly deps: BenchDependencies;
  /** Nanoseconds per invocation, one array per kept round. */
  readonly rounds: number[][];
}

/** The event as the chain hands it to the operation: the chain's headers, body parsed, caller known. */
function operationEvent(text: string, keyId: string): ApiEvent {
  const event = withInvocationTrace(JSON.parse(text) as APIGatewayProxyEvent);
  return {
    ...event,
    ...pickChainHeaders(event),
    body: event.body ? JSON.parse(event.body) : null,
    principal: { keyId, scope: "write" },
  };
}

async function sidesFor(operationId: OperationId): Promise<Side[]> {
  const built = {
    handler: await dependencies(productionTelemetry()),
    handlerWithoutTelemetry: await dependencies(),
    bare: await dependencies(),
    powertools: await dependencies(),
    powertoolsEqual: await dependencies(),
  } satisfies Record<SideName, BenchDependencies>;
  const text = (side: SideName) => proxyEventText(operationId, built[side].key);
  const handlerText = text("handler");
  const quietText = text("handlerWithoutTelemetry");
  const bareText = text("bare");
  const documentedText = text("powertools");
  const equalText = text("powertoolsEqual");
  const handler = handlerFactories[operationId](built.handler.deps);
  const quiet = handlerFactories[operationId](built.handlerWithoutTelemetry.deps);
  const bare = bareHandler(bareOperations[operationId](built.bare.deps));
  const documented = documentedPowertools(operationId, bareHandler(bareOperations[operationId](built.powertools.deps)));
  const equal = equalContentPowertools(
    operationId,
    bareHandler(bareOperations[operationId](built.powertoolsEqual.deps)),
  );
  const prepares: Record<SideName, Side["prepare"]> = {
    handler: (context) => {
      const event = withInvocationTrace(JSON.parse(handlerText) as APIGatewayProxyEvent);
      return () => handler(event, context);
    },
    handlerWithoutTelemetry: (context) => {
      const event = withInvocationTrace(JSON.parse(quietText) as APIGatewayProxyEvent);
      return () => quiet(event, context);
    },
    bare: () => {
      const event = operationEvent(bareText, built.bare.keyId);
      return () => bare(event);
    },
    powertools: (context) => {
      const event = operationEvent(documentedText, built.powertools.keyId);
      return () => documented(event, context);
    },
    powertoolsEqual: (context) => {
      const event = operationEvent(equalText, built.powertoolsEqual.keyId);
      return () => equal(event, context);
    },
  };
  return SIDES.map((name) => ({ name, prepare: prepares[name], deps: built[name], rounds: [] }));
}

/** One invocation as Lambda makes it: an event-loop turn, the next invocation's clock and trace, then the call. */
async function invokeTimed(operationId: OperationId, side: Side): Promise<number> {
  await nextTurn();
  const invoke = side.prepare(nextInvocation());
  const started = process.hrtime.bigint();
  const answer = await invoke();
  await afterQueuedTicks();
  const elapsed = Number(process.hrtime.bigint() - started);
  if (answer.statusCode >= 300) throw new Error(`${operationId} ${side.name} answered ${answer.statusCode}`);
  return elapsed;
}

/** Requests per side whose stdout is checked, before the timing and after. */
const CHECKED_REQUESTS = 10;

/** `CHECKED_REQUESTS` requests of each side with stdout captured; answers each side's first answer. */
async function writeCheckedRequests(operationId: OperationId, sides: readonly Side[], capture: StdoutCapture) {
  const answers = new Map<SideName, { statusCode: number; body?: string }>();
  for (const side of sides) {
    for (let i = 0; i < CHECKED_REQUESTS; i++) {
      const answer = await capture.request(captureKey(operationId, side.name), async () => {
        const answered = await side.prepare(nextInvocation())();
        await afterQueuedTicks();
        return answered;
      });
      if (answer.statusCode >= 300) throw new Error(`${operationId} ${side.name} answered ${answer.statusCode}`);
      if (i === 0) answers.set(side.name, answer);
    }
  }
  return answers;
}

/**
 * Every operation's sides, each making its requests with `requests`, write what they should
 * (./stdoutCheck.ts). stdout's `write` is the original again when this returns, whatever happened.
 */
async function checkStdout(
  sides: ReadonlyMap<OperationId, Side[]>,
  when: string,
  requests: (operationId: OperationId, own: readonly Side[], capture: StdoutCapture) => Promise<unknown>,
): Promise<CheckedOutput> {
  const capture = new StdoutCapture();
  try {
    for (const [operationId, own] of sides) await requests(operationId, own, capture);
  } finally {
    capture.restore();
  }
  return checkCapturedOutput(capture, [...sides.keys()], LINES_PER_REQUEST, when);
}

/**
 * Every side answers as functions/<operation>.ts does, each event passes Powertools' schema of a
 * proxy event, the chain's store calls get the deadline (armed, then released with the answer),
 * and each side writes its lines (checked by the caller from `capture`).
 */
async function checkSameAnswers(operationId: OperationId, sides: readonly Side[], capture: StdoutCapture) {
  for (const side of sides) {
    const event = JSON.parse(proxyEventText(operationId, side.deps.key));
    const problems = proxyEventProblems(event);
    if (problems.length > 0) {
      throw new Error(`${operationId}: the bench's event fails Powertools' schema: ${problems.join("; ")}`);
    }
  }
  const answers = await writeCheckedRequests(operationId, sides, capture);
  const chained = answers.get("handler");
  for (const [name, answer] of answers) {
    if (chained?.statusCode !== answer.statusCode || chained.body !== answer.body) {
      throw new Error(
        `${operationId}: the bench's ${name} side no longer answers as functions/${operationId}.ts ` +
          `(${chained?.statusCode} ${chained?.body} vs ${answer.statusCode} ${answer.body})`,
      );
    }
  }
  if (deadlineTimer.armedCount !== 0) {
    throw new Error(`${operationId}: ${deadlineTimer.armedCount} deadlines still armed after the requests answered`);
  }
  for (const side of sides) {
    const withDeadline = side.deps.deps.pets.callsWithDeadline;
    const chain = side.name === "handler" || side.name === "handlerWithoutTelemetry";
    if (chain !== withDeadline > 0) {
      throw new Error(`${operationId} ${side.name}: ${withDeadline} store calls got a deadline`);
    }
  }
}

/** `count` invocations of every side, interleaved in a new shuffled order each time; times kept when `keep`. */
async function runSides(operationId: OperationId, sides: readonly Side[], count: number, keep: boolean) {
  const times = sides.map(() => [] as number[]);
  for (let i = 0; i < count; i++) {
    for (const index of shuffledOrder(sides.length, sideOrderRandom)) {
      const side = sides[index] as Side;
      const elapsed = await invokeTimed(operationId, side);
      if (side.name === "handler") noteSecond(operationId, keep);
      times[index]?.push(elapsed);
    }
  }
  if (!keep) return;
  for (const [index, side] of sides.entries()) side.rounds.push(times[index] as number[]);
}

/**
 * A shuffled order of `count` sides, from a fixed-seed generator (mulberry32) so that runs are alike.
 * Shuffled for every invocation round, each side follows any other equally often: in a rotation
 * (side i after side i−1), a side would nearly always run right after the same neighbour, in
 * caches that neighbour left and with its garbage to collect (the chain ran after the equal-content
 * Powertools, the heaviest side, four times in five).
 */
function shuffledOrder(count: number, random: () => number): number[] {
  const order = Array.from({ length: count }, (_, index) => index);
  for (let index = count - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [order[index], order[other]] = [order[other] as number, order[index] as number];
  }
  return order;
}

/** mulberry32: a small generator of numbers in [0, 1), the same sequence for the same seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

const sideOrderRandom = seededRandom(0x5eed);

/** Per operation: the chain's timed requests, and how many of them started in a new second. */
const seconds = new Map<OperationId, { last: number; requests: number; misses: number }>();

function noteSecond(operationId: OperationId, keep: boolean): void {
  const second = Math.floor(Date.now() / 1000);
  const tally = seconds.get(operationId) ?? { last: Number.NaN, requests: 0, misses: 0 };
  if (keep) {
    tally.requests += 1;
    if (second !== tally.last) tally.misses += 1;
  }
  tally.last = second;
  seconds.set(operationId, tally);
}

/** A full collection: an allocation phase then starts with nothing but live objects on the heap. */
function collectGarbage(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the middleware bench's child needs --expose-gc (scripts/bench/middleware.ts starts it so)");
  gc();
}

/**
 * Bytes one side allocates per request: `count` invocations alone, with v8.GCProfiler running:
 * used heap at the end − at the start + what every collection in between freed. The same loop
 * with the event built but not handed over is subtracted: the event is Lambda's runtime's
 * allocation, not the handler's.
 */
const NOT_INVOKED = { statusCode: 200 };

async function allocationPerRequest(operationId: OperationId, side: Side, count: number): Promise<number> {
  const allocated = async (invoke: boolean) => {
    collectGarbage();
    const profiler = new GCProfiler();
    const startUsed = getHeapStatistics().used_heap_size;
    profiler.start();
    for (let i = 0; i < count; i++) {
      await nextTurn();
      const call = side.prepare(nextInvocation());
      const answer = invoke ? await call() : await NOT_INVOKED;
      await afterQueuedTicks();
      if (answer.statusCode >= 300) throw new Error(`${operationId} ${side.name} answered ${answer.statusCode}`);
    }
    const endUsed = getHeapStatistics().used_heap_size;
    const profile = profiler.stop();
    let freed = 0;
    for (const gc of profile?.statistics ?? []) {
      freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
    }
    return endUsed - startUsed + freed;
  };
  const eventOnly = await allocated(false);
  const withInvocation = await allocated(true);
  return Math.round((withInvocation - eventOnly) / count);
}

/**
 * Each step's time: the full chain of the operation, built with hooks that read the clock around
 * every step of the chain (lib/http/asOneMiddleware.ts) and, Middy's, around the operation (which
 * includes the deadline's race). "Middy" is what is left of the whole invocation: its own
 * bookkeeping and the hooks'.
 */
async function stepTimes(operationId: OperationId, count: number): Promise<Record<string, number>> {
  const { deps, key } = await dependencies(productionTelemetry());
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
    beforeStep: () => {
      stepStarted = performance.now();
    },
    afterStep: endStep,
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
  const handler = apiHandler(route, deps, bareOperations[operationId](deps), hooks);
  const text = proxyEventText(operationId, key);
  for (let i = 0; i < count; i++) {
    await nextTurn();
    const context = nextInvocation();
    const answer = await handler(JSON.parse(text), context);
    if (answer.statusCode >= 300) throw new Error(`${operationId} (timed steps) answered ${answer.statusCode}`);
    if (index !== sequence.length) throw new Error(`${operationId}: ${index} steps ran, expected ${sequence.length}`);
  }
  const result: Record<string, number> = {};
  // Warm-up: the first fifth is left out.
  for (const [name, ms] of samples) result[name] = round(median(ms.slice(Math.floor(count / 5))) * 1000, 3);
  return result;
}

const ratio = (handler: number, bare: number, peer: number) => (handler - bare) / (peer - bare);
const spread = (values: readonly number[]): Spread => ({ min: Math.min(...values), max: Math.max(...values) });
const summary = (ns: readonly number[]): Summary => ({
  p50: round(median(ns) / 1000, 2),
  p99: round(percentile(ns, 99) / 1000, 2),
});

export async function measureInThisProcess(
  iterations: number,
  warmup: number,
  rounds: number,
): Promise<MeasuredOverhead> {
  checkStdoutIsDevNull();
  const operationIds = Object.keys(routes) as OperationId[];
  const sides = new Map<OperationId, Side[]>();
  for (const operationId of operationIds) sides.set(operationId, await sidesFor(operationId));
  const checked = await checkStdout(sides, "before timing", checkSameAnswers);
  const perRound = Math.ceil(iterations / rounds);
  for (const operationId of operationIds) await runSides(operationId, sides.get(operationId) as Side[], warmup, false);
  // Rounds interleave the operations too, so that a busy spell of the machine touches them all.
  for (let r = 0; r < rounds; r++) {
    for (const operationId of operationIds) {
      await runSides(operationId, sides.get(operationId) as Side[], perRound, true);
    }
  }
  const allocationInvocations = Math.max(500, Math.min(2000, Math.round(iterations / 10)));
  const operations: Record<string, MeasuredOperation> = {};
  for (const operationId of operationIds) {
    const own = sides.get(operationId) as Side[];
    const byName = Object.fromEntries(own.map((side) => [side.name, side])) as Record<SideName, Side>;
    const all = (name: SideName) => summary(byName[name].rounds.flat());
    const roundP50 = (name: SideName, r: number) => median(byName[name].rounds[r] as number[]);
    const ratiosAgainst = (peer: SideName) =>
      Array.from({ length: rounds }, (_, r) =>
        round(ratio(roundP50("handler", r), roundP50("bare", r), roundP50(peer, r)), 3),
      );
    const peerRatioByRound = ratiosAgainst("powertools");
    const equalPeerRatioByRound = ratiosAgainst("powertoolsEqual");
    const allocationBytes = {} as Record<SideName, number>;
    for (const side of own)
      allocationBytes[side.name] = await allocationPerRequest(operationId, side, allocationInvocations);
    const us = Object.fromEntries(SIDES.map((name) => [name, all(name)])) as Record<SideName, Summary>;
    const tally = seconds.get(operationId);
    const written = checked.perRequest[operationId] as CheckedOutput["perRequest"][string];
    const perSide = (figure: (output: (typeof written)[SideName]) => number) =>
      Object.fromEntries(SIDES.map((name) => [name, figure(written[name])])) as Record<SideName, number>;
    operations[operationId] = {
      bareUs: us.bare,
      handlerUs: us.handler,
      handlerWithoutTelemetryUs: us.handlerWithoutTelemetry,
      powertoolsUs: us.powertools,
      powertoolsEqualUs: us.powertoolsEqual,
      addedP50Us: round(us.handler.p50 - us.bare.p50, 2),
      addedP99Us: round(us.handler.p99 - us.bare.p99, 2),
      powertoolsAddedP50Us: round(us.powertools.p50 - us.bare.p50, 2),
      powertoolsEqualAddedP50Us: round(us.powertoolsEqual.p50 - us.bare.p50, 2),
      telemetryP50Us: round(us.handler.p50 - us.handlerWithoutTelemetry.p50, 2),
      peerRatio: round(median(peerRatioByRound), 3),
      peerRatioByRound,
      peerRatioSpread: spread(peerRatioByRound),
      equalPeerRatio: round(median(equalPeerRatioByRound), 3),
      equalPeerRatioByRound,
      equalPeerRatioSpread: spread(equalPeerRatioByRound),
      allocationBytes,
      timestampMissShare: tally && tally.requests > 0 ? round(tally.misses / tally.requests, 4) : 0,
      steps: await stepTimes(operationId, Math.max(2000, Math.round(iterations / 4))),
      stdoutBytesPerRequest: perSide((output) => output.bytes),
      stdoutWritesPerRequest: perSide((output) => output.writes),
    };
  }
  // A side that stopped writing what it should during the timing would show here.
  await checkStdout(sides, "after timing", writeCheckedRequests);
  const writeCost = await measureWriteCost(checked.handlerText);
  const tallies = [...seconds.values()];
  const requests = tallies.reduce((sum, tally) => sum + tally.requests, 0);
  const misses = tallies.reduce((sum, tally) => sum + tally.misses, 0);
  return {
    node: process.version,
    iterations,
    warmup,
    rounds,
    clockStepMs: CLOCK_STEP_MS,
    timestampMissShare: requests > 0 ? round(misses / requests, 4) : 0,
    allocationInvocations,
    checkedRequests: CHECKED_REQUESTS,
    operations,
    powertoolsEqualExtraFields: checked.powertoolsEqualExtraFields,
    writeCost,
  };
}
