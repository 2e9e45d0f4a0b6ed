/** Builds every function, and the bench's own entries, with the deployed esbuild options. */
import { mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { build, type Metafile } from "esbuild";
import { lambdaEsbuildOptions } from "../../infra/bundling";
import { routeList } from "../../lib/routes";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
export const benchDir = `${projectRoot}.bench`;
const bundleDir = `${benchDir}/bundles`;

export type BundleKind = "function" | "baseline" | "observability" | "reference";

export interface Bundle {
  readonly name: string;
  readonly kind: BundleKind;
  readonly file: string;
  readonly bytes: number;
  /** Bytes of the bundle that come from the logging and metrics code. */
  readonly observabilityBytes: number;
}

const observabilitySources = /^(lib\/observability\/|lib\/http\/middleware\/requestTelemetry\.ts$)/;

/** Each shim of MODULE_ALIASES (infra/bundling.ts) and the only code allowed to import it. */
const shimImporters: Record<string, RegExp> = {
  // Also when node_modules is a symlink (as in a git worktree), which esbuild reports by its real path.
  "infra/shims/nodeStreamWeb.ts": /(^|\/)node_modules\/@middy\/core\//,
};

async function buildOne(name: string, kind: BundleKind, entry: string): Promise<Bundle> {
  const file = `${bundleDir}/${name}.mjs`;
  // The shared options unchanged; only where to read and write, and the metafile to measure with.
  const result = await build({
    ...lambdaEsbuildOptions,
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
  return { name, kind, file, bytes: output.bytes, observabilityBytes };
}

export async function buildBundles(): Promise<Bundle[]> {
  await rm(bundleDir, { recursive: true, force: true });
  await mkdir(bundleDir, { recursive: true });
  return Promise.all([
    ...routeList.map((route) => buildOne(route.operationId, "function", route.handlerFile)),
    buildOne("baseline", "baseline", "scripts/bench/baselineHandler.ts"),
    buildOne("observability", "observability", "scripts/bench/observabilityEntry.ts"),
    buildOne("emptyBundle", "reference", "scripts/bench/emptyEntry.ts"),
  ]);
}
