/**
 * `npm run bench`: bundle size, cold first response (./cold.ts) and warm chain (./warm.ts) on the pinned Node versions
 * (./runtimes.ts); writes .bench/results.json and docs/performance.md's tables (./report.ts), exit 1 on a missed
 * target. Environment: BENCH_COLD_ROUNDS (default 50), BENCH_ITERATIONS (default 20,000), BENCH_ROUNDS (default 10);
 * fewer than the defaults prints the figures without publishing them.
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

const DEFAULTS = { coldRounds: 50, iterations: 20_000, rounds: 10 } as const;

function whole(name: string, fallback: number, minimum: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum) {
    throw new Error(`${name} must be a whole number of at least ${minimum}, not "${raw}".`);
  }
  return value;
}

function readSettings() {
  try {
    return {
      coldRounds: whole("BENCH_COLD_ROUNDS", DEFAULTS.coldRounds, 4),
      iterations: whole("BENCH_ITERATIONS", DEFAULTS.iterations, 1000),
      rounds: whole("BENCH_ROUNDS", DEFAULTS.rounds, 4),
    };
  } catch (error) {
    return fail(error);
  }
}
const settings = readSettings();
const publishes = (Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]).every(
  (name) => settings[name] >= DEFAULTS[name],
);

const { measureCold } = await import("./cold");
const { measureWarm } = await import("./warm");
const { markdownTables, PAGE, writePerformancePage } = await import("./report");
type Figure = import("./report").Figure;

const started = performance.now();
const loadAverages: Record<string, number[]> = {};
const noteLoad = (when: string) => {
  loadAverages[when] = loadavg().map((value) => Math.round(value * 100) / 100);
};

noteLoad("start");
progress(`bundles, and the cold first response: ${settings.coldRounds} shuffled rounds of fresh processes per Node`);
// A failed measurement (a side answering otherwise, a child dying) ends the run with its one line.
const cold = await measureCold({ runtimes: BENCH_RUNTIMES, rounds: settings.coldRounds }).catch(fail);
const figures: Figure[] = [...cold.figures];
const warmDetails: Record<string, unknown> = {};
for (const runtime of BENCH_RUNTIMES) {
  noteLoad(`warm ${runtime.version}`);
  progress(`warm request on Node ${runtime.version}: ${settings.iterations} invocations per side and operation`);
  const warm = await measureWarm({
    runtime,
    node: await nodeOf(runtime),
    iterations: settings.iterations,
    rounds: settings.rounds,
  }).catch(fail);
  figures.push(...warm.figures);
  warmDetails[runtime.version] = warm.details;
}
noteLoad("end");

const seconds = Math.round((performance.now() - started) / 100) / 10;
const cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpus()[0]?.model;
const missed = figures.filter((f) => f.pass === false);
const summary =
  `${availableParallelism()} CPUs (${cpuModel}), ${process.platform} ${process.arch}, Node ` +
  `${BENCH_RUNTIMES.map((runtime) => runtime.version).join(" and ")}; ${seconds} s on ` +
  `${new Date().toISOString().slice(0, 10)}, load average ${loadAverages.start?.join(" ")} at the start and ` +
  `${loadAverages.end?.join(" ")} at the end; ${settings.coldRounds} cold rounds, ${settings.iterations} warm ` +
  `invocations per side in ${settings.rounds} rounds. ` +
  (missed.length === 0 ? "Every target met." : `Targets missed: ${missed.map((f) => f.id).join(", ")}.`);

await mkdir(".bench", { recursive: true });
await writeFile(
  ".bench/results.json",
  `${JSON.stringify({ summary, settings, loadAverages, figures, details: { cold: cold.details, warm: warmDetails } }, null, 2)}\n`,
);
const tables = markdownTables(figures);
console.log(`${tables}\n\n${summary}\nFigures, methods and samples: .bench/results.json`);
if (publishes) {
  await writePerformancePage(PAGE, `Latest run: ${summary}\n\n${tables}`).catch(fail);
  console.log(`Published to ${PAGE}.`);
} else {
  console.log(`Not published to ${PAGE}: fewer rounds or invocations than the defaults.`);
}
if (missed.length > 0) process.exitCode = 1;
