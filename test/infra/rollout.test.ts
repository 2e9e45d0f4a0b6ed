/**
 * Gradual rollout with automatic rollback (infra/stacks/rollout.ts), in the templates `cdk synth`
 * builds with no configuration: each API function behind its `live` alias, the API invoking the
 * aliases, one CodeDeploy deployment group per function (canary in production, all at once in
 * staging) watching rollback alarms that can fire during a canary at low traffic. Synthesised once
 * for the file, without bundling (no assertion here needs the functions' code).
 */
import type { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { type StageConfig, stageConfigs } from "../../infra/config";
import { LIVE_ALIAS } from "../../infra/stacks/rollout";
import { METRICS_NAMESPACE, metricNames } from "../../lib/observability/metrics";
import { routeList } from "../../lib/routes";
import { synthesizedStages } from "./app";

type Resource = { Type: string; Properties: Record<string, unknown>; UpdatePolicy?: Record<string, unknown> };
type Resources = Record<string, Resource>;
interface AlarmMetric {
  readonly Id: string;
  readonly Expression?: string;
  readonly ReturnData?: boolean;
  readonly MetricStat?: {
    readonly Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: unknown }[] };
    readonly Period: number;
    readonly Stat: string;
  };
}

const stages = Object.values(stageConfigs);
let synth: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  synth = synthesizedStages({ context: { "aws:cdk:bundling-stacks": [] }, policyValidation: false });
});

const resourcesOf = (template: Template, type: string): Resources => template.findResources(type) as Resources;
const refTo = (value: unknown): string | undefined => (value as { Ref?: string } | undefined)?.Ref;
const getAttOf = (value: unknown): string | undefined =>
  (value as { "Fn::GetAtt"?: [string, string] } | undefined)?.["Fn::GetAtt"]?.[0];

/** The aliases in the template, by logical id. */
function aliasesOf(template: Template): [string, Resource][] {
  return Object.entries(resourcesOf(template, "AWS::Lambda::Alias"));
}

function deploymentGroupOf(template: Template, alias: Resource): Resource {
  const policy = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate as { DeploymentGroupName: unknown } | undefined;
  const group = resourcesOf(template, "AWS::CodeDeploy::DeploymentGroup")[refTo(policy?.DeploymentGroupName) ?? ""];
  if (!group) throw new Error("alias without a deployment group");
  return group;
}

function alarmsOf(template: Template, group: Resource): Resource[] {
  const { Alarms } = group.Properties.AlarmConfiguration as { Alarms: { Name: unknown }[] };
  const alarms = resourcesOf(template, "AWS::CloudWatch::Alarm");
  return Alarms.map((alarm) => alarms[refTo(alarm.Name) ?? ""] as Resource);
}

const metricsOf = (alarm: Resource) => alarm.Properties.Metrics as AlarmMetric[];
const returned = (alarm: Resource) => metricsOf(alarm).find((metric) => metric.ReturnData !== false);
const dimensionsOf = (metric: AlarmMetric | undefined) =>
  Object.fromEntries((metric?.MetricStat?.Metric.Dimensions ?? []).map(({ Name, Value }) => [Name, Value]));

describe.each(stages)("$id stage", (config: StageConfig) => {
  const template = () => synth.template(config.id);

  it(`publishes each API function as a version behind an alias named ${LIVE_ALIAS}, and only the API functions`, () => {
    const aliases = aliasesOf(template());
    const versions = resourcesOf(template(), "AWS::Lambda::Version");
    const functions = resourcesOf(template(), "AWS::Lambda::Function");

    expect(aliases).toHaveLength(routeList.length);
    for (const [, alias] of aliases) {
      const functionId = refTo(alias.Properties.FunctionName) ?? "";
      const version = versions[getAttOf(alias.Properties.FunctionVersion) ?? ""];
      expect(alias.Properties.Name).toBe("live");
      expect(functions[functionId]).toBeDefined();
      expect(refTo(version?.Properties.FunctionName)).toBe(functionId);
      expect(functionId).not.toMatch(/^SyntheticCheck/);
    }
  });

  it("has API Gateway invoke the aliases, never a function's $LATEST, with permissions on the aliases", () => {
    const aliasIds = new Set(aliasesOf(template()).map(([id]) => id));
    const proxies = Object.values(resourcesOf(template(), "AWS::ApiGateway::Method"))
      .map((method) => method.Properties.Integration as { Type: string; Uri: unknown })
      .filter((integration) => integration.Type === "AWS_PROXY");
    const permissions = Object.values(resourcesOf(template(), "AWS::Lambda::Permission"));

    expect(proxies).toHaveLength(routeList.length);
    for (const integration of proxies) {
      const uri = JSON.stringify(integration.Uri);
      expect([...aliasIds].filter((id) => uri.includes(`{"Ref":"${id}"}`))).toHaveLength(1);
      expect(uri).not.toMatch(/"Fn::GetAtt":\["\w+","Arn"\]/);
    }
    expect(permissions).toHaveLength(routeList.length);
    for (const permission of permissions) {
      expect(aliasIds.has(refTo(permission.Properties.FunctionName) ?? "")).toBe(true);
      // Control Tower's aspect (infra/stacks/controlTower.ts) still reaches them.
      expect(permission.Properties.SourceAccount).toEqual({ Ref: "AWS::AccountId" });
    }
  });

  it("moves each alias through a CodeDeploy deployment group of its own that rolls back on failure, on stop and on alarm", () => {
    const groups = aliasesOf(template()).map(([, alias]) => deploymentGroupOf(template(), alias));

    expect(new Set(groups).size).toBe(routeList.length);
    expect(groups.map((group) => group.Properties.DeploymentGroupName).sort()).toEqual(
      routeList.map((route) => route.operationId).sort(),
    );
    for (const group of groups) {
      expect(group.Properties.DeploymentStyle).toEqual({
        DeploymentType: "BLUE_GREEN",
        DeploymentOption: "WITH_TRAFFIC_CONTROL",
      });
      expect(group.Properties.AutoRollbackConfiguration).toEqual({
        Enabled: true,
        Events: expect.arrayContaining([
          "DEPLOYMENT_FAILURE",
          "DEPLOYMENT_STOP_ON_REQUEST",
          "DEPLOYMENT_STOP_ON_ALARM",
        ]),
      });
      expect((group.Properties.AlarmConfiguration as { Enabled: boolean }).Enabled).toBe(true);
    }
    // The group (and its alarm setting) is updated before CloudFormation asks it to move the alias.
    for (const [, alias] of aliasesOf(template())) {
      const policy = alias.UpdatePolicy?.CodeDeployLambdaAliasUpdate as { DeploymentGroupName: unknown } | undefined;
      const groupId = refTo(policy?.DeploymentGroupName);
      expect((alias as { DependsOn?: string[] }).DependsOn).toContain(groupId);
    }
  });

  it("rolls a function back on its own failures through its alias and on the stage's 5xx answers", () => {
    const [api] = Object.values(resourcesOf(template(), "AWS::ApiGateway::RestApi"));
    const apiName = api?.Properties.Name;
    const [apiStage] = Object.values(resourcesOf(template(), "AWS::ApiGateway::Stage"));
    const stageName = apiStage?.Properties.StageName;
    const stageAlarms = new Set<Resource>();

    for (const [, alias] of aliasesOf(template())) {
      const group = deploymentGroupOf(template(), alias);
      const [ownAlarm, stageAlarm, ...others] = alarmsOf(template(), group);
      const operation = group.Properties.DeploymentGroupName as string;
      const own = Object.fromEntries(
        metricsOf(ownAlarm as Resource).map((metric) => [
          metric.MetricStat?.Metric.MetricName,
          dimensionsOf(metric) as Record<string, unknown>,
        ]),
      );
      const stage = Object.fromEntries(
        metricsOf(stageAlarm as Resource).map((metric) => [metric.MetricStat?.Metric.MetricName, dimensionsOf(metric)]),
      );

      expect(others).toEqual([]);
      // Lambda's metrics of invocations through the alias, and the handler's own 5xx answers.
      const throughAlias = { FunctionName: alias.Properties.FunctionName, Resource: expect.anything() };
      expect(own.Errors).toEqual(throughAlias);
      expect(own.Invocations).toEqual(throughAlias);
      expect(JSON.stringify(own.Errors?.Resource)).toContain(`:${LIVE_ALIAS}`);
      expect(own[metricNames.serverErrors]).toEqual({ Stage: config.stage, Operation: operation });
      expect(
        metricsOf(ownAlarm as Resource).find(
          (metric) => metric.MetricStat?.Metric.MetricName === metricNames.serverErrors,
        )?.MetricStat?.Metric.Namespace,
      ).toBe(METRICS_NAMESPACE);
      // API Gateway's 5xx of the whole stage, gateway errors included.
      // By name, not by reference: the API's methods depend on the aliases, which depend on this.
      expect(stage["5XXError"]).toEqual({ ApiName: apiName, Stage: stageName });
      expect(stage.Count).toEqual(stage["5XXError"]);
      stageAlarms.add(stageAlarm as Resource);
    }
    expect(stageAlarms.size).toBe(1);
  });

  it("judges a deployment minute by minute, so a rollback alarm can fire on one failed request within a canary", () => {
    const [, alias] = aliasesOf(template())[0] ?? [];
    const alarms = alarmsOf(template(), deploymentGroupOf(template(), alias as Resource));
    const { failuresToRollBack } = config.rollout;
    const rate = config.monitoring.serverErrorRate;

    expect(failuresToRollBack).toBe(1);
    expect(alarms).toHaveLength(2);
    for (const alarm of alarms) {
      expect(alarm.Properties).toMatchObject({
        EvaluationPeriods: 1,
        Threshold: 1,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        TreatMissingData: "notBreaching",
      });
      expect(alarm.Properties.DatapointsToAlarm ?? 1).toBe(1);
      for (const metric of metricsOf(alarm).filter((candidate) => candidate.MetricStat)) {
        expect(metric.MetricStat).toMatchObject({ Period: 60, Stat: "Sum" });
      }
      // No minimum request count as in the paging alarms: failures count from the first one,
      // unless they are within the share of 5xx the stage accepts anyway. Not a page: their only
      // action is the stage's deployment events topic, never the alarm topic.
      const eventsTopic = [{ Ref: expect.stringMatching(/^MonitoringDeploymentEventsTopic[0-9A-F]{8}$/) }];
      expect(alarm.Properties.AlarmActions).toEqual(eventsTopic);
      expect(alarm.Properties.OKActions).toEqual(eventsTopic);
    }
    const [own, stage] = alarms.map((alarm) => returned(alarm)?.Expression);
    expect(own).toBe(
      `IF((FILL(answered5xx, 0) + FILL(crashed, 0)) >= ${failuresToRollBack}, ` +
        `IF((FILL(answered5xx, 0) + FILL(crashed, 0)) > ${rate} * FILL(invocations, 0), 1, 0), 0)`,
    );
    expect(stage).toBe(
      `IF(FILL(errors, 0) >= ${failuresToRollBack}, IF(FILL(errors, 0) > ${rate} * FILL(requests, 0), 1, 0), 0)`,
    );
  });

  it("lets CodeDeploy move these aliases and read alarm states, with no AWS managed policy", () => {
    const groups = aliasesOf(template()).map(([, alias]) => deploymentGroupOf(template(), alias));
    const [roleId, ...otherRoles] = [...new Set(groups.map((group) => getAttOf(group.Properties.ServiceRoleArn)))];
    const role = resourcesOf(template(), "AWS::IAM::Role")[roleId ?? ""];
    const statements = Object.values(resourcesOf(template(), "AWS::IAM::Policy"))
      .filter((policy) => (policy.Properties.Roles as unknown[]).some((candidate) => refTo(candidate) === roleId))
      .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] }).Statement);
    const aliasIds = aliasesOf(template()).map(([id]) => ({ Ref: id }));
    const functionArns = aliasesOf(template()).map(([, alias]) => ({
      "Fn::GetAtt": [refTo(alias.Properties.FunctionName), "Arn"],
    }));

    expect(otherRoles).toEqual([]);
    expect(role?.Properties.ManagedPolicyArns).toBeUndefined();
    expect(role?.Properties.AssumeRolePolicyDocument).toMatchObject({
      Statement: [
        {
          Principal: { Service: "codedeploy.amazonaws.com" },
          Condition: { StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } },
        },
      ],
    });
    expect(statements).toEqual([
      {
        Effect: "Allow",
        Action: ["lambda:GetAlias", "lambda:GetProvisionedConcurrencyConfig", "lambda:UpdateAlias"],
        Resource: expect.toSatisfy(
          (resources: unknown[]) =>
            resources.length === routeList.length * 2 &&
            [...aliasIds, ...functionArns].every((arn) => JSON.stringify(resources).includes(JSON.stringify(arn))),
        ),
      },
      { Effect: "Allow", Action: "cloudwatch:DescribeAlarms", Resource: "*" },
    ]);
  });

  it("keeps no provisioned concurrency unless the config asks for it", () => {
    expect(config.functions.provisionedConcurrency).toBe(0);
    for (const [, alias] of aliasesOf(template())) {
      expect(alias.Properties.ProvisionedConcurrencyConfig).toBeUndefined();
    }
  });
});

describe("traffic shifting", () => {
  const deploymentConfigOf = (id: StageConfig["id"]) => {
    const template = synth.template(id);
    const names = aliasesOf(template).map(
      ([, alias]) => deploymentGroupOf(template, alias).Properties.DeploymentConfigName,
    );
    expect(new Set(names.map((name) => JSON.stringify(name))).size).toBe(1);
    const name = names[0];
    return { name, resource: resourcesOf(template, "AWS::CodeDeploy::DeploymentConfig")[refTo(name) ?? ""] };
  };

  it("shifts production gradually: a tenth of the requests for 5 minutes, then all", () => {
    const { resource } = deploymentConfigOf("Production");

    expect(stageConfigs.Production.rollout.trafficShifting).toMatchObject({ type: "canary", percentage: 10 });
    expect(resource?.Properties).toEqual({
      ComputePlatform: "Lambda",
      TrafficRoutingConfig: { Type: "TimeBasedCanary", TimeBasedCanary: { CanaryPercentage: 10, CanaryInterval: 5 } },
    });
  });

  it("shifts staging all at once, with the same rollback alarms", () => {
    const { name, resource } = deploymentConfigOf("Staging");

    expect(name).toBe("CodeDeployDefault.LambdaAllAtOnce");
    expect(resource).toBeUndefined();
  });
});
