/**
 * The suite's temporary-directory check (test/support/tempDirectory.ts): tests and the processes
 * they start write in a folder of the run's own, and anything left there fails the run, by name,
 * and is removed. Runs Vitest on a fixture (test/fixtures/tempDirectory) as a child process.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../support/processes";

/** Child processes on a busy machine can take longer than the unit tests' default 5 s. */
const CHILD_PROCESS_TIMEOUT_MS = 60_000;

async function runFixture(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  // The outer Vitest's own variables would make the inner one think it runs inside a worker.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST")));
  return new Promise((resolve) => {
    execFile(
      `${projectRoot}node_modules/.bin/vitest`,
      ["run", "--config", "test/fixtures/tempDirectory/vitest.config.mjs"],
      { cwd: projectRoot, env: { ...inherited, NO_COLOR: "1", TEST_LOGS: "1", LEAVE: "", ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}

/** The folder the fixture's run used, which it printed. */
const runFolder = (output: string) => /FIXTURE_TMPDIR=(\S+)/.exec(output)?.[1] ?? "";

describe("the run's temporary directory", { timeout: CHILD_PROCESS_TIMEOUT_MS }, () => {
  it("is a fresh folder inside the usual one, inherited by child processes, removed when nothing is left", async () => {
    const { code, output } = await runFixture({});

    expect(code, output).toBe(0);
    expect(runFolder(output)).toMatch(/\/petstore-test-run-\w+$/);
    expect(runFolder(output).startsWith(tmpdir())).toBe(true);
    expect(existsSync(runFolder(output))).toBe(false);
    expect(output).not.toMatch(/Tests left/);
  });

  it("fails the run when a test leaves something there, naming it, and still removes the folder", async () => {
    const { code, output } = await runFixture({ LEAVE: "forgotten-by-a-test" });

    expect(code).toBe(1);
    expect(output).toMatch(/Tests left 1 entry in the temporary directory .*: forgotten-by-a-test$/m);
    expect(output).toMatch(/Tests +1 passed/);
    expect(existsSync(runFolder(output))).toBe(false);
  });
});
