/**
 * The bundles the cold section measures (./cold.ts): each function exactly as deployed, and the bare handler
 * (./bareHandler.ts) twice: with those same options and cuts (the floor) and as CDK's NodejsFunction bundles a handler
 * by default (the peer).
 */
import { mkdir, rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type BuildOptions, build, type Metafile } from "esbuild";
import { LAMBDA_NODE_TARGET, lambdaEsbuildOptions } from "../../infra/bundling";
import { type OperationId, routeList } from "../../lib/routes";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
export const benchDir = `${projectRoot}.bench`;
export const bundleDir = `${benchDir}/bundles`;
const BARE_ENTRY = "scripts/bench/bareHandler.ts";

/**
 * What NodejsFunction gives esbuild for nodejs24.x by default (aws-lambda-nodejs/lib/bundling.js, buildEsbuildArgs):
 * `--bundle --target=node24 --platform=node --outfile=index.js` (CommonJS, no --minify), the runtime's `@aws-sdk/*`
 * left out, and `@smithy/*` too under "@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages", which cdk.json sets.
 */
export const cdkDefaultEsbuildOptions = {
  bundle: true,
  platform: "node",
  target: LAMBDA_NODE_TARGET,
  format: "cjs",
  external: ["@aws-sdk/*", "@smithy/*"],
} as const satisfies BuildOptions;

/** ours: a deployed function; floor: the bare handler built as ours; peer: built as CDK's default. */
export const SIDES = ["ours", "floor", "peer"] as const;
export type Side = (typeof SIDES)[number];

/** Where a side's bundle is, under bundleDir: the peer as CDK names it. */
export const bundleFile = (side: Side, operationId: OperationId) =>
  ({ ours: `${operationId}.mjs`, floor: "floor.mjs", peer: "peer/index.js" })[side];

/** `modules`: source files in the bundle; `operationId`: a function's (the bare handler answers all). */
export type Bundle = { side: Side; operationId?: OperationId; file: string; bytes: number; modules: number };

/** Each shim of MODULE_ALIASES (infra/bundling.ts) and the only code allowed to import it. */
const shimImporters: Record<string, RegExp> = {
  // Also when node_modules is a symlink (as in a git worktree), which esbuild reports by its real path.
  "infra/shims/nodeStreamWeb.ts": /(^|\/)node_modules\/@middy\/core\//,
};

async function buildOne(side: Side, entry: string, operationId: OperationId): Promise<Bundle> {
  const options = side === "peer" ? cdkDefaultEsbuildOptions : lambdaEsbuildOptions;
  const outfile = bundleFile(side, operationId);
  const file = `${bundleDir}/${outfile}`;
  const where = { entryPoints: [`${projectRoot}${entry}`], outfile: file, absWorkingDir: projectRoot };
  const result = await build({ ...options, ...where, metafile: true, logLevel: "warning" });
  const output = Object.values(result.metafile.outputs)[0] as Metafile["outputs"][string];
  if (side !== "peer") {
    // A package left external must only be reachable through a lazy import: Lambda has no node_modules.
    const eager = output.imports.filter((i) => i.external && i.kind !== "dynamic-import" && !/^node:/.test(i.path));
    if (eager.length > 0)
      throw new Error(`${outfile}: external packages imported eagerly: ${eager.map((i) => i.path)}`);
    // A stand-in answers only what its one intended importer asks of the module it replaces.
    for (const [path, input] of Object.entries(result.metafile.inputs)) {
      for (const { path: imported } of input.imports) {
        const allowed = shimImporters[imported];
        if (allowed && !allowed.test(path))
          throw new Error(`${outfile}: ${path} imports ${imported} (infra/bundling.ts)`);
      }
    }
  }
  const modules = Object.keys(output.inputs).length;
  return { side, file, bytes: output.bytes, modules, ...(side === "ours" && { operationId }) };
}

export async function buildBundles(): Promise<Bundle[]> {
  await rm(bundleDir, { recursive: true, force: true });
  await mkdir(`${bundleDir}/peer`, { recursive: true });
  const functions = routeList.map((r) => buildOne("ours", r.handlerFile, r.operationId as OperationId));
  // The bare handler answers every operation: built once per side.
  return Promise.all([
    ...functions,
    ...(["floor", "peer"] as const).map((side) => buildOne(side, BARE_ENTRY, "listPets")),
  ]);
}
