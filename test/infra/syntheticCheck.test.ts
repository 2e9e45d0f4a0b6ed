/**
 * The scheduled synthetic check of each stage, in the templates `cdk synth` builds: a schedule every
 * 5 minutes, a function that may only read its key's secret, a deploy-time provisioner that may
 * only write the secret and API key records, and an alarm that treats a missing run as a failure
 * once its warm-up (a new stage's first runs) has passed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { type StageConfig, stageConfigs } from "../../infra/config";
import { STACK_OUTPUTS } from "../../infra/deployment";
import { SYNTHETIC_CHECK_INTERVAL, SYNTHETIC_KEY_GENERATION } from "../../infra/stacks/syntheticCheck";
import { itemKeys } from "../../lib/db/table";
import { METRICS_NAMESPACE } from "../../lib/observability/metrics";
import { syntheticMetricNames } from "../../lib/observability/syntheticMetrics";
import { projectRoot } from "../support/processes";
import { synthesizedStages } from "./app";

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string[];
};
interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: unknown;
}

const stages = Object.values(stageConfigs);
let synth: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  // The policy checks are test/infra/nag.test.ts's; these read the templates.
  synth = synthesizedStages({ policyValidation: false });
});

function resources(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

function only(template: Template, type: string, idPart = ""): [string, Resource] {
  const found = Object.entries(resources(template, type)).filter(([id]) => id.includes(idPart));
  expect(found, `${type} ${idPart}`).toHaveLength(1);
  return found[0] as [string, Resource];
}

/** Every statement of the IAM policies attached to a role. */
function statementsOf(template: Template, roleId: string): Statement[] {
  return Object.values(resources(template, "AWS::IAM::Policy"))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((role) => role.Ref === roleId))
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const roleOf = (fn: Resource) => (fn.Properties.Role as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
const actions = (statements: Statement[]) => statements.flatMap((statement) => [statement.Action].flat()).sort();

describe.each(stages)("$id synthetic check", (config: StageConfig) => {
  const template = () => synth.template(config.id);
  const checkFunction = () => only(template(), "AWS::Lambda::Function", "SyntheticCheckCheckFunction");
  const keyFunction = () => only(template(), "AWS::Lambda::Function", "SyntheticCheckKeyFunction");
  const secretId = () => only(template(), "AWS::SecretsManager::Secret")[0];

  it("runs every 5 minutes, invoking the check function once per run, after the key and the API exist", () => {
    const [, schedule] = only(template(), "AWS::Scheduler::Schedule");
    const [checkId] = checkFunction();
    const [keyId] = only(template(), "Custom::SyntheticCheckKey");
    const [apiStageId] = only(template(), "AWS::ApiGateway::Stage");

    expect(schedule.Properties).toMatchObject({
      ScheduleExpression: "rate(5 minutes)",
      State: "ENABLED",
      FlexibleTimeWindow: { Mode: "OFF" },
      Target: { Arn: { "Fn::GetAtt": [checkId, "Arn"] }, RetryPolicy: { MaximumRetryAttempts: 0 } },
    });
    expect(schedule.DependsOn).toEqual(expect.arrayContaining([keyId, apiStageId]));
  });

  it("lets the schedule, and only this account's schedules, invoke the check function and nothing else", () => {
    const [, schedule] = only(template(), "AWS::Scheduler::Schedule");
    const roleId = (schedule.Properties.Target as { RoleArn: { "Fn::GetAtt": [string] } }).RoleArn["Fn::GetAtt"][0];
    const role = resources(template(), "AWS::IAM::Role")[roleId] as Resource;
    const [checkId] = checkFunction();

    expect(role.Properties.AssumeRolePolicyDocument).toMatchObject({
      Statement: [
        {
          Effect: "Allow",
          Principal: { Service: "scheduler.amazonaws.com" },
          Action: "sts:AssumeRole",
          Condition: { StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } },
        },
      ],
    });
    const statements = statementsOf(template(), roleId);
    expect(actions(statements)).toEqual(["lambda:InvokeFunction"]);
    expect(JSON.stringify(statements.map((statement) => statement.Resource))).toContain(`"${checkId}"`);
    expect(
      statements
        .flatMap((statement) => [statement.Resource].flat())
        .every((resource) => JSON.stringify(resource).includes(`"${checkId}"`)),
    ).toBe(true);
  });

  it("checks the stage's public base URL with the key in its secret, on Node 24 arm64 with a log group of its own", () => {
    const [, fn] = checkFunction();
    const outputs = template().toJSON().Outputs as Record<string, { Value: unknown }>;
    const logGroups = resources(template(), "AWS::Logs::LogGroup");
    const logGroupId = (fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref;

    expect(fn.Properties).toMatchObject({
      Runtime: "nodejs24.x",
      Architectures: ["arm64"],
      Environment: {
        Variables: {
          PETSTORE_BASE_URL: outputs[STACK_OUTPUTS.baseUrl]?.Value,
          PETSTORE_API_KEY_SECRET_ARN: { Ref: secretId() },
          PETSTORE_STAGE: config.stage,
        },
      },
    });
    expect(logGroups[logGroupId]?.Properties.RetentionInDays).toBe(config.logRetention);
  });

  it("lets the check function read its key's secret and nothing else: no table access at all", () => {
    const [, fn] = checkFunction();
    const statements = statementsOf(template(), roleOf(fn));

    const secretStatements = statements.filter((statement) =>
      actions([statement]).some((a) => a.startsWith("secretsmanager:")),
    );
    expect(secretStatements).toEqual([
      expect.objectContaining({ Action: "secretsmanager:GetSecretValue", Resource: { Ref: secretId() } }),
    ]);
    expect(actions(statements).filter((action) => !/^(logs|xray):/.test(action))).toEqual([
      "secretsmanager:GetSecretValue",
    ]);
  });

  it("provisions the key at deploy time through a custom resource naming the table, the secret and the stage", () => {
    const [, resource] = only(template(), "Custom::SyntheticCheckKey");
    const [keyFunctionId] = keyFunction();

    expect(resource.Properties).toEqual({
      ServiceToken: { "Fn::GetAtt": [keyFunctionId, "Arn"] },
      ServiceTimeout: "300",
      // The table is in the stage's data stack, found by its fixed name.
      TableName: config.tableName,
      SecretArn: { Ref: secretId() },
      Stage: config.stage,
      Generation: String(SYNTHETIC_KEY_GENERATION),
    });
  });

  it("lets the provisioner write the secret and API key records only: their partition, no reads of other items, no deletes", () => {
    const [, fn] = keyFunction();
    const statements = statementsOf(template(), roleOf(fn));
    const dynamo = statements.filter((statement) => actions([statement]).some((a) => a.startsWith("dynamodb:")));

    expect(dynamo).toEqual([
      {
        Effect: "Allow",
        Action: expect.toSatisfy(
          (granted: string[]) =>
            JSON.stringify([...granted].sort()) ===
            JSON.stringify(["dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]),
        ),
        Resource: expect.toSatisfy((resource: unknown) =>
          JSON.stringify(resource).endsWith(`:table/${config.tableName}"]]}`),
        ),
        Condition: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": [itemKeys.apiKeyPartition] } },
      },
    ]);
    expect(actions(statements).filter((action) => !/^(logs|xray|dynamodb):/.test(action))).toEqual([
      "secretsmanager:PutSecretValue",
    ]);
    expect(statements.find((statement) => statement.Action === "secretsmanager:PutSecretValue")?.Resource).toEqual({
      Ref: secretId(),
    });
  });

  it("gives none of this to the functions that serve requests", () => {
    const routeRoles = Object.entries(resources(template(), "AWS::Lambda::Function"))
      .filter(([id]) => !id.startsWith("SyntheticCheck"))
      .map(([, fn]) => roleOf(fn));

    expect(routeRoles.length).toBeGreaterThan(0);
    for (const roleId of routeRoles) {
      const text = JSON.stringify(statementsOf(template(), roleId));
      expect(text).not.toContain("secretsmanager:");
      expect(text).not.toContain(secretId());
    }
  });

  it("never puts a key in the template: the secret's first value is generated by Secrets Manager, then replaced", () => {
    const [, secret] = only(template(), "AWS::SecretsManager::Secret");
    const text = JSON.stringify(template().toJSON());

    expect(secret.Properties.SecretString).toBeUndefined();
    expect(secret.Properties.GenerateSecretString).toBeDefined();
    expect(text).not.toMatch(/petstore_(local|staging|prod)_[0-9A-Za-z]{43}/);
    expect(JSON.stringify(template().toJSON().Outputs)).not.toContain(secretId());
  });

  it("alarms when the check fails or does not report in 2 of 3 periods, to the stage's alarm topic", () => {
    const [, alarm] = only(template(), "AWS::CloudWatch::Alarm", "SyntheticCheckAlarm");
    const [topicId] = only(template(), "AWS::SNS::Topic", "AlarmTopic");

    expect(alarm.Properties).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      MetricName: syntheticMetricNames.passed,
      Dimensions: [{ Name: "Stage", Value: config.stage }],
      Statistic: "Minimum",
      Period: 300,
      Threshold: 1,
      ComparisonOperator: "LessThanThreshold",
      EvaluationPeriods: config.monitoring.syntheticCheck.outOfPeriods,
      DatapointsToAlarm: config.monitoring.syntheticCheck.failedPeriods,
      TreatMissingData: "breaching",
      AlarmActions: [{ Ref: topicId }],
      OKActions: [{ Ref: topicId }],
    });
    expect(config.monitoring.syntheticCheck).toEqual({ failedPeriods: 2, outOfPeriods: 3 });
  });

  it("does not page on a new stage before the check's first runs: it warms up for one run and a full window", () => {
    const [, alarm] = only(template(), "AWS::CloudWatch::Alarm", "SyntheticCheckAlarm");
    const { outOfPeriods } = config.monitoring.syntheticCheck;
    const intervalMinutes = SYNTHETIC_CHECK_INTERVAL.toMinutes();

    expect(alarm.Properties.WarmUpConfiguration).toEqual({
      WarmUpPeriodDurationInMinutes: intervalMinutes * (outOfPeriods + 1),
      // Evaluation starts as soon as runs fill the window: a working check ends the warm-up early.
      OnlyStartEvaluatingAfterWarmUpPeriodEnds: false,
    });
    // Within the range CloudWatch accepts (1 to 2,880 minutes), and short enough that a check that
    // never runs on a new stage pages within the hour.
    expect(intervalMinutes * (outOfPeriods + 1)).toBeLessThanOrEqual(60);
    // What on-call is told to expect after a first deploy.
    const alarmsDoc = readFileSync(join(projectRoot, "docs/alarms.md"), "utf8");
    expect(alarmsDoc).toContain(`of ${intervalMinutes * (outOfPeriods + 1)} minutes (one run's wait`);
    expect(alarmsDoc).toContain(`after a ${intervalMinutes * (outOfPeriods + 1)}-minute warm-up`);
  });

  it("has no other alarm on the check's metric, so the warm-up is the whole first-deploy story", () => {
    const onCheck = Object.entries(template().findResources("AWS::CloudWatch::Alarm")).filter(([, alarm]) =>
      JSON.stringify(alarm.Properties).includes(syntheticMetricNames.passed),
    );

    expect(onCheck.map(([id]) => id)).toEqual([expect.stringMatching(/^SyntheticCheckAlarm/)]);
  });
});
