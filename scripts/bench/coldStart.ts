/**
 * Cold-start proxy: the time a fresh `node` process takes to import a bundle, minus the time it
 * takes to import an empty module in the same round. Rounds interleave every bundle and the empty
 * module, starting at a different one each round, so drift on a shared machine hits all alike.
 */
import { spawnSync } from "node:child_process";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Bundle } from "./build";
import { median, percentile, round } from "./stats";

const timerScript = fileURLToPath(new URL("./importTimer.mjs", import.meta.url));

/** What the functions get from Lambda and the CDK stack; their config is read at module load. */
const lambdaLikeEnv = {
  PETS_TABLE_NAME: "petstore-bench",
  PETSTORE_STAGE: "staging",
  LOG_LEVEL: "INFO",
  AWS_REGION: "us-east-1",
  AWS_EXECUTION_ENV: "AWS_Lambda_nodejs24.x",
  AWS_LAMBDA_FUNCTION_NAME: "petstore-bench",
  // The SDK warns (on stderr) under Node < 22; the Lambda runtime is newer and never pays for it.
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
};

export interface ColdStartResult {
  readonly runs: number;
  readonly emptyMs: { median: number; p90: number };
  readonly emptyCpuMs: { median: number };
  readonly bundles: Record<
    string,
    {
      /** Wall time of the import minus the same round's empty-module import. */
      medianMs: number;
      p90Ms: number;
      rawMedianMs: number;
      /** The same with CPU time (every thread of the process) instead of wall time. */
      cpuMedianMs: number;
      /** Net wall time of each round, for paired comparisons between bundles. */
      netMs: number[];
    }
  >;
}

interface ImportTime {
  readonly ms: number;
  readonly cpuMs: number;
}

function importOnce(node: string, file: string, cwd: string): ImportTime {
  // A clean environment: no NODE_OPTIONS (tsx's loader would be measured too), nothing inherited.
  const child = spawnSync(node, [timerScript, file], {
    cwd,
    env: { PATH: process.env.PATH ?? "", ...lambdaLikeEnv },
    encoding: "utf8",
    timeout: 30_000,
  });
  if (child.status !== 0) throw new Error(`importing ${file} failed: ${child.stderr || child.error?.message}`);
  return JSON.parse(child.stdout) as ImportTime;
}

/** Median over rounds of a's import time minus b's in the same round. */
export function pairedMedianMs(result: ColdStartResult, a: string, b: string): number {
  const first = result.bundles[a]?.netMs ?? [];
  const second = result.bundles[b]?.netMs ?? [];
  return round(median(first.map((ms, index) => ms - (second[index] ?? 0))), 2);
}

/**
 * Median over rounds of a's import time divided by b's in the same round. Runs of one round are
 * seconds apart at most, so they share whatever else the machine is doing at the time.
 */
export function pairedRatioMedian(result: ColdStartResult, a: string, b: string): number {
  const first = result.bundles[a]?.netMs ?? [];
  const second = result.bundles[b]?.netMs ?? [];
  return round(median(first.map((ms, index) => ms / (second[index] ?? Number.NaN))), 3);
}

/** `node`: the binary to measure with (this process's by default). */
export async function measureColdStarts(
  bundles: readonly Bundle[],
  runs: number,
  node = process.execPath,
): Promise<ColdStartResult> {
  // Outside the project, as in Lambda's /var/task: a bundle that needs node_modules fails here.
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-"));
  try {
    const empty = join(dir, "empty.mjs");
    await writeFile(empty, "export {};\n");
    const targets = [{ name: "empty", file: empty }];
    for (const bundle of bundles) {
      const file = join(dir, basename(bundle.file));
      await copyFile(bundle.file, file);
      targets.push({ name: bundle.name, file });
    }
    const raw = new Map<string, ImportTime[]>(targets.map((target) => [target.name, []]));
    // One unmeasured pass warms the OS file cache for every file.
    for (const target of targets) importOnce(node, target.file, dir);
    for (let round = 0; round < runs; round++) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(round + i) % targets.length] as (typeof targets)[number];
        raw.get(target.name)?.push(importOnce(node, target.file, dir));
      }
    }
    const emptyRuns = raw.get("empty") ?? [];
    const emptyWall = emptyRuns.map((time) => time.ms);
    const result: ColdStartResult = {
      runs,
      emptyMs: { median: round(median(emptyWall), 3), p90: round(percentile(emptyWall, 90), 3) },
      emptyCpuMs: { median: round(median(emptyRuns.map((time) => time.cpuMs)), 3) },
      bundles: {},
    };
    for (const bundle of bundles) {
      const times = raw.get(bundle.name) ?? [];
      const net = times.map((time, round) => time.ms - (emptyRuns[round]?.ms ?? 0));
      const netCpu = times.map((time, round) => time.cpuMs - (emptyRuns[round]?.cpuMs ?? 0));
      result.bundles[bundle.name] = {
        medianMs: round(median(net), 2),
        p90Ms: round(percentile(net, 90), 2),
        rawMedianMs: round(median(times.map((time) => time.ms)), 2),
        cpuMedianMs: round(median(netCpu), 2),
        netMs: net.map((ms) => round(ms, 3)),
      };
    }
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
