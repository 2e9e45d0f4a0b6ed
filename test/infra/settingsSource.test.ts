/**
 * One source of deployment settings: the committed cdk.json, read the same way by the pipeline's
 * synth (.github/workflows/deploy-stage.yml) and by the documented laptop command. Anything that
 * differs from it is refused before synthesis, and the pipeline refuses an unready production.
 * Settings are the documented example (docs/deploy.md, section 1), taken as committed. Bundling is
 * skipped (the templates' asset hashes are then the same for every synthesis).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app";
import { SettingsError } from "../../infra/settings";
import { projectRoot } from "../support/processes";
import { cdkJsonContext } from "./app";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
const noBundling = { "aws:cdk:bundling-stacks": [] };

/** The settings docs/deploy.md shows for cdk.json's "context", as if committed. */
const documentedSettings = (() => {
  const block = /```jsonc\n\/\/ cdk\.json, "context"\n([\s\S]*?)```/.exec(read("docs/deploy.md"))?.[1];
  if (!block) throw new Error("docs/deploy.md shows no cdk.json context example");
  return JSON.parse(`{${block}}`) as Record<string, string>;
})();
const committed = { ...cdkJsonContext, ...documentedSettings };

/** `-c key=value` flags of a shell command line, with shell variables given values. */
function contextFlags(command: string, variables: Record<string, string>): Record<string, string> {
  const expanded = command.replace(/\$(\w+)/g, (_, name: string) => {
    const value = variables[name];
    if (value === undefined) throw new Error(`no value for $${name} in ${command}`);
    return value;
  });
  return Object.fromEntries(
    [...expanded.matchAll(/(?:-c|--context)\s+"?([^"\s=]+)=([^"\s]*)"?/g)].map((match) => [match[1], match[2]]),
  );
}

/** The pipeline's synth command on a push (rollback alarms watched), for a stage. */
function pipelineSynthFlags(stage: string): Record<string, string> {
  const workflow = read(".github/workflows/deploy-stage.yml");
  const synthLines = workflow.split("\n").filter((line) => /^\s+npm run synth\b/.test(line));
  const onPush = synthLines.filter((line) => !line.includes("ignoreRollbackAlarms"));
  expect(onPush).toHaveLength(1);
  const script = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts.synth ?? "";
  return { ...contextFlags(script, {}), ...contextFlags(onPush[0] as string, { STAGE: stage }) };
}

/** The README's documented laptop deploy of production. */
function laptopDeployFlags(): Record<string, string> {
  const line = read("README.md")
    .split("\n")
    .find((candidate) => candidate.startsWith("npx cdk deploy 'Production/*'"));
  if (!line) throw new Error("the README documents no production deploy");
  return contextFlags(line, {});
}

function productionOf(
  context: Record<string, unknown>,
  environment: Record<string, string> = {},
  committedContext: Record<string, unknown> = committed,
) {
  const { stages } = buildApp({ context: { ...noBundling, ...context }, committedContext, environment });
  const production = stages.find((stage) => stage.node.id === "Production");
  if (!production) throw new Error("no production stage");
  return production;
}

describe("one source of deployment settings", () => {
  it("the pipeline's synth and the documented laptop deploy give the same production template", () => {
    const pipeline = productionOf({ ...committed, ...pipelineSynthFlags("prod") });
    const laptop = productionOf({ ...committed, ...laptopDeployFlags() });

    const template = Template.fromStack(pipeline.stack);
    expect(template.toJSON()).toEqual(Template.fromStack(laptop.stack).toJSON());
    // Both carry the committed settings: pinned, with the alarm e-mail subscribed.
    expect(`${pipeline.stack.account}/${pipeline.stack.region}`).toBe("222222222222/eu-west-1");
    template.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: "ops@example.com" });
  });

  it("leaves the pipeline's production with no synth warning, so its --strict deploy fails only on a real one", () => {
    const production = productionOf({ ...committed, ...pipelineSynthFlags("prod") });

    const warnings = production
      .synth()
      .stacks.flatMap((stack) => stack.messages)
      .filter((message) => message.level === "warning");
    expect(warnings).toEqual([]);
  });

  it("with nothing committed, npm run synth (every stack) carries production's no-destination warning, as docs/alarms.md says", () => {
    const production = productionOf(cdkJsonContext, {}, cdkJsonContext);
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
      "a setting the committed file lacks",
      { "staging:alarmTopicArn": "arn:aws:sns:eu-west-1:111111111111:chat" },
      {},
      "staging:alarmTopicArn (from -c or cdk.context.json)",
    ],
  ])(
    "refuses settings from %s that differ from the committed ones, naming them but not their values",
    (_, flags, environment, named) => {
      const attempt = () => productionOf({ ...committed, ...flags }, environment);

      expect(attempt).toThrow(SettingsError);
      expect(attempt).toThrow(`Deployment settings differ from the committed ones in cdk.json: ${named}.`);
      expect(attempt).toThrow(/-c allowSettingsDrift=true/);
      for (const value of [...Object.values(flags), ...Object.values(environment)]) {
        expect(attempt).not.toThrow(value);
      }
    },
  );

  it("accepts the same values the committed file has, and a deliberate drift with allowSettingsDrift", () => {
    expect(() => productionOf(committed, { PETSTORE_PROD_ACCOUNT: "222222222222" })).not.toThrow();
    const drifted = productionOf({ ...committed, allowSettingsDrift: "true" }, { PETSTORE_PROD_REGION: "us-east-2" });
    // The context wins over the environment (infra/settings.ts): the committed region stays.
    expect(drifted.stack.region).toBe("eu-west-1");
    const fromFlag = productionOf({ ...committed, "prod:account": "333333333333", allowSettingsDrift: "true" });
    expect(fromFlag.stack.account).toBe("333333333333");
  });

  it("lets the pipeline deploy production only when it is pinned and has an alarm destination", () => {
    // Each time the committed settings are the context itself: no drift, only readiness.
    const pipeline = (settings: Record<string, unknown>, stage: string) => () =>
      productionOf({ ...settings, pipelineStage: stage }, {}, settings);
    expect(pipeline(cdkJsonContext, "prod")).toThrow(
      new SettingsError(
        `The pipeline does not deploy prod without prod:account, prod:region, prod:alarmEmails or prod:alarmTopicArn in cdk.json's "context" (docs/deploy.md, section 1).`,
      ),
    );
    const { "prod:alarmEmails": _, ...withoutDestination } = committed;
    expect(pipeline(withoutDestination, "prod")).toThrow(/without prod:alarmEmails or prod:alarmTopicArn in/);
    const withPagerOnly = { ...withoutDestination, "prod:alarmTopicArn": "arn:aws:sns:eu-west-1:222222222222:pager" };
    expect(pipeline(withPagerOnly, "prod")).not.toThrow();
    expect(pipeline(cdkJsonContext, "staging")).not.toThrow();
    expect(pipeline(cdkJsonContext, "production")).toThrow(/pipelineStage must be one of staging, prod/);
  });

  it("cdk synth in the pipeline stops with one line, before synthesis, when production is not ready", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", "infra/app.ts"], {
      cwd: projectRoot,
      encoding: "utf8",
      env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJsonContext, pipelineStage: "prod" }) },
    });

    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      `The pipeline does not deploy prod without prod:account, prod:region, prod:alarmEmails or prod:alarmTopicArn in cdk.json's "context" (docs/deploy.md, section 1).`,
    ]);
  });

  it("keeps the committed cdk.json free of settings, so npm run synth works offline with nothing configured", () => {
    expect(Object.keys(cdkJsonContext).filter((key) => /^(staging|prod):/.test(key))).toEqual([]);
  });
});
