/**
 * `npx cdk ls` / `cdk synth` / `cdk deploy`: the CDK app says what it is doing before its long
 * silence (policy checks, then bundling), except in CI (infra/app.ts, synthesisNotice).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildApp, committedFeatureFlags, synthesisNotice } from "../../infra/app";
import { stageConfigs } from "../../infra/config";

const outdirs: string[] = [];
afterAll(() => {
  for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true });
});

/** Staging alone, as the CDK CLI builds it when it bundles the stacks `bundlingStacks` selects. */
function stagingApp(bundlingStacks: string[]) {
  const outdir = mkdtempSync(join(tmpdir(), "cdk-notice-"));
  outdirs.push(outdir);
  const { app, stages } = buildApp({
    stages: [stageConfigs.Staging],
    policyValidation: false,
    outdir,
    context: { ...committedFeatureFlags(), "aws:cdk:bundling-stacks": bundlingStacks },
  });
  const [stage] = stages;
  if (!stage) throw new Error("no staging stage");
  // The stage's data and service stacks, and the account stack.
  const stacks = 3;
  const functions = [
    ...Object.values(stage.stack.functions),
    stage.stack.syntheticCheck.checkFunction,
    stage.stack.syntheticCheck.keyFunction,
  ];
  return { app, stacks, functions: functions.length };
}

describe("the CDK app's progress line", { timeout: 120_000 }, () => {
  it("names the stacks and the policy checks, and no bundling, for cdk ls (which bundles nothing)", () => {
    const { app, stacks } = stagingApp([]);

    expect(synthesisNotice(app, {})).toBe(
      `Synthesizing ${stacks} Pet Store stacks: checking them against cdk-nag and Control Tower rules (about half a minute)...`,
    );
  });

  it("names the functions it bundles for cdk synth or deploy of a stage", () => {
    const { app, stacks, functions } = stagingApp(["Staging/PetStore"]);

    expect(synthesisNotice(app, { CI: "false" })).toBe(
      `Synthesizing ${stacks} Pet Store stacks: checking them against cdk-nag and Control Tower rules, and bundling ${functions} functions with esbuild (about half a minute)...`,
    );
  });

  it("says nothing in CI", () => {
    const { app } = stagingApp([]);

    expect(synthesisNotice(app, { CI: "true" })).toBeUndefined();
  });
});
