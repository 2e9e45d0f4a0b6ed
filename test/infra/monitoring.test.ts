import { App, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { Monitoring, type MonitoringConfig } from "../../infra/stacks/monitoring";
import { METRICS_NAMESPACE, metricNames } from "../../lib/observability/metrics";

const config: MonitoringConfig = {
  alarmEmails: ["oncall@example.com", "team@example.com"],
  serverErrorRate: 0.02,
  p99LatencyMs: 1234,
  functionErrors: 3,
  authFailures: 77,
};

let template: Template;

beforeAll(() => {
  const stack = new Stack(new App(), "MonitoringUnderTest");
  const api = new apigateway.RestApi(stack, "Api");
  api.root.addMethod("GET", new apigateway.MockIntegration());
  const functions = Object.fromEntries(
    ["listPets", "createPet"].map((operation) => [
      operation,
      new lambda.Function(stack, operation, {
        runtime: lambda.Runtime.NODEJS_22_X,
        handler: "index.handler",
        code: lambda.Code.fromInline("exports.handler = async () => ({})"),
      }),
    ]),
  );
  const table = new dynamodb.TableV2(stack, "Table", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
  });
  new Monitoring(stack, "Monitoring", { stage: "staging", api, functions, table, config });
  template = Template.fromStack(stack);
});

describe("monitoring of a stage", () => {
  it("sends alarms to an encrypted, TLS-only topic with the configured subscriptions", () => {
    template.hasResourceProperties("AWS::SNS::Topic", { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        ]),
      },
    });
    template.hasResourceProperties("AWS::KMS::Key", { EnableKeyRotation: true });
    for (const email of config.alarmEmails) {
      template.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: email });
    }
  });

  it("alarms on the 5xx rate, p99 latency, errors and throttles of each function, table throttling and auth failures", () => {
    const alarms = template.findResources("AWS::CloudWatch::Alarm");
    const byId = (part: string) => Object.entries(alarms).find(([id]) => id.includes(part))?.[1]?.Properties;

    expect(Object.keys(alarms)).toHaveLength(2 + 2 * 2 + 1 + 1);
    expect(byId("ServerErrorRate")).toMatchObject({ MetricName: "5XXError", Statistic: "Average", Threshold: 0.02 });
    expect(byId("LatencyP99")).toMatchObject({ MetricName: "Latency", ExtendedStatistic: "p99", Threshold: 1234 });
    expect(byId("ListPetsErrors")).toMatchObject({ MetricName: "Errors", Threshold: 3 });
    expect(byId("CreatePetThrottles")).toMatchObject({ MetricName: "Throttles", Threshold: 0 });
    expect(byId("TableThrottles")?.Metrics).toBeDefined();
    const auth = byId("AuthFailureBurst");
    expect(auth?.Threshold).toBe(77);
    expect(JSON.stringify(auth?.Metrics)).toContain(metricNames.authFailures);
    expect(JSON.stringify(auth?.Metrics)).toContain(METRICS_NAMESPACE);
  });

  it("notifies the topic when each alarm fires and when it clears", () => {
    const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm"));
    const topicId = Object.keys(template.findResources("AWS::SNS::Topic"))[0];

    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.OKActions).toEqual([{ Ref: topicId }]);
      expect(alarm.Properties.AlarmDescription).toBeTruthy();
    }
  });

  it("has a dashboard with requests, errors, latency percentiles, cold starts and DynamoDB capacity", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    expect(dashboard?.Properties.DashboardName).toBe("PetStore-staging");
    for (const title of [
      "Requests by operation",
      "Errors",
      "Latency (ms)",
      "Cold starts",
      "DynamoDB consumed capacity",
    ]) {
      expect(body).toContain(title);
    }
    for (const fragment of [
      "p50",
      "p90",
      "p99",
      metricNames.coldStarts,
      "ConsumedReadCapacityUnits",
      "ConsumedWriteCapacityUnits",
    ]) {
      expect(body).toContain(fragment);
    }
  });
});
