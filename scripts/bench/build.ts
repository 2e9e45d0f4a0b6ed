/**
 * Builds every function with the deployed esbuild options, the baseline handler with the options
 * any Lambda bundle starts from (the SDK as it comes), the bench's own entries, and the cut ladder:
 * createPet built with the cuts of infra/bundling.ts added one at a time.
 */
import { mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, type Metafile } from "esbuild";
import { BUNDLE_CUTS, lambdaEsbuildOptions, sdkAsItComesEsbuildOptions, withCuts } from "../../infra/bundling";
import { type OperationId, routeList, routes } from "../../lib/routes";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
export const benchDir = `${projectRoot}.bench`;
const bundleDir = `${benchDir}/bundles`;

/** "ladder": a step of the cut ladder, for "what each cut saved" only (not a deployed bundle). */
export type BundleKind = "function" | "baseline" | "observability" | "reference" | "ladder";

export interface Bundle {
  readonly name: string;
  readonly kind: BundleKind;
  readonly file: string;
  readonly bytes: number;
  /** Source files in the bundle (the metafile's inputs of its output). */
  readonly modules: number;
  /** Bytes of the bundle that come from the logging and metrics code. */
  readonly observabilityBytes: number;
  /** The operation whose handler it is: functions and ladder steps. */
  readonly operationId?: OperationId;
  /** Ladder steps only: the names of the cuts of BUNDLE_CUTS it is built with, in their order. */
  readonly cuts?: readonly string[];
}

/**
 * The function the ladder is built from: the one whose first request makes the most DynamoDB
 * calls (key lookup, idempotency record, id counter, insert), so the most SDK code runs cold.
 */
export const LADDER_OPERATION: OperationId = "createPet";

const observabilitySources = /^(lib\/observability\/|lib\/http\/middleware\/requestTelemetry\.ts$)/;

/** Each shim of MODULE_ALIASES (infra/bundling.ts) and the only code allowed to import it. */
const shimImporters: Record<string, RegExp> = {
  // Also when node_modules is a symlink (as in a git worktree), which esbuild reports by its real path.
  "infra/shims/nodeStreamWeb.ts": /(^|\/)node_modules\/@middy\/core\//,
};

interface BundleSpec {
  readonly name: string;
  readonly kind: BundleKind;
  readonly entry: string;
  readonly options: BuildOptions;
  readonly operationId?: OperationId;
  readonly cuts?: readonly string[];
}

async function buildOne({ name, kind, entry, options, operationId, cuts }: BundleSpec): Promise<Bundle> {
  const file = `${bundleDir}/${name}.mjs`;
  // The shared options unchanged; only where to read and write, and the metafile to measure with.
  const result = await build({
    ...options,
    entryPoints: [`${projectRoot}${entry}`],
    outfile: file,
    absWorkingDir: projectRoot,
    metafile: true,
    logLevel: "warning",
  });
  const output = Object.values(result.metafile.outputs)[0] as Metafile["outputs"][string];
  // A package left external must only be reachable through a lazy import: Lambda has no node_modules.
  const eager = output.imports.filter(
    (entry) => entry.external && entry.kind !== "dynamic-import" && !entry.path.startsWith("node:"),
  );
  if (eager.length > 0) {
    throw new Error(`${name}: external packages imported eagerly: ${eager.map((entry) => entry.path).join(", ")}`);
  }
  // A stand-in answers only what its one intended importer asks of the module it replaces.
  for (const [path, input] of Object.entries(result.metafile.inputs)) {
    for (const entry of input.imports) {
      const expected = shimImporters[entry.path];
      if (expected && !expected.test(path)) {
        throw new Error(`${name}: ${path} imports ${entry.path}, which only ${expected} may use (infra/bundling.ts)`);
      }
    }
  }
  const observabilityBytes = Object.entries(output.inputs)
    .filter(([path]) => observabilitySources.test(path))
    .reduce((sum, [, input]) => sum + input.bytesInOutput, 0);
  return {
    name,
    kind,
    file,
    bytes: output.bytes,
    modules: Object.keys(output.inputs).length,
    observabilityBytes,
    ...(operationId ? { operationId } : {}),
    ...(cuts ? { cuts } : {}),
  };
}

/** The name of the ladder step with the first `cutCount` cuts; with all of them, the function's own. */
export function ladderStepName(cutCount: number): string {
  return cutCount >= BUNDLE_CUTS.length ? LADDER_OPERATION : `${LADDER_OPERATION}.cuts${cutCount}`;
}

/**
 * The ladder's steps below the deployed bundle: the first k cuts for k = 0 … BUNDLE_CUTS.length − 1.
 * The last step, every cut, is the deployed function bundle itself (built once, as a "function").
 */
function ladderSpecs(): BundleSpec[] {
  const route = routes[LADDER_OPERATION];
  return BUNDLE_CUTS.map((_, cutCount) => ({
    name: ladderStepName(cutCount),
    kind: "ladder",
    entry: route.handlerFile,
    options: withCuts(cutCount),
    operationId: route.operationId,
    cuts: BUNDLE_CUTS.slice(0, cutCount).map((cut) => cut.name),
  }));
}

/** The ladder in order, from no cut to every cut (the deployed bundle): step k has the first k cuts. */
export function cutLadder(bundles: readonly Bundle[]): Bundle[] {
  return Array.from({ length: BUNDLE_CUTS.length + 1 }, (_, cutCount) => {
    const step = bundles.find((bundle) => bundle.name === ladderStepName(cutCount));
    if (!step) throw new Error(`no bundle ${ladderStepName(cutCount)} (scripts/bench/build.ts)`);
    return step;
  });
}

export async function buildBundles(): Promise<Bundle[]> {
  await rm(bundleDir, { recursive: true, force: true });
  await mkdir(bundleDir, { recursive: true });
  const allCuts = BUNDLE_CUTS.map((cut) => cut.name);
  const specs: BundleSpec[] = [
    ...routeList.map((route) => ({
      name: route.operationId,
      kind: "function" as const,
      entry: route.handlerFile,
      options: lambdaEsbuildOptions,
      operationId: route.operationId as OperationId,
      ...(route.operationId === LADDER_OPERATION ? { cuts: allCuts } : {}),
    })),
    // The same client as the functions' with nothing of ours, bundled as any Lambda would be.
    {
      name: "baseline",
      kind: "baseline",
      entry: "scripts/bench/baselineHandler.ts",
      options: sdkAsItComesEsbuildOptions,
    },
    {
      name: "observability",
      kind: "observability",
      entry: "scripts/bench/observabilityEntry.ts",
      options: lambdaEsbuildOptions,
    },
    { name: "emptyBundle", kind: "reference", entry: "scripts/bench/emptyEntry.ts", options: lambdaEsbuildOptions },
    ...ladderSpecs(),
  ];
  return Promise.all(specs.map(buildOne));
}
