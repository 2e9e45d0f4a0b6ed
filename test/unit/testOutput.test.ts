/**
 * What `npm test` prints: a test's output only when it fails, unless TEST_LOGS=1. Runs Vitest on a
 * fixture (test/fixtures/testOutput) with the project's own output settings, as a child process.
 */
import { describe, expect, it } from "vitest";
import { CHILD_PROCESS_TIMEOUT_MS, runVitestFixture } from "../support/vitestFixture";

const runFixture = (env: Record<string, string>) => runVitestFixture("testOutput", { TEST_LOGS: "", ...env });

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
