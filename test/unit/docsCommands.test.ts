/** `npm run lint:openapi` as a developer runs it: the lint result, without notices about the machine. */
import { describe, expect, it } from "vitest";
import { projectRoot, runToEnd } from "../support/processes";

/** Child processes on a busy machine can take longer than the unit tests' default 5 s. */
const CHILD_PROCESS_TIMEOUT_MS = 60_000;

describe("npm run lint:openapi", { timeout: CHILD_PROCESS_TIMEOUT_MS }, () => {
  it("prints Redocly's verdict without its Node end-of-life box", async () => {
    const { code, output } = await runToEnd("scripts/docs/lint.ts", [], { cwd: projectRoot });

    expect(code).toBe(0);
    expect(output).toContain("Your API description is valid");
    expect(output).not.toMatch(/support is ending|end-of-life|╔/);
  });
});
