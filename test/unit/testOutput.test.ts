/**
 * What `npm test` prints: a test's output only when it fails, unless TEST_LOGS=1. Runs Vitest on a
 * fixture (test/fixtures/testOutput) with the project's own output settings, as a child process.
 */
import { execFile } from "node:child_process";
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
      ["run", "--config", "test/fixtures/testOutput/vitest.config.mjs"],
      { cwd: projectRoot, env: { ...inherited, NO_COLOR: "1", TEST_LOGS: "", ...env } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, output: stdout + stderr }),
    );
  });
}

describe("test output", { timeout: CHILD_PROCESS_TIMEOUT_MS }, () => {
  it("shows a failing test's failure and its own output, and nothing a passing test wrote", async () => {
    const { code, output } = await runFixture({});

    expect(code).toBe(1);
    expect(output).toContain("DELIBERATE_FAILURE");
    expect(output).toContain("FAILING_STDOUT");
    expect(output).toContain("FAILING_CONSOLE");
    expect(output).toMatch(/Tests +1 failed \| 1 passed/);
    expect(output).not.toMatch(/PASSING_(STDOUT|STDERR|CONSOLE)/);
  });

  it("prints everything tests write with TEST_LOGS=1", async () => {
    const { output } = await runFixture({ TEST_LOGS: "1" });

    expect(output).toContain("PASSING_STDOUT");
    expect(output).toContain("PASSING_STDERR");
    expect(output).toContain("PASSING_CONSOLE");
    expect(output).toContain("DELIBERATE_FAILURE");
  });
});
