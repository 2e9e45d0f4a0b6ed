/**
 * `npm run bench`: bundle size, cold-start proxy, middleware overhead, DynamoDB read cost and
 * local throughput. Prints a table and writes every figure, with its method, target and result,
 * to .bench/results.json. Exits 1 when a target is missed. Every figure that depends on Node is
 * measured on the versions scripts/nodeVersions.ts pins, whatever Node started the bench (see
 * ./runtimes.ts): the bundles' smoke run, the cold-start proxy and the middleware overhead on each
 * of them, with the same targets; read cost and throughput in the bench's own process, on the lowest.
 *
 * Environment: BENCH_DURATION (seconds per throughput run, default 10), BENCH_COLD_RUNS (fresh
 * processes per bundle, default 50, at least 30), BENCH_ITERATIONS (warm invocations per side, default 20000),
 * BENCH_ROUNDS (interleaved rounds those invocations are split into for the peer ratio, default 5).
 */
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism, cpus, loadavg } from "node:os";
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
const { measureMiddlewareOverhead, measureMiddlewareOverheadOn } = await import("./middleware");
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
    "the CDK stack gives NodejsFunction): bundled, minified ESM, SDK included, unused credential providers " +
    "external; size of the output file in bytes (metafile). Target 240 KB read as 240,000 bytes.",
  smoke:
    "Each function bundle is copied to a temporary directory with no node_modules within reach (as in " +
    "Lambda, so anything left external cannot be loaded) and a fresh `node` imports it and invokes its " +
    "handler once against an in-memory dynalite: createPet, then getPet of that pet, then listPets.",
  coldStart:
    `For each runtime and each of ${coldRuns} rounds, a fresh \`node\` process of that runtime (no flags, no loader, clean env with the ` +
    "PETS_TABLE_NAME/PETSTORE_STAGE/AWS_REGION the functions read at load) times `await import(bundle)` with " +
    "performance.now(); the same is done for an empty module in every round. Rounds interleave all bundles " +
    "and the empty module, each starting at a different one; bundles are copied outside the project (no " +
    "node_modules to fall back on). Figure = import time minus the same round's empty-module import time; " +
    "median and p90 over rounds. Ratio = median over rounds of function / baseline in the same round " +
    "(the ratio of the two medians is shown beside it), where baseline is " +
    "scripts/bench/baselineHandler.ts (same DynamoDB document client, one GetItem, no Middy, no project code), " +
    "built with the same options. Import only: Lambda's runtime bootstrap and the first request's " +
    "connection and credential setup are not included.",
  coldStartCpu:
    "As the cold-start proxy, with the child's CPU time (process.cpuUsage, user + system, all threads) " +
    "around the import instead of wall time: less disturbed by other work on a shared machine, but it " +
    "counts V8's background compile and GC threads too. Informational; the target is on wall time.",
  observability:
    "scripts/bench/observabilityEntry.ts (lib/observability and the request-telemetry middleware, set up as " +
    "at cold start) built with the same options, imported in the same interleaved rounds; import time " +
    "minus the empty module's. Its code alone: minus instead, round by round, the import of an empty entry " +
    "built with the same options (scripts/bench/emptyEntry.ts: only the banner every bundle carries). Per request: p50 of the handler with telemetry minus the same handler " +
    "without it (log and metric lines built, written to a no-op).",
  middleware:
    `On ${HOST_RUNTIME.version} in the bench's own process; on each other pinned version in a process of its own ` +
    "started with the same loader (node --import tsx). " +
    `Warm, in-process: ${iterations} timed invocations per side after a warm-up, the sides interleaved ` +
    "with a rotating order. Handler = createHandler(deps) from functions/*.ts (the full Middy chain, the " +
    "real key verifier over an in-memory key store, InMemoryPetRepository, a context with " +
    "getRemainingTimeInMillis so Middy arms its timeout timer, JSON telemetry writing to a no-op). Bare = " +
    "the operation the chain wraps, given the event as the chain would hand it (headers lower-cased, body " +
    "parsed, caller known); the bench checks both give the same answer. Each request is built before the " +
    "clock starts; process.hrtime per invocation. Added = p50(handler) − p50(bare), and likewise at p99. " +
    "Informational: an absolute time on a shared machine measures the machine as much as the code.",
  peerRatio:
    "In the same process and interleaved with the handler and bare sides above: the same bare operation " +
    "wrapped as Powertools for AWS Lambda (TypeScript) documents it, Middy with Logger's injectLambdaContext " +
    "and Metrics' logMetrics, one logger.info and one addMetric per request, their lines built in full and " +
    "dropped at their console (ours are dropped at our writer). Bare = the operation and its body " +
    "serialised to JSON (every handler hands API Gateway text; the chain's envelope does it, so does the " +
    `peer's side). The invocations per side are split into ${rounds} rounds (BENCH_ROUNDS) that also ` +
    "interleave the operations; per round, ratio = (p50 handler − p50 bare) / (p50 Powertools − p50 bare); " +
    "figure = median of the rounds' ratios. Target <= 0.5: our whole chain adds at most half of what " +
    "Powertools' logging and metrics alone add.",
  steps:
    "each middleware timed with Middy's own hooks around it, on the full chain; operation includes Middy's " +
    "early-timeout race; Middy = the whole invocation minus the steps",
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
// Only the functions have a size target; the other bundles are there for comparison.
for (const bundle of bundles) {
  figures.push(
    figure({
      id: `bundle.${bundle.name}.bytes`,
      section: "1 Bundle size",
      label: `${bundle.name} (${round(bundle.bytes / 1024, 1)} KiB)`,
      value: bundle.bytes,
      unit: "B",
      method: METHODS.bundle,
      ...(bundle.kind === "function" ? { target: { op: "<=", value: 240_000 } } : {}),
    }),
  );
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
  progress(
    `cold-start proxy on Node ${runtime.version}: ${coldRuns} rounds of ${bundles.length + 1} fresh node processes`,
  );
  noteLoad(`coldStart ${runtime.version}`);
  const cold = await measureColdStarts(bundles, coldRuns, runtime.node);
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
        label: `${bundle.name} / baseline, median of per-round ratios (ratio of medians ${round(own.medianMs / baseline.medianMs, 3)})`,
        value: pairedRatioMedian(cold, bundle.name, "baseline"),
        unit: "",
        method: METHODS.coldStart,
        target: { op: "<=", value: 1.15 },
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

const overheads: Record<string, Awaited<ReturnType<typeof measureMiddlewareOverhead>>> = {};
for (const runtime of runtimes) {
  progress(`middleware overhead on Node ${runtime.version}: ${iterations} warm invocations per side and operation`);
  noteLoad(`middleware ${runtime.version}`);
  const warmup = Math.round(iterations / 5);
  const overhead =
    runtime.node === process.execPath
      ? await measureMiddlewareOverhead(iterations, warmup, rounds)
      : await measureMiddlewareOverheadOn(runtime.node, iterations, warmup, rounds);
  overheads[runtime.version] = overhead;
  const measured = (fields: Omit<Parameters<typeof figure>[0], "section" | "runtime">) =>
    figure({ ...fields, id: runtimeId(runtime, fields.id), section: "3 Middleware", runtime: runtime.version });
  for (const [operation, result] of Object.entries(overhead.operations)) {
    figures.push(
      measured({
        id: `middleware.${operation}.peerRatio`,
        label: `${operation} added / Powertools' added, median of ${rounds} rounds (${result.peerRatioByRound.join(", ")})`,
        value: result.peerRatio,
        unit: "",
        method: METHODS.peerRatio,
        target: { op: "<=", value: 0.5 },
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
        label: `${operation} Powertools Logger + Metrics added at p50 (${result.powertoolsUs.p50} vs bare ${result.bareUs.p50} µs)`,
        value: result.powertoolsAddedP50Us,
        unit: "µs",
        method: METHODS.peerRatio,
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
        label: `${operation} logging + metrics per request, p50`,
        value: result.telemetryP50Us,
        unit: "µs",
        method: METHODS.observability,
      }),
    );
  }
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
  details: { bundles, smoke: smokes, coldStart: colds, middleware: overheads, readCost: reads, throughput },
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
