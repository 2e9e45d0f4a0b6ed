/**
 * `npm run bench`: bundle size, the cold request, middleware overhead against Powertools, DynamoDB
 * read cost and local throughput. Prints a table and writes every figure, with its method, target
 * and result, to .bench/results.json. Exits 1 when a target is missed. Every figure that depends on
 * Node is measured on the versions scripts/nodeVersions.ts pins, whatever Node started the bench
 * (see ./runtimes.ts): the bundles' smoke run, the import times and the middleware overhead on each
 * of them, with the same targets; the whole cold request on Lambda's (Node 24); read cost and
 * throughput in the bench's own process, on the lowest.
 *
 * Environment: BENCH_DURATION (seconds per throughput run, default 10), BENCH_COLD_RUNS (rounds of
 * fresh processes per bundle, default 50, at least 30), BENCH_ITERATIONS (warm invocations per
 * side, default 20000), BENCH_ROUNDS (interleaved rounds those invocations are split into for the
 * peer ratios, default 5).
 */
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg } from "node:os";
import { NODE_VERSIONS } from "../nodeVersions";
import { BENCH_RUNTIMES, HOST_RUNTIME, nodeOf, rerunOnHost } from "./runtimes";

const progress = (message: string) => process.stderr.write(`bench: ${message}\n`);
/** Bad input, or a Node that cannot be installed: one line, no stack trace. */
function fail(error: unknown): never {
  console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}

// Before anything else, so that everything below (settings included) runs once, on the host.
if (process.version !== HOST_RUNTIME.version) {
  progress(`started on Node ${process.version}; the bench runs on ${HOST_RUNTIME.version}, the lowest pinned version`);
  process.exit(await rerunOnHost().catch(fail));
}

function positiveNumber(name: string, fallback: number, minimum = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value < minimum) {
    throw new Error(`${name} must be a number ${minimum ? `of at least ${minimum}` : "above 0"}, not "${raw}".`);
  }
  return value;
}

function readSettings() {
  try {
    return {
      duration: positiveNumber("BENCH_DURATION", 10),
      coldRuns: Math.round(positiveNumber("BENCH_COLD_RUNS", 50, 30)),
      iterations: Math.round(positiveNumber("BENCH_ITERATIONS", 20_000, 1000)),
      rounds: Math.round(positiveNumber("BENCH_ROUNDS", 5, 1)),
    };
  } catch (error) {
    return fail(error);
  }
}
const { duration, coldRuns, iterations, rounds } = readSettings();

// The handlers read their configuration when first imported, so it is set before any import of them.
Object.assign(process.env, {
  PETS_TABLE_NAME: "petstore-bench",
  PETSTORE_STAGE: "local",
  AWS_REGION: process.env.AWS_REGION || "us-east-1",
  // Only the SDK's notice about Node < 22, which would interleave with the table.
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
});

const { benchDir, buildBundles } = await import("./build");
const { smokeTestBundles } = await import("./bundleSmoke");
const { measureColdStarts, pairedMedianMs, pairedRatioMedian } = await import("./coldStart");
const { cutLadder } = await import("./build");
const { IDEMPOTENT_CREATE, cutSavings, measureFirstResponses, pairedRatio } = await import("./firstResponse");
const { measureMiddlewareOverheadOn } = await import("./middleware");
const { measureReadCost, READ_COST_LIMITS, READ_COST_SIZES } = await import("./readCost");
const { CONNECTIONS, measureThroughput, scenarios } = await import("./throughput");
const { figure, markdownTable, stepTable } = await import("./report");
const { round } = await import("./stats");
type Figure = import("./report").Figure;

const benchStarted = performance.now();
const load: Record<string, number[]> = {};
const noteLoad = (when: string) => {
  load[when] = loadavg().map((value) => round(value, 2));
};

function machine() {
  const cpuInfo = readFileSync("/proc/cpuinfo", "utf8");
  return {
    nproc: availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuInfo)?.[1] ?? cpus()[0]?.model ?? "unknown",
    node: process.version,
    runtimes: runtimes.map((runtime) => runtime.version),
    platform: `${process.platform} ${process.arch}`,
  };
}

const figures: Figure[] = [];
const METHODS = {
  bundle:
    "esbuild build of each function's entry with exactly lambdaEsbuildOptions from infra/bundling.ts (the options " +
    "the CDK stack gives NodejsFunction): bundled, minified ESM, SDK included, the cuts of BUNDLE_CUTS applied; " +
    "size of the output file in bytes and number of modules in it (metafile). Target 240 KB read as 240,000 bytes. " +
    "The baseline is built with sdkAsItComesEsbuildOptions: the same, without the cuts.",
  smoke:
    "Each function bundle is copied to a temporary directory with no node_modules within reach (as in " +
    "Lambda, so anything left external cannot be loaded) and a fresh `node` imports it and invokes its " +
    "handler once against an in-memory dynalite: createPet, then getPet of that pet, then listPets.",
  firstResponse:
    `On Node ${NODE_VERSIONS.lambda} (Lambda's nodejs24.x), for each of ${coldRuns} rounds: a fresh \`node\` process ` +
    "per bundle (no flags, no loader), in a directory with no node_modules, with only the environment Lambda " +
    "gives a function (AWS_REGION, AWS_EXECUTION_ENV, AWS_LAMBDA_FUNCTION_*, LAMBDA_TASK_ROOT, TZ, credentials in " +
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, _X_AMZN_TRACE_ID, the stack's PETS_TABLE_NAME, " +
    "PETSTORE_STAGE and LOG_LEVEL; no DYNAMODB_ENDPOINT), pointed at a local DynamoDB (dynalite) over https " +
    "with AWS_ENDPOINT_URL_DYNAMODB and a certificate made for the run (Lambda's endpoint is https: over plain " +
    "http the SDK would load node:http lazily, a cost Lambda never pays). It imports the bundle and answers one " +
    "real request (a REST proxy event with a valid key: getPet of a stored pet, the first page of listPets, a " +
    "createPet); figure = import + that first request (process.hrtime), the part of a cold start the bundle " +
    "decides (Node's own start is the same for every bundle and reported apart). Baseline = " +
    "scripts/bench/baselineHandler.ts (one GetItem with the document client, no Middy, no project code) built " +
    "with the SDK as it comes (sdkAsItComesEsbuildOptions), answering the same getPet request. Rounds " +
    "interleave every bundle, each round starting at a different one; ratio = median over rounds of function / " +
    "baseline in the same round. Target <= 0.85: our whole handler answers its first request faster than the " +
    "bare SDK handler answers its own. createPet with an Idempotency-Key (five writes instead of two) is reported " +
    "beside it, without a target.",
  cuts:
    "The cold request of createPet built with the cuts of BUNDLE_CUTS (infra/bundling.ts) added one at a time, " +
    "from none (the SDK as it comes) to all (the deployed bundle), each step measured in the same interleaved " +
    "rounds as the figures above; saved = median over rounds of the step without the cut minus the step with it. " +
    "Bytes and modules from the metafile.",
  coldStart:
    `For each runtime and each of ${coldRuns} rounds, a fresh \`node\` process of that runtime (no flags, no loader, clean env with the ` +
    "PETS_TABLE_NAME/PETSTORE_STAGE/AWS_REGION the functions read at load) times `await import(bundle)` with " +
    "performance.now(); the same is done for an empty module in every round. Rounds interleave all bundles " +
    "and the empty module, each starting at a different one; bundles are copied outside the project (no " +
    "node_modules to fall back on). Figure = import time minus the same round's empty-module import time; " +
    "median and p90 over rounds. Ratio = median over rounds of function / baseline in the same round " +
    "(the ratio of the two medians is shown beside it), baseline as in the cold request. Import only, on both " +
    "pinned versions; informational (the target is on the whole cold request).",
  coldStartCpu:
    "As the import figures, with the child's CPU time (process.cpuUsage, user + system, all threads) " +
    "around the import instead of wall time: less disturbed by other work on a shared machine, but it " +
    "counts V8's background compile and GC threads too. Informational.",
  observability:
    "scripts/bench/observabilityEntry.ts (lib/observability and the request-telemetry middleware, set up as " +
    "at cold start) built with the same options, imported in the same interleaved rounds; import time " +
    "minus the empty module's. Its code alone: minus instead, round by round, the import of an empty entry " +
    "built with the same options (scripts/bench/emptyEntry.ts: only the banner every bundle carries). Per request: p50 of the handler with telemetry minus the same handler " +
    "without it.",
  middleware:
    "Each pinned version in a process of its own (node --expose-gc --import tsx), with a deployed function's " +
    "environment, its stdout /dev/null: every line of every side is flattened and written with a real write(2) " +
    "by Node's own stdout stream (synchronous, as Lambda's stdout is). " +
    `Warm: ${iterations} timed invocations per side after a warm-up, the sides interleaved ` +
    "in a new shuffled order for every invocation round (a fixed-seed generator), so that each side follows " +
    "every other equally often. Handler = createHandler(deps) from functions/*.ts (the full Middy chain, the " +
    "real key verifier over an in-memory key store, the in-memory stores reading the request's deadline signal " +
    "on every call as the DynamoDB ones do, a context with getRemainingTimeInMillis, the production JSON " +
    "telemetry). Every request is a full recorded REST proxy event of a REGIONAL API (scripts/bench/events/: " +
    "nine headers in headers and multiValueHeaders, a full requestContext), parsed afresh for each invocation, " +
    "with a new X-Ray trace header and request id; before each invocation the clock moves on by just over a " +
    "second (Date.now), as a quiet container's does between requests, so every timestamp misses its per-second " +
    "cache. Bare = the operation the chain wraps, given the event as the chain would hand it (its headers, " +
    "body parsed, caller known); the bench checks every side gives the same answer. process.hrtime per " +
    "invocation. Added = p50(handler) − p50(bare), and likewise at p99. Allocation = bytes allocated per " +
    "invocation, each side run alone after gc() (v8.GCProfiler: used heap at the end − at the start + what " +
    "every collection freed), minus the same loop building the event without invoking. Informational: an " +
    "absolute time on a shared machine measures the machine as much as the code.",
  peerRatio:
    "In the same process and interleaved with the handler and bare sides above: the same bare operation " +
    "wrapped as Powertools for AWS Lambda (TypeScript) documents it, Middy with Logger's injectLambdaContext " +
    "and Metrics' logMetrics, one logger.info and one addMetric per request, its lines written to the same " +
    "stdout by its own Console. Bare = the operation and its body " +
    "serialised to JSON (every handler hands API Gateway text; the chain's envelope does it, so does the " +
    `peer's side). The invocations per side are split into ${rounds} rounds (BENCH_ROUNDS) that also ` +
    "interleave the operations; per round, ratio = (p50 handler − p50 bare) / (p50 Powertools − p50 bare); " +
    "figure = median of the rounds' ratios (each round's and the spread in the label). Target <= 0.5: our " +
    "whole chain adds at most half of what Powertools' logging and metrics alone add.",
  equalPeerRatio:
    "As the peer ratio, against Powertools made to write what our chain writes: its Logger logging the same " +
    "fields as our request line (operation, method, route, path, status, latency, cold start, request ids, " +
    "API key id, user agent, error code, X-Ray trace id) and its Metrics emitting the same 7 metrics with the " +
    "same units and the dimensions Stage and Operation (the bench checks the lines hold the same content). " +
    "Target <= 0.35.",
  writeCost:
    "In the middleware process: one write of the handler's request and metrics lines (~1 KB), at least 50 µs " +
    "apart as between requests, to /dev/null and to a pipe another process drains, interleaved; p50 over " +
    "about 2,000 writes. The pipe's figure includes waking its sleeping reader: set by the OS and the reader, " +
    "paid per write by any handler (ours writes once per request, Powertools' twice, its second mostly finding " +
    "the reader awake), which is why the ratios are taken with /dev/null. Informational.",
  steps:
    "each middleware of the chain timed with the hooks lib/http/asOneMiddleware.ts calls around every step, " +
    "the operation with Middy's own, on the full chain; operation includes the race against the request's " +
    "deadline; Middy = the whole invocation minus the steps",
  readCost:
    "In-memory dynalite (startEmbeddedDynamo), pets written with BatchWrite in the repository's item format: " +
    "1,000, then 9,000 more for 10,000; every 100th sold, the rest alternating available/pending. Requests " +
    "go through the listPets and getPet handlers on DynamoPetRepository. Items read = ScannedCount of every " +
    "Query a request makes (GetItem reports none; it reads the one item its key names, counted as 1); items " +
    "returned = pets in the answer. status=sold: every page until no next link; unfiltered: the first 10 " +
    "pages; getPet: 50 ids spread over the table. Figure = the worst single page's items read / items " +
    "returned (a full page of limit L reads L + 1: the look-ahead that tells whether a next page exists, " +
    "so 1.05 at L = 20); the whole walk's ratio and ConsumedCapacity are in details.",
  throughput:
    `autocannon, ${CONNECTIONS} connections, ${duration} s per request after a short warm-up, against ` +
    "`npm start -- --in-memory` spawned on free ports (its own process: server, handlers, embedded " +
    "dynalite; output to a file), seeded with 100 pets by POST, with a key it issued. In-process: the same " +
    "requests (proxy events built as the local server builds them) straight to createHandler(deps) with " +
    "the runtime's client, repository and verifier on an in-memory dynalite in the bench process, " +
    `${CONNECTIONS} concurrent callers for the same duration, JSON telemetry writing to a no-op. Ratio = ` +
    "server req/s / in-process req/s. non-2xx counts also errors and timeouts.",
};

noteLoad("start");
progress("building bundles");
const bundles = await buildBundles();
const functionBundles = bundles.filter((bundle) => bundle.kind === "function");
// The cut ladder's steps are measured in the cold request only (section 2); every other bundle is sized here.
for (const bundle of bundles.filter((candidate) => candidate.kind !== "ladder")) {
  figures.push(
    figure({
      id: `bundle.${bundle.name}.bytes`,
      section: "1 Bundle size",
      label: `${bundle.name} (${round(bundle.bytes / 1024, 1)} KiB)`,
      value: bundle.bytes,
      unit: "B",
      method: METHODS.bundle,
      // Only the functions have a size target; the other bundles are there for comparison.
      ...(bundle.kind === "function" ? { target: { op: "<=", value: 240_000 } } : {}),
    }),
  );
  if (bundle.kind === "function" || bundle.kind === "baseline") {
    figures.push(
      figure({
        id: `bundle.${bundle.name}.modules`,
        section: "1 Bundle size",
        label: `${bundle.name} modules bundled`,
        value: bundle.modules,
        unit: "modules",
        method: METHODS.bundle,
      }),
    );
  }
}

// The figures that depend on the runtime are measured on each pinned version.
progress(
  `Node ${BENCH_RUNTIMES.map((runtime) => runtime.version).join(" and ")} for the runtime figures (scripts/nodeVersions.ts)`,
);
type Runtime = (typeof BENCH_RUNTIMES)[number] & { readonly node: string };
const runtimes: Runtime[] = [];
// One at a time: a first run installs each from the npm registry.
for (const runtime of BENCH_RUNTIMES) runtimes.push({ ...runtime, node: await nodeOf(runtime).catch(fail) });
const runtimeId = (runtime: Runtime, id: string) => id.replace(".", `.${runtime.idPart}`);

const smokes: Record<string, Awaited<ReturnType<typeof smokeTestBundles>>> = {};
for (const runtime of runtimes) {
  progress(`bundled functions on Node ${runtime.version}: one request each, from outside the project`);
  const smoke = await smokeTestBundles(bundles, runtime.node);
  smokes[runtime.version] = smoke;
  figures.push(
    figure({
      id: runtimeId(runtime, "bundle.smoke.failures"),
      section: "1 Bundle size",
      runtime: runtime.version,
      label: `bundles answering non-2xx, run outside the project (${Object.entries(smoke.answers)
        .map(([name, answer]) => `${name} ${answer.statusCode}`)
        .join(", ")})`,
      value: smoke.failures,
      unit: "",
      method: METHODS.smoke,
      target: { op: "==", value: 0 },
    }),
  );
}

const colds: Record<string, Awaited<ReturnType<typeof measureColdStarts>>> = {};
for (const runtime of runtimes) {
  progress(`module import on Node ${runtime.version}: ${coldRuns} rounds of fresh node processes`);
  noteLoad(`coldStart ${runtime.version}`);
  const cold = await measureColdStarts(
    bundles.filter((bundle) => bundle.kind !== "ladder"),
    coldRuns,
    runtime.node,
  );
  colds[runtime.version] = cold;
  type ColdFigures = (typeof cold.bundles)[string];
  const baseline = cold.bundles.baseline as ColdFigures;
  const measured = (fields: Omit<Parameters<typeof figure>[0], "section" | "runtime">) =>
    figure({ ...fields, id: runtimeId(runtime, fields.id), section: "2 Cold start", runtime: runtime.version });
  for (const bundle of functionBundles) {
    const own = cold.bundles[bundle.name] as ColdFigures;
    figures.push(
      measured({
        id: `coldStart.${bundle.name}.medianMs`,
        label: `${bundle.name} import, median (p90 ${own.p90Ms} ms)`,
        value: own.medianMs,
        unit: "ms",
        method: METHODS.coldStart,
      }),
      measured({
        id: `coldStart.${bundle.name}.ratio`,
        label: `${bundle.name} import / the SDK-as-it-comes baseline's, median of per-round ratios (ratio of medians ${round(own.medianMs / baseline.medianMs, 3)})`,
        value: pairedRatioMedian(cold, bundle.name, "baseline"),
        unit: "",
        method: METHODS.coldStart,
      }),
      measured({
        id: `coldStart.${bundle.name}.cpuRatio`,
        label: `${bundle.name} / baseline, CPU-time medians (${own.cpuMedianMs} vs ${baseline.cpuMedianMs} ms)`,
        value: round(own.cpuMedianMs / baseline.cpuMedianMs, 3),
        unit: "",
        method: METHODS.coldStartCpu,
      }),
    );
  }
  const observability = cold.bundles.observability as ColdFigures;
  figures.push(
    measured({
      id: "coldStart.baseline.medianMs",
      label: `baseline import, median (p90 ${baseline.p90Ms} ms)`,
      value: baseline.medianMs,
      unit: "ms",
      method: METHODS.coldStart,
    }),
    measured({
      id: "coldStart.observability.medianMs",
      label: `logging + metrics bundle import, median (p90 ${observability.p90Ms} ms)`,
      value: observability.medianMs,
      unit: "ms",
      method: METHODS.observability,
    }),
    measured({
      id: "coldStart.observability.codeMs",
      label: "logging + metrics code alone: that import − an empty bundle's, median",
      value: pairedMedianMs(cold, "observability", "emptyBundle"),
      unit: "ms",
      method: METHODS.observability,
    }),
    measured({
      id: "coldStart.empty.medianMs",
      label: `empty module import, median (subtracted above)`,
      value: cold.emptyMs.median,
      unit: "ms",
      method: METHODS.coldStart,
    }),
  );
}

// The whole cold request, on Lambda's Node only: the target is on what Lambda runs and bills.
const lambdaRuntime = runtimes.find((runtime) => runtime.name === "lambda") as Runtime;
const ladder = cutLadder(bundles);
progress(
  `cold request on Node ${lambdaRuntime.version}: ${coldRuns} rounds, each bundle in a fresh process over https`,
);
noteLoad(`firstResponse ${lambdaRuntime.version}`);
const firstResponses = await measureFirstResponses(
  bundles.filter((bundle) => bundle.kind === "function" || bundle.kind === "baseline" || bundle.kind === "ladder"),
  coldRuns,
  lambdaRuntime.node,
);
{
  type Cold = (typeof firstResponses.bundles)[string];
  const coldOf = (name: string) => firstResponses.bundles[name] as Cold;
  const baseline = coldOf("baseline");
  const measured = (fields: Omit<Parameters<typeof figure>[0], "section" | "runtime">) =>
    figure({ ...fields, section: "2 Cold start", runtime: lambdaRuntime.version });
  const parts = (cold: Cold) =>
    `import ${cold.importMedianMs} + first request ${cold.firstRequestMedianMs} ms, p90 ${cold.p90Ms} ms`;
  for (const name of [...functionBundles.map((bundle) => bundle.name), IDEMPOTENT_CREATE]) {
    const own = coldOf(name);
    const withTarget = name !== IDEMPOTENT_CREATE;
    figures.push(
      measured({
        id: `coldStart.${name}.firstResponseRatio`,
        label:
          `${name === IDEMPOTENT_CREATE ? "createPet with an Idempotency-Key" : name} cold request / the bare SDK handler's, ` +
          `median of ${coldRuns} per-round ratios (${own.medianMs} vs ${baseline.medianMs} ms)`,
        value: pairedRatio(firstResponses, name, "baseline"),
        unit: "",
        method: METHODS.firstResponse,
        ...(withTarget ? { target: { op: "<=", value: 0.85 } } : {}),
      }),
      measured({
        id: `coldStart.${name}.firstResponseMs`,
        label: `${name} cold request, median (${parts(own)})`,
        value: own.medianMs,
        unit: "ms",
        method: METHODS.firstResponse,
      }),
    );
  }
  figures.push(
    measured({
      id: "coldStart.baseline.firstResponseMs",
      label: `bare SDK handler (the SDK as it comes) cold request, median (${parts(baseline)})`,
      value: baseline.medianMs,
      unit: "ms",
      method: METHODS.firstResponse,
    }),
    measured({
      id: "coldStart.nodeBootMs",
      label: "Node's own start, before any bundle code (in every process alike; not in the figures above)",
      value: baseline.bootMedianMs,
      unit: "ms",
      method: METHODS.firstResponse,
    }),
  );
  for (const [index, saving] of cutSavings(firstResponses, ladder).entries()) {
    figures.push(
      measured({
        id: `coldStart.cuts.${index + 1}.savedMs`,
        label: `cut ${index + 1}, ${saving.cut}: saves ${saving.savedBytes.toLocaleString("en-US")} B and ${saving.savedModules} modules of createPet (${saving.without} − ${saving.with})`,
        value: saving.savedMs,
        unit: "ms",
        method: METHODS.cuts,
      }),
    );
  }
}

const overheads: Record<string, Awaited<ReturnType<typeof measureMiddlewareOverheadOn>>> = {};
for (const runtime of runtimes) {
  progress(`middleware overhead on Node ${runtime.version}: ${iterations} warm invocations per side and operation`);
  noteLoad(`middleware ${runtime.version}`);
  const warmup = Math.round(iterations / 5);
  // A process of its own on every version: its stdout is where every side's lines are written.
  const overhead = await measureMiddlewareOverheadOn(runtime.node, iterations, warmup, rounds);
  overheads[runtime.version] = overhead;
  const measured = (fields: Omit<Parameters<typeof figure>[0], "section" | "runtime">) =>
    figure({ ...fields, id: runtimeId(runtime, fields.id), section: "3 Middleware", runtime: runtime.version });
  const spread = (range: { min: number; max: number }) => `spread ${range.min}–${range.max}`;
  for (const [operation, result] of Object.entries(overhead.operations)) {
    const bytes = result.allocationBytes;
    const kb = (value: number) => `${round(value / 1024, 1)} KiB`;
    /** Our added time over a peer's, with the rounds, their spread and the allocation beside it. */
    const ratioFigure = (
      id: "peerRatio" | "equalPeerRatio",
      peer: string,
      ratio: { median: number; byRound: number[]; spread: { min: number; max: number } },
      peerBytes: number,
      target: number,
    ) =>
      measured({
        id: `middleware.${operation}.${id}`,
        label:
          `${operation} added / Powertools' ${peer} added, median of ${rounds} rounds ` +
          `(${ratio.byRound.join(", ")}; ${spread(ratio.spread)}); allocated per request ` +
          `${kb(bytes.handler)} vs ${kb(peerBytes)} (bare ${kb(bytes.bare)})`,
        value: ratio.median,
        unit: "",
        method: METHODS[id],
        target: { op: "<=", value: target },
      });
    figures.push(
      ratioFigure(
        "peerRatio",
        "(as documented)",
        { median: result.peerRatio, byRound: result.peerRatioByRound, spread: result.peerRatioSpread },
        bytes.powertools,
        0.5,
      ),
      ratioFigure(
        "equalPeerRatio",
        "writing the same content",
        { median: result.equalPeerRatio, byRound: result.equalPeerRatioByRound, spread: result.equalPeerRatioSpread },
        bytes.powertoolsEqual,
        0.35,
      ),
      measured({
        id: `middleware.${operation}.allocatedBytes`,
        label:
          `${operation} bytes allocated per request by the handler (bare ${bytes.bare}, Powertools ${bytes.powertools}, ` +
          `Powertools same content ${bytes.powertoolsEqual}, handler without telemetry ${bytes.handlerWithoutTelemetry})`,
        value: bytes.handler,
        unit: "B",
        method: METHODS.middleware,
      }),
      measured({
        id: `middleware.${operation}.addedP50Us`,
        label: `${operation} added at p50 (handler ${result.handlerUs.p50} vs bare ${result.bareUs.p50} µs)`,
        value: result.addedP50Us,
        unit: "µs",
        method: METHODS.middleware,
      }),
      measured({
        id: `middleware.${operation}.powertoolsAddedP50Us`,
        label: `${operation} Powertools Logger + Metrics (as documented) added at p50 (${result.powertoolsUs.p50} vs bare ${result.bareUs.p50} µs)`,
        value: result.powertoolsAddedP50Us,
        unit: "µs",
        method: METHODS.peerRatio,
      }),
      measured({
        id: `middleware.${operation}.powertoolsEqualAddedP50Us`,
        label: `${operation} Powertools writing the same content added at p50 (${result.powertoolsEqualUs.p50} vs bare ${result.bareUs.p50} µs)`,
        value: result.powertoolsEqualAddedP50Us,
        unit: "µs",
        method: METHODS.equalPeerRatio,
      }),
      measured({
        id: `middleware.${operation}.addedP99Us`,
        label: `${operation} added at p99 (handler ${result.handlerUs.p99} vs bare ${result.bareUs.p99} µs)`,
        value: result.addedP99Us,
        unit: "µs",
        method: METHODS.middleware,
      }),
      measured({
        id: `middleware.${operation}.telemetryP50Us`,
        label: `${operation} logging + metrics per request, p50 (its write included)`,
        value: result.telemetryP50Us,
        unit: "µs",
        method: METHODS.observability,
      }),
    );
  }
  const { writeCost } = overhead;
  figures.push(
    measured({
      id: "middleware.stdoutWrite.devNullUs",
      label: `one ${writeCost.bytes} B write of a request's lines to /dev/null, p50 (p90 ${writeCost.devNullUs.p90} µs)`,
      value: writeCost.devNullUs.p50,
      unit: "µs",
      method: METHODS.writeCost,
    }),
    measured({
      id: "middleware.stdoutWrite.drainedPipeUs",
      label: `the same write to a pipe another process drains, p50 (p90 ${writeCost.drainedPipeUs.p90} µs)`,
      value: writeCost.drainedPipeUs.p50,
      unit: "µs",
      method: METHODS.writeCost,
    }),
  );
}

progress("DynamoDB read cost on dynalite: 1,000 then 10,000 pets");
noteLoad("readCost");
const reads = await measureReadCost();
for (const size of READ_COST_SIZES) {
  const cases = reads.sizes[size] ?? {};
  const ordered = [
    ...READ_COST_LIMITS.map((limit) => `status=sold, limit ${limit}`),
    ...READ_COST_LIMITS.map((limit) => `unfiltered, limit ${limit}`),
    "getPet",
  ];
  for (const name of ordered) {
    const walk = cases[name];
    if (!walk) throw new Error(`read cost: no result for ${name} at ${size}`);
    figures.push(
      figure({
        id: `readCost.${size}.${name.replace(/[^a-z0-9]+/gi, "_")}`,
        section: "4 Read cost",
        runtime: process.version,
        label: `${size.toLocaleString("en-US")} pets, ${name}: worst page (walk ${walk.itemsRead}/${walk.itemsReturned} over ${walk.pages} ${name === "getPet" ? "gets" : "pages"})`,
        value: walk.worstPage,
        unit: "read/returned",
        method: METHODS.readCost,
        target: { op: "<=", value: 1.05 },
      }),
    );
  }
}

progress(`local throughput: ${scenarios.length} requests × ${duration} s, via npm start and in-process`);
noteLoad("throughput");
const throughput = await measureThroughput(duration);
for (const [name, result] of Object.entries(throughput.scenarios)) {
  const { server, inProcess } = result;
  figures.push(
    figure({
      id: `throughput.${name}.server.rps`,
      section: "5 Throughput",
      runtime: process.version,
      label: `${name} via npm start (p50 ${server.latencyP50Ms} ms, p99 ${server.latencyP99Ms} ms)`,
      value: server.requestsPerSecond,
      unit: "req/s",
      method: METHODS.throughput,
    }),
    figure({
      id: `throughput.${name}.inProcess.rps`,
      section: "5 Throughput",
      runtime: process.version,
      label: `${name} in-process (p50 ${inProcess.latencyP50Ms} ms, p99 ${inProcess.latencyP99Ms} ms)`,
      value: inProcess.requestsPerSecond,
      unit: "req/s",
      method: METHODS.throughput,
    }),
    figure({
      id: `throughput.${name}.ratio`,
      section: "5 Throughput",
      runtime: process.version,
      label: `${name} npm start / in-process, req/s`,
      value: result.serverToInProcess,
      unit: "",
      method: METHODS.throughput,
    }),
    figure({
      id: `throughput.${name}.non2xx`,
      section: "5 Throughput",
      runtime: process.version,
      label: `${name} non-2xx (npm start ${server.non2xx} + in-process ${inProcess.non2xx})`,
      value: server.non2xx + inProcess.non2xx,
      unit: "",
      method: METHODS.throughput,
      target: { op: "==", value: 0 },
    }),
  );
}
noteLoad("end");

const totalSeconds = round((performance.now() - benchStarted) / 1000, 1);
const failed = figures.filter((f) => f.pass === false);
const results = {
  generatedAt: new Date().toISOString(),
  machine: machine(),
  // On a shared machine the load average says how much else was running while each part ran.
  loadAverage: load,
  totalSeconds,
  settings: { coldRuns, iterations, rounds, throughputSeconds: duration, connections: CONNECTIONS },
  allTargetsMet: failed.length === 0,
  methods: METHODS,
  figures,
  // Keyed by Node version where the figures depend on it.
  details: {
    bundles,
    smoke: smokes,
    coldStart: colds,
    firstResponse: firstResponses,
    cutSavings: cutSavings(firstResponses, ladder),
    middleware: overheads,
    readCost: reads,
    throughput,
  },
};
await mkdir(benchDir, { recursive: true });
await writeFile(`${benchDir}/results.json`, `${JSON.stringify(results, null, 2)}\n`);

const { nproc, cpuModel, node } = results.machine;
console.log(markdownTable(figures));
console.log(`\nPer-middleware breakdown: median µs of each step per request (${METHODS.steps})\n`);
console.log(stepTable(overheads));
console.log(
  `\n${nproc} CPUs (${cpuModel}), runtime figures on Node ${results.machine.runtimes.join(" and ")} (the bench's own process on ${node}); load average at start ${load.start?.join(" ")}; ${totalSeconds} s.`,
);
console.log(`Figures, methods and details: .bench/results.json`);
if (failed.length > 0) {
  console.log(`\nTargets missed: ${failed.map((f) => f.id).join(", ")}`);
  process.exitCode = 1;
} else {
  console.log("\nEvery target met.");
}
