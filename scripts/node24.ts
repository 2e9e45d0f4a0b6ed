/**
 * Node.js 24, the major version of Lambda's nodejs24.x runtime that the functions run on, for the
 * bench (npm run bench) and for running anything on what production runs, beside this machine's
 * Node. The version is pinned, and installed from the npm registry, by ./nodeVersions.ts.
 *
 * `npx tsx scripts/node24.ts` installs it if needed and prints the directory that holds `node`;
 * the bench imports ensureNode24.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureNode, NODE_VERSIONS } from "./nodeVersions";

export const NODE24_VERSION = NODE_VERSIONS.lambda;

/** Installs Node NODE24_VERSION unless it is already cached; answers the path of its `node` binary. */
export function ensureNode24(): Promise<string> {
  return ensureNode(NODE24_VERSION);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureNode24().then(
    (binary) => console.log(dirname(binary)),
    (error: unknown) => {
      console.error(`node24: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
