/** Runs Vitest on a fixture project (test/fixtures/<name>/vitest.config.mjs) as a child process. */
import { execFile } from "node:child_process";
import { projectRoot } from "./processes";

/** Child processes on a busy machine can take longer than the unit tests' default 5 s. */
export const CHILD_PROCESS_TIMEOUT_MS = 60_000;

export function runVitestFixture(
  fixture: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  // The outer Vitest's own variables would make the inner one think it runs inside a worker.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  return new Promise((resolve) => {
    execFile(
      `${projectRoot}node_modules/.bin/vitest`,
      ["run", "--config", `test/fixtures/${fixture}/vitest.config.mjs`],
      { cwd: projectRoot, env: { ...inherited, NO_COLOR: "1", ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}
