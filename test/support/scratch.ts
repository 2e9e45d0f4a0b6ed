/**
 * Directories a test file makes under the temporary directory, removed after its tests. Importing
 * this registers the removal in the importing file (each file has its own module graph), which the
 * run's leftover check (test/support/tempDirectory.ts) holds.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

const made: string[] = [];
afterAll(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/**
 * A fresh directory, removed after the file's tests. Give one to every CDK App a test makes as its
 * `outdir` (or CDK_OUTDIR to a process that makes one): an App without it makes `cdk.out*` in the
 * temporary directory and leaves it there.
 */
export function scratchDirectory(prefix = "cdk-test-"): string {
  const directory = mkdtempSync(join(tmpdir(), prefix));
  made.push(directory);
  return directory;
}
