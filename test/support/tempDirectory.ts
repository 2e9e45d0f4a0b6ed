/**
 * The run's temporary directory (vitest.config.ts's root globalSetup, run once per `vitest run`):
 * TMPDIR points at a fresh folder before any test worker starts, so os.tmpdir() in every worker and
 * in every process a test starts (they inherit the environment) lands there. At the end, anything a
 * test left in it fails the run, listed by name; the folder is removed either way.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/**
 * Caches tools keep under the temporary directory, shared between runs: linked into the run's folder
 * to where they always were, so that no run starts cold and none counts them as left behind. tsx
 * compiles into `tsx-<uid>` (its cache is not configurable); tsc enables Node's compile cache, which
 * is `node-compile-cache` unless NODE_COMPILE_CACHE says otherwise:
 * https://nodejs.org/api/module.html#moduleenablecompilecachecachedir
 */
const toolCaches = [`tsx-${process.geteuid?.() ?? userInfo().username}`, "node-compile-cache"];

/** One line naming what tests left in `directory` (the tools' cache links aside), or undefined. */
function leftoverMessage(directory: string): string | undefined {
  const left = readdirSync(directory)
    .filter((name) => !(toolCaches.includes(name) && lstatSync(join(directory, name)).isSymbolicLink()))
    .sort();
  if (left.length === 0) return undefined;
  const shown = left.slice(0, 20).join(", ");
  const more = left.length > 20 ? ` and ${left.length - 20} more` : "";
  return `Tests left ${left.length} ${left.length === 1 ? "entry" : "entries"} in the temporary directory (each test removes what it writes there): ${shown}${more}`;
}

export default function setup() {
  const previous = process.env.TMPDIR;
  const usual = tmpdir();
  const directory = mkdtempSync(join(usual, "petstore-test-run-"));
  for (const cache of toolCaches) {
    mkdirSync(join(usual, cache), { recursive: true });
    symlinkSync(join(usual, cache), join(directory, cache));
  }
  process.env.TMPDIR = directory;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    const message = leftoverMessage(directory);
    // Removes the links, not the caches they point at.
    rmSync(directory, { recursive: true, force: true });
    if (message) {
      // Vitest 4.1 logs an error thrown here ("error during close") but still exits 0; the exit
      // code is set here until the fix is released:
      // https://github.com/vitest-dev/vitest/pull/10794
      process.exitCode = 1;
      throw new Error(message);
    }
  };
}
