/**
 * One source of deployment settings: cdk.json as committed on the branch the pipeline deploys. The
 * pipeline's synth and the documented laptop command make the same templates from it; anything
 * that differs from it (flags, variables, an uncommitted or unmerged cdk.json, a checkout behind
 * origin/main) is refused before synthesis; the pipeline's readiness check refuses an unready
 * production; and whatever cdk.json holds must be valid. Settings are the documented example
 * (docs/deploy.md, section 1). Bundling is skipped (the asset hashes are then the same everywhere).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuildAppOptions, buildApp, cliSettingsBaseline } from "../../infra/app";
import { type DeployedStageName, deployedStages } from "../../infra/deployment";
import { readStageSettings, SettingsError } from "../../infra/settings";
import { checkoutContext, gitBaseline } from "../../infra/settingsBaseline";
import { deliveryAccessConfigFromContext } from "../../infra/stacks/deliveryAccessStack";
import { readiness } from "../../scripts/readiness";
import { documentedSettings } from "../support/documentedSettings";
import { gitIn } from "../support/git";
import { projectRoot } from "../support/processes";
import { scratchDirectory } from "../support/scratch";
import { featureFlags } from "./app";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const noBundling = { "aws:cdk:bundling-stacks": [] };
const stageNames = Object.keys(deployedStages) as DeployedStageName[];

const documented = documentedSettings("docs/deploy.md");
/** cdk.json as a team commits it: the flags and the documented settings. */
const committed = { ...featureFlags, ...documented };
const onMain = { label: "cdk.json on origin/main (commit 0123456789ab)", context: committed };

/** `-c key=value` flags of a shell command line. */
function contextFlags(command: string): Record<string, string> {
  return Object.fromEntries(
    [...command.matchAll(/(?:-c|--context)\s+"?([^"\s=]+)=([^"\s]*)"?/g)].map((match) => [match[1], match[2]]),
  );
}

/** The pipeline's one synthesis on a push (rollback alarms watched), wherever the workflows hold it. */
function pipelineSynthFlags(): Record<string, string> {
  const lines = ["deploy.yml", "deploy-stage.yml", "ci.yml"]
    .flatMap((file) => read(`.github/workflows/${file}`).split("\n"))
    .filter((line) => /^\s+npm run synth\b/.test(line) && line.includes("pipeline=true"));
  const onPush = lines.filter((line) => !line.includes("ignoreRollbackAlarms"));
  expect(onPush).toHaveLength(1);
  const script = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.synth ?? "";
  return { ...contextFlags(script), ...contextFlags(onPush[0] as string) };
}

/** The README's documented laptop deploy of production. */
function laptopDeployFlags(): Record<string, string> {
  const line = read("README.md")
    .split("\n")
    .find((candidate) => candidate.startsWith("npx cdk deploy 'Production/*'"));
  if (!line) throw new Error("the README documents no production deploy");
  return contextFlags(line);
}

function productionOf(
  context: Record<string, unknown>,
  environment: Record<string, string> = {},
  baseline: BuildAppOptions["settingsBaseline"] = onMain,
) {
  const { stages } = buildApp({
    context: { ...noBundling, ...context },
    settingsBaseline: baseline,
    environment,
    outdir: scratchDirectory(),
  });
  const production = stages.find((stage) => stage.node.id === "Production");
  if (!production) throw new Error("no production stage");
  return production;
}

describe("one source of deployment settings", () => {
  it("the pipeline's synth and the documented laptop deploy give the same production template", () => {
    // The pipeline's baseline is the commit it checked out: the committed settings themselves.
    const pipeline = productionOf({ ...committed, ...pipelineSynthFlags() });
    const laptop = productionOf({ ...committed, ...laptopDeployFlags() });

    const template = Template.fromStack(pipeline.stack);
    expect(template.toJSON()).toEqual(Template.fromStack(laptop.stack).toJSON());
    // Both carry the committed settings: pinned, with the alarm e-mail subscribed.
    expect(`${pipeline.stack.account}/${pipeline.stack.region}`).toBe("222222222222/eu-west-1");
    template.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: "ops@example.com" });
  });

  it("leaves the pipeline's production with no synth warning, so its --strict deploy fails only on a real one", () => {
    const production = productionOf({ ...committed, ...pipelineSynthFlags() });

    const warnings = production
      .synth()
      .stacks.flatMap((stack) => stack.messages)
      .filter((message) => message.level === "warning");
    expect(warnings).toEqual([]);
  });

  it("with nothing configured, npm run synth (every stack) carries production's no-destination warning, as docs/alarms.md says", () => {
    const production = productionOf(featureFlags, {}, { label: "cdk.json", context: featureFlags });
    const script = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.synth;

    const warnings = production
      .synth()
      .stacks.flatMap((stack) => stack.messages)
      .filter((message) => message.level === "warning")
      .map((message) => String(message.entry.data));
    expect(warnings).toEqual([expect.stringMatching(/^The prod stage has no alarm destination/)]);
    // npm run synth selects every stack, so the CLI prints it; the docs must not promise silence.
    expect(script).toContain("'**'");
    const alarms = read("docs/alarms.md");
    expect(alarms).not.toMatch(/npm run synth`?,? [^.]*stays quiet/);
    expect(alarms).toContain("`npm run synth` prints it (and still exits 0)");
  });

  it.each([
    [
      "an environment variable",
      {},
      { PETSTORE_PROD_ACCOUNT: "333333333333" },
      "prod:account (from PETSTORE_PROD_ACCOUNT)",
    ],
    ["a -c flag", { "prod:alarmEmails": "someone@example.com" }, {}, "prod:alarmEmails (from -c or cdk.context.json)"],
    [
      "a setting the branch lacks",
      { "staging:alarmTopicArn": "arn:aws:sns:eu-west-1:111111111111:chat" },
      {},
      "staging:alarmTopicArn (from -c or cdk.context.json)",
    ],
  ])(
    "refuses settings from %s that differ from the branch the pipeline deploys, naming them but not their values",
    (_, flags, environment, named) => {
      const attempt = () => productionOf({ ...committed, ...flags }, environment);

      expect(attempt).toThrow(SettingsError);
      expect(attempt).toThrow(
        `Deployment settings differ from cdk.json on origin/main (commit 0123456789ab), what the pipeline deploys: ${named}.`,
      );
      expect(attempt).toThrow(/-c allowSettingsDrift=true/);
      for (const value of [...Object.values(flags), ...Object.values(environment)]) {
        expect(attempt).not.toThrow(value);
      }
    },
  );

  it("accepts the same values the branch has, and a deliberate drift with allowSettingsDrift", () => {
    expect(() => productionOf(committed, { PETSTORE_PROD_ACCOUNT: "222222222222" })).not.toThrow();
    const drifted = productionOf({ ...committed, allowSettingsDrift: "true" }, { PETSTORE_PROD_REGION: "us-east-2" });
    // The context wins over the environment (infra/settings.ts): the committed region stays.
    expect(drifted.stack.region).toBe("eu-west-1");
    const fromFlag = productionOf({ ...committed, "prod:account": "333333333333", allowSettingsDrift: "true" });
    expect(fromFlag.stack.account).toBe("333333333333");
  });

  it("keeps a committed per-deploy setting out of the comparison but warns about it, for every stage that commits it", () => {
    const withIgnore = { ...committed, "prod:ignoreRollbackAlarms": true };

    expect(() => productionOf(withIgnore, {}, { label: "cdk.json", context: withIgnore })).not.toThrow();
    const { warnings, problems } = readiness("prod", withIgnore);
    expect(problems).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^cdk\.json commits prod:ignoreRollbackAlarms: every deploy of prod shifts traffic without watching its rollback alarms\./,
      ),
    ]);
    expect(readiness("staging", committed).warnings).toEqual([]);
  });
});

describe("the pipeline's readiness check (npm run readiness)", () => {
  it("lets the pipeline deploy production only when it is pinned and has an alarm destination", () => {
    expect(readiness("prod", featureFlags).problems).toEqual([
      `The pipeline does not deploy prod without prod:account, prod:region, prod:alarmEmails or prod:alarmTopicArn in cdk.json's "context" (docs/deploy.md, section 1).`,
    ]);
    const { "prod:alarmEmails": _, ...withoutDestination } = committed;
    expect(readiness("prod", withoutDestination).problems).toEqual([
      expect.stringMatching(/without prod:alarmEmails or prod:alarmTopicArn in/),
    ]);
    const withPagerOnly = { ...withoutDestination, "prod:alarmTopicArn": "arn:aws:sns:eu-west-1:222222222222:pager" };
    expect(readiness("prod", withPagerOnly)).toMatchObject({
      problems: [],
      summary: "readiness: the pipeline may deploy prod: pinned to 222222222222/eu-west-1, 1 alarm destination",
    });
    expect(readiness("staging", featureFlags).problems).toEqual([]);
  });

  it("reports a malformed committed setting as its one line, without the value", () => {
    const result = readiness("prod", { ...committed, "prod:account": "22222222222x" });

    expect(result.problems).toEqual([
      "Invalid deployment setting context prod:account: must be one 12-digit AWS account id.",
    ]);
  });
});

describe("whatever cdk.json holds", () => {
  it("is valid: every key is a feature flag or a known setting, and the app builds from it", () => {
    const context = checkoutContext();
    const known = new Set([...Object.keys(featureFlags), "githubRepository", "@aws-cdk/core:bootstrapQualifier"]);
    const unknown = Object.keys(context).filter(
      (key) => !known.has(key) && !stageNames.some((stage) => key.startsWith(`${stage}:`)),
    );

    expect(unknown).toEqual([]);
    for (const stage of stageNames) expect(() => readStageSettings(stage, (key) => context[key], {})).not.toThrow();
    expect(() => deliveryAccessConfigFromContext((key) => context[key])).not.toThrow();
    expect(() =>
      buildApp({
        context: { ...noBundling, ...context },
        settingsBaseline: { label: "cdk.json", context },
        outdir: scratchDirectory(),
      }),
    ).not.toThrow();
  });
});

describe("committed means committed on the branch the pipeline deploys (a git checkout)", () => {
  let repository: string;
  const git = gitIn(() => repository);
  const writeCdkJson = (context: Record<string, unknown>) =>
    writeFileSync(join(repository, "cdk.json"), JSON.stringify({ app: "x", context }, null, 2));
  const commit = (message: string) => {
    git("add", "cdk.json");
    git("commit", "-q", "-m", message);
  };
  /** The refusal for this checkout, or undefined when it may deploy. */
  const refusal = (context: Record<string, unknown> = checkoutContext(repository)) => {
    try {
      buildApp({
        context: { ...noBundling, ...context },
        settingsBaseline: gitBaseline("origin/main", repository),
        outdir: scratchDirectory(),
      });
      return undefined;
    } catch (error) {
      if (error instanceof SettingsError) return error.message;
      throw error;
    }
  };

  beforeAll(() => {
    repository = mkdtempSync(join(tmpdir(), "settings-ref-"));
    git("init", "-q", "-b", "main");
    writeCdkJson(committed);
    commit("settings");
    // What `git fetch` leaves after the settings were merged: origin/main at this commit.
    git("update-ref", "refs/remotes/origin/main", "HEAD");
  });
  afterAll(() => rmSync(repository, { recursive: true, force: true }));

  it("lets an up-to-date checkout deploy", () => {
    expect(refusal()).toBeUndefined();
  });

  it("refuses an uncommitted change to cdk.json, naming it as such", () => {
    writeCdkJson({ ...committed, "prod:alarmEmails": "other@example.com" });
    try {
      expect(refusal()).toMatch(
        /^Deployment settings differ from cdk\.json on origin\/main \(commit [0-9a-f]{12}\), what the pipeline deploys: prod:alarmEmails \(uncommitted change to cdk\.json\)\./,
      );
    } finally {
      git("checkout", "-q", "--", "cdk.json");
    }
  });

  it("refuses a change committed on a branch that is not merged, and a checkout behind origin/main", () => {
    git("checkout", "-q", "-b", "feature");
    writeCdkJson({ ...committed, "staging:alarmEmails": "qa@example.com" });
    commit("unmerged");
    expect(refusal()).toContain("staging:alarmEmails (committed on this branch, not merged into origin/main)");

    // main moves on with a new setting; this checkout (main's old commit) has not pulled it.
    git("checkout", "-q", "main");
    git("merge", "-q", "--ff-only", "feature");
    git("update-ref", "refs/remotes/origin/main", "HEAD");
    git("reset", "-q", "--hard", "HEAD~1");
    expect(refusal()).toContain("staging:alarmEmails (this checkout is behind origin/main: pull it)");
    git("reset", "-q", "--hard", "origin/main");
    expect(refusal()).toBeUndefined();
  });

  it("names each source of a difference the way docs/deploy.md's table and example show", () => {
    const deploy = read("docs/deploy.md");
    const example = deploy.split("\n").find((line) => line.startsWith("Deployment settings differ from"));
    let refusalText = "";
    try {
      productionOf(committed, { PETSTORE_PROD_ACCOUNT: "333333333333" });
    } catch (error) {
      refusalText = (error as Error).message;
    }

    expect(example?.replace(/commit [0-9a-f]{12}/, "commit <sha>")).toBe(
      refusalText.replace(/commit [0-9a-f]{12}/, "commit <sha>"),
    );
    for (const label of [
      "(from -c or cdk.context.json)",
      "(from PETSTORE_PROD_ACCOUNT)",
      "(uncommitted change to cdk.json)",
      "(committed on this branch, not merged into origin/main)",
      "(this checkout is behind origin/main: pull it)",
    ]) {
      expect(deploy).toContain(`prod:account ${label}`);
    }
  });

  it("stops with one line when the branch cannot be read, naming the ways on", () => {
    const attempt = () => gitBaseline("origin/no-such-branch", repository);

    expect(attempt).toThrow(
      new SettingsError(
        "Cannot read cdk.json at origin/no-such-branch (no such ref here): a deploy's settings are compared with the branch the pipeline deploys. Run git fetch, name the ref with -c settingsRef=<ref>, or pass -c allowSettingsDrift=true for a deliberate one-off.",
      ),
    );
    expect(() => gitBaseline("origin/main", tmpdir())).toThrow(/\(this is not a git checkout\)/);
  });

  it("compares the pipeline's own synthesis with the commit it checked out, not with a branch", () => {
    const baseline = cliSettingsBaseline((key) => (key === "pipeline" ? "true" : undefined));

    expect(baseline.label).toBe("cdk.json of the commit being deployed");
    expect(baseline.context).toEqual(checkoutContext(projectRoot));
  });
});
