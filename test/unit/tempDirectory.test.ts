/**
 * The suite's temporary-directory check (test/support/tempDirectory.ts): tests and the processes
 * they start write in a folder of the run's own, and anything left there fails the run, by name,
 * and is removed. Runs Vitest on a fixture (test/fixtures/tempDirectory) as a child process.
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { CHILD_PROCESS_TIMEOUT_MS, runVitestFixture } from "../support/vitestFixture";

const runFixture = (env: Record<string, string>) =>
  runVitestFixture("tempDirectory", { TEST_LOGS: "1", LEAVE: "", ...env });

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
