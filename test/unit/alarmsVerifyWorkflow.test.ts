/**
 * The deploy workflow proves alarm delivery after each deploy of a stage (docs/alarms.md): a step of
 * deploy-stage.yml runs `npm run alarms:verify` for the stage, with the deploy job's own session,
 * after the deploy and its smoke checks, and a failure fails the job. Read from the YAML as
 * test/unit/workflows.test.ts reads it (test/support/workflows.ts).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../support/processes";
import { jobsOf, type Step } from "../support/workflows";

const job = jobsOf("deploy-stage.yml")[0];
const steps = job?.steps ?? [];

const indexOf = (test: (step: Step) => boolean, what: string): number => {
  const index = steps.findIndex(test);
  if (index < 0) throw new Error(`deploy-stage.yml has no step that ${what}`);
  return index;
};
const verifiesAlarms = (step: Step) => step.run.includes("npm run alarms:verify");

describe("deploy-stage.yml proves alarm delivery after each deploy", () => {
  it("runs npm run alarms:verify once, for the stage the workflow deploys", () => {
    const verifying = steps.filter(verifiesAlarms);

    expect(job?.name).toBe("deploy");
    expect(verifying).toHaveLength(1);
    expect(verifying[0]?.run.split("\n")[0]).toBe('npm run alarms:verify -- --stage "$STAGE"');
    expect(verifying[0]?.env).toEqual({ STAGE: `\${{ steps.stage.outputs.stage }}` });
  });

  it("runs it after the stage is deployed and smoke-tested, so a stage that serves no one fails first", () => {
    const deploy = indexOf((step) => /\bnpx cdk deploy\b.*"\$SELECTOR"/.test(step.run), "deploys the stage");
    const smoke = indexOf((step) => step.run.includes("npm run smoke"), "smoke-tests the stage");

    expect(indexOf(verifiesAlarms, "verifies alarms")).toBeGreaterThan(deploy);
    expect(indexOf(verifiesAlarms, "verifies alarms")).toBeGreaterThan(smoke);
  });

  it("uses the deploy job's session of the deploy role, whose policy allows it on the test alarm only", () => {
    const credentials = steps
      .map((step, index) => ({ step, index }))
      .filter(({ step }) => step.uses?.startsWith("aws-actions/configure-aws-credentials@"));

    expect(credentials).toHaveLength(1);
    expect(credentials[0]?.index).toBeLessThan(indexOf(verifiesAlarms, "verifies alarms"));
    expect(job?.text).toContain(`role-to-assume: \${{ vars.AWS_DEPLOY_ROLE_ARN }}`);
  });

  it("fails the job when delivery fails: the step is neither conditional nor allowed to fail", () => {
    const step = steps[indexOf(verifiesAlarms, "verifies alarms")] as Step;

    expect(step.keys).not.toContain("if");
    expect(step.keys).not.toContain("continue-on-error");
    expect(step.run).not.toMatch(/\|\|\s*true|; *true$/m);
  });

  it("calls the package script that runs scripts/alarmsVerify/main.ts", () => {
    const { scripts } = JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };

    expect(scripts["alarms:verify"]).toBe("node scripts/requireNode.mjs && tsx scripts/alarmsVerify/main.ts");
  });
});
