/**
 * The Node versions the bench measures on: exactly those scripts/nodeVersions.ts pins, whatever Node started it (a
 * figure from an unsupported or machine-dependent Node says nothing). The process runs on the first (the host), the
 * others in child processes; rerunOnHost() moves a bench started on any other Node there.
 */
import { spawn } from "node:child_process";
import { delimiter, dirname } from "node:path";
import { ensureNode, NODE_VERSIONS, type NodeVersionName } from "../nodeVersions";

export interface BenchRuntime {
  readonly name: NodeVersionName;
  /** As `process.version` prints it, and as the table's Node column shows it: `v22.19.0`. */
  readonly version: string;
  /** Its major alone (`22`), as Lambda's runtime names it: nodejs22.x. */
  readonly major: string;
  /**
   * Inserted after the first part of each figure id. The keys are those earlier runs wrote (for the bench's own Node,
   * and "node24." for Lambda's), so results.json files stay comparable.
   */
  readonly idPart: string;
}

const ID_PARTS: Record<NodeVersionName, string> = { lowest: "", lambda: "node24." };

/** Every pinned version, in NODE_VERSIONS' order: the lowest first. */
export const BENCH_RUNTIMES: readonly BenchRuntime[] = (Object.keys(NODE_VERSIONS) as NodeVersionName[]).map(
  (name) => ({
    name,
    version: `v${NODE_VERSIONS[name]}`,
    major: NODE_VERSIONS[name].split(".")[0] as string,
    idPart: ID_PARTS[name],
  }),
);

/** The runtime the bench's own process runs on. */
export const HOST_RUNTIME: BenchRuntime = BENCH_RUNTIMES[0] as BenchRuntime;

/**
 * The `node` binary of `runtime`: this process's own when it is that version, else the pinned one installed from the
 * npm registry (cached after the first time).
 */
export function nodeOf(runtime: BenchRuntime): Promise<string> {
  return process.version === runtime.version
    ? Promise.resolve(process.execPath)
    : ensureNode(NODE_VERSIONS[runtime.name]);
}

/**
 * Runs this same script (same loader flags, arguments and environment) on the host runtime, with its directory first on
 * PATH so that what the bench spawns as `npm`/`node` runs on it too, and answers the exit code to leave with.
 */
export async function rerunOnHost(): Promise<number> {
  const node = await nodeOf(HOST_RUNTIME);
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ""}` },
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    // A child stopped by a signal (Ctrl-C reaches both) has no code: leave as a failure.
    child.once("exit", (code) => resolve(code ?? 1));
  });
}
