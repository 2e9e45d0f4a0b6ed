/**
 * `npm run bench`, section 3: what our Middy chain adds to a warm request, against Powertools Logger + Metrics as
 * documented and against Powertools writing what our chain writes, each operation on each pinned Node (./warmChild.ts
 * measures; this starts it and turns its result into figures). Alone: `npx tsx scripts/bench/warm.ts [--iterations
 * 3000] [--rounds 8]`.
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runAsScript } from "../entryPoint";
import { functionEnvironment } from "./lambdaEnvironment";
import { type Figure, figure, TARGETS, type Target } from "./report";
import { BENCH_RUNTIMES, type BenchRuntime, nodeOf } from "./runtimes";
import { median, upperQuartile } from "./stats";
import { CLOCK_STEP_MS } from "./steppedClock";
import type { SideName, WarmResult } from "./warmChild";

const SECTION = "3 Warm request";
/** The descriptor ./warmChild.ts sends its result on (told so by its last argument). */
const RESULT_FD = 3;
const SIDE_LABELS: Record<SideName, string> = {
  bare: "bare operation",
  ours: "our chain",
  powertools: "Powertools as documented",
  powertoolsSame: "Powertools writing our content",
};
const FUNCTION_NAME = "Production-PetStore-listPets";
const CHILD = fileURLToPath(new URL("./warmChild.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A deployed function's environment (./lambdaEnvironment.ts) with its JSON log format and log stream, and none of
 * Powertools' own settings (its POWERTOOLS_DEV would swap its Console for the global one).
 */
function deployedEnvironment(runtime: BenchRuntime, node: string): NodeJS.ProcessEnv {
  const fn = { functionName: FUNCTION_NAME, memoryMb: 512, region: "us-east-1", version: "42", taskRoot: "/var/task" };
  return {
    ...functionEnvironment({ ...fn, node, nodeMajor: runtime.major, tableName: "petstore-bench", stage: "prod" }),
    AWS_LAMBDA_LOG_FORMAT: "JSON",
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${FUNCTION_NAME}`,
    AWS_LAMBDA_LOG_STREAM_NAME: "2026/03/17/[42]0f1e2d3c4b5a69788796a5b4c3d2e1f0",
  };
}

/**
 * Runs ./warmChild.ts on `node` with stdout on /dev/null: each line is still a synchronous write(2), as on Lambda's
 * pipe, but no sleeping reader is woken, whose cost would measure the OS scheduler rather than either side.
 */
function runChild(runtime: BenchRuntime, node: string, iterations: number, rounds: number): Promise<WarmResult> {
  const devNull = openSync("/dev/null", "w");
  let child: ReturnType<typeof spawn>;
  try {
    const options = { cwd: ROOT, env: deployedEnvironment(runtime, node), stdio: ["ignore", devNull, "pipe", "pipe"] };
    const args = ["--import", "tsx", CHILD, `${iterations}`, `${rounds}`, `${RESULT_FD}`];
    child = spawn(node, args, options as SpawnOptions);
  } finally {
    closeSync(devNull); // the child has its own descriptor on it
  }
  let result = "";
  let stderr = "";
  (child.stdio[RESULT_FD] as Readable).on("data", (chunk: Buffer) => {
    result += chunk.toString();
  });
  (child.stderr as Readable).on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code === 0 && result !== "") return resolve(JSON.parse(result) as WarmResult);
      const last = stderr.trim().split("\n").at(-1) || "no result";
      reject(new Error(`warm request on Node ${runtime.version} failed (exit ${code ?? signal}): ${last}`));
    });
  });
}

export async function measureWarm(options: {
  runtime: BenchRuntime;
  node: string;
  iterations: number;
  rounds: number;
}): Promise<{ figures: Figure[]; details: WarmResult }> {
  const { runtime, iterations, rounds } = options;
  const result = await runChild(runtime, options.node, iterations, rounds);
  const method =
    `One process per Node, a deployed function's environment, stdout to /dev/null; ${iterations} invocations ` +
    `per side and operation in ${rounds} rounds, sides shuffled per invocation: the bare operation, our chain ` +
    `(functions/*.ts, in-memory stores), and the bare operation in Middy with Powertools Logger + Metrics as ` +
    `documented and writing our request line and 7 metrics (powertoolsSame); every Middy side with ` +
    `MIDDY_OPTIONS. Per round (p50 ours − p50 bare) / (p50 peer − p50 bare); median, judged on the upper ` +
    `quartile. Each invocation gets a freshly parsed REST proxy event, and its side's clock moves on ` +
    `${CLOCK_STEP_MS} ms (a quiet container: a key lookup every 30).`;
  // Printed after the ratios' method, which says how the rounds ran.
  const timesMethod = "Each side's time per invocation, to its answer and writes' completions.";
  const figures: Figure[] = [];
  const id = (operation: string, name: string) => `middleware.${runtime.idPart}${operation}.${name}`;
  for (const [operation, measured] of Object.entries(result.operations)) {
    const ratio = (name: string, peer: string, byRound: number[], target: Target) =>
      figure({
        ...{ id: id(operation, name), section: SECTION, runtime: runtime.version, unit: "", method, target },
        label: `${operation}: added time per request, ours / ${peer}`,
        value: median(byRound),
        upperQuartile: upperQuartile(byRound),
      });
    figures.push(
      ratio("peerRatio", SIDE_LABELS.powertools, measured.peerRatioByRound, TARGETS.warmPeerRatio),
      ratio("equalPeerRatio", SIDE_LABELS.powertoolsSame, measured.equalPeerRatioByRound, TARGETS.warmEqualPeerRatio),
    );
    for (const [side, times] of Object.entries(measured.sides)) {
      for (const quantile of ["p50", "p99"] as const) {
        const label = `${operation}: ${SIDE_LABELS[side as SideName]}, ${quantile}`;
        const fields = { section: SECTION, runtime: runtime.version, label, unit: "µs", method: timesMethod };
        figures.push(figure({ ...fields, id: id(operation, `${side}.${quantile}Us`), value: times[`${quantile}Us`] }));
      }
    }
  }
  return { figures, details: result };
}

await runAsScript(
  import.meta.url,
  async (argv) => {
    const { markdownTables } = await import("./report");
    const options = {
      iterations: { type: "string", default: "3000" },
      rounds: { type: "string", default: "8" },
    } as const;
    const { values } = parseArgs({ args: argv, options });
    const [iterations, rounds] = [Number(values.iterations), Number(values.rounds)];
    if (!(Number.isInteger(iterations) && Number.isInteger(rounds) && iterations >= rounds && rounds >= 1)) {
      throw new Error("--iterations and --rounds must be whole numbers, rounds at least 1 and at most iterations");
    }
    const figures: Figure[] = [];
    for (const runtime of BENCH_RUNTIMES) {
      const warm = await measureWarm({ runtime, node: await nodeOf(runtime), iterations, rounds });
      figures.push(...warm.figures);
      for (const [operation, { keyLookups, invocations }] of Object.entries(warm.details.operations)) {
        console.log(`${runtime.version} ${operation}: ${keyLookups} key lookups in ${invocations} requests of ours`);
      }
    }
    console.log(markdownTables(figures));
  },
  (error) => `warm bench: ${error instanceof Error ? error.message : String(error)}`,
);
