import { App, Duration, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import {
  ALARM_DELIVERY_TEST_METRIC,
  alarmDeliveryTestAlarmName,
  Monitoring,
  type MonitoringConfig,
  type MonitoringProps,
} from "../../infra/stacks/monitoring";
import { METRICS_NAMESPACE, metricNames } from "../../lib/observability/metrics";
import { scratchDirectory } from "../support/scratch";

const config: MonitoringConfig = {
  minimumRequests: 40,
  serverErrorRate: 0.02,
  clientErrorRate: 0.35,
  p99LatencyMs: 1234,
  functionErrors: 3,
  p99DurationOfTimeout: 0.75,
  authFailures: 77,
  tableSystemErrors: 4,
  syntheticCheck: { failedPeriods: 2, outOfPeriods: 3 },
  requireAlarmDestination: true,
};
const TIMEOUT = Duration.seconds(12);
const THROTTLE = 150;
const EXISTING_TOPIC = "arn:aws:sns:eu-west-1:210987654321:pager";
const EMAILS = ["oncall@example.com", "team@example.com"];

type AlarmProperties = Record<string, unknown> & {
  Threshold: number;
  EvaluationPeriods: number;
  Metrics?: { Id: string; Expression?: string; ReturnData?: boolean; MetricStat?: Record<string, unknown> }[];
};

/** A stack with two functions and the monitoring of them, synthesised. */
function monitoredStack(destinations: MonitoringProps["destinations"], requireAlarmDestination = true) {
  const stack = new Stack(new App({ outdir: scratchDirectory() }), "MonitoringUnderTest", {
    env: { account: "123456789012", region: "eu-west-1" },
  });
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
  const monitoring = new Monitoring(stack, "Monitoring", {
    stage: "prod",
    methodThrottlePerSecond: THROTTLE,
    api,
    functions,
    functionTimeout: TIMEOUT,
    table,
    config: { ...config, requireAlarmDestination },
    destinations,
  });
  let template: Template | undefined;
  // Synthesised on first use: a test may still add to the stack before that.
  return { stack, monitoring, template: () => (template ??= Template.fromStack(stack)) };
}

let configured: ReturnType<typeof monitoredStack>;
/** Every alarm but the delivery test alarm, which pages nobody by design. */
let alarms: Record<string, { Properties: AlarmProperties }>;
let deliveryTest: [string, AlarmProperties];
const alarm = (part: string): AlarmProperties => {
  const found = Object.entries(alarms).filter(([id]) => id.includes(part));
  expect(found, part).toHaveLength(1);
  return (found[0] as [string, { Properties: AlarmProperties }])[1].Properties;
};

beforeAll(() => {
  configured = monitoredStack({ alarmEmails: EMAILS, alarmTopicArn: EXISTING_TOPIC });
  const all = Object.entries(
    configured.template().findResources("AWS::CloudWatch::Alarm") as Record<string, { Properties: AlarmProperties }>,
  );
  const isDeliveryTest = ([id]: [string, unknown]) => id.startsWith("MonitoringAlarmDeliveryTest");
  alarms = Object.fromEntries(all.filter((entry) => !isDeliveryTest(entry)));
  const found = all.filter(isDeliveryTest);
  expect(found).toHaveLength(1);
  deliveryTest = [found[0]?.[0] as string, found[0]?.[1].Properties as AlarmProperties];
});

/** The logical id of a topic of the Monitoring construct, by the id it was given (AlarmTopic, DeploymentEventsTopic). */
function topicIdOf(template: Template, id: string): string {
  const found = Object.keys(template.findResources("AWS::SNS::Topic")).filter((logicalId) =>
    logicalId.startsWith(`Monitoring${id}`),
  );
  expect(found, id).toHaveLength(1);
  return found[0] as string;
}
const alarmTopicIdOf = (template: Template) => topicIdOf(template, "AlarmTopic");

/** The conditions of the topic policies' grants to CloudWatch: this account, and alarms of this account and region. */
const ONLY_THIS_ACCOUNTS_ALARMS = {
  StringEquals: { "aws:SourceAccount": "123456789012" },
  ArnLike: {
    "aws:SourceArn": {
      "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":cloudwatch:eu-west-1:123456789012:alarm:*"]],
    },
  },
};

describe("the alarm topic", () => {
  it("is encrypted and TLS-only, and lets CloudWatch publish for this account's alarms only", () => {
    const template = configured.template();
    const topicId = alarmTopicIdOf(template);

    template.hasResourceProperties("AWS::SNS::Topic", { KmsMasterKeyId: Match.anyValue() });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          {
            Sid: "AllowCloudWatchAlarmsOfThisAccount",
            Effect: "Allow",
            Principal: { Service: "cloudwatch.amazonaws.com" },
            Action: "sns:Publish",
            Resource: { Ref: topicId },
            Condition: ONLY_THIS_ACCOUNTS_ALARMS,
          },
        ]),
      },
    });
  });

  it("has a rotated key that CloudWatch may use as AWS documents it: to encrypt notifications, with no condition SNS's key request would not carry", () => {
    const template = configured.template();
    const [key] = Object.values(template.findResources("AWS::KMS::Key"));
    const statements = key?.Properties.KeyPolicy.Statement as { Principal?: { Service?: string } }[];

    expect(key?.Properties.EnableKeyRotation).toBe(true);
    expect(statements.filter((statement) => statement.Principal?.Service === "cloudwatch.amazonaws.com")).toEqual([
      {
        Sid: "AllowCloudWatchAlarmsToEncryptNotifications",
        Effect: "Allow",
        Principal: { Service: "cloudwatch.amazonaws.com" },
        Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
        Resource: "*",
      },
    ]);
    expect(JSON.stringify(statements)).not.toMatch(/aws:Source(Arn|Account)/);
  });

  it("subscribes the configured addresses by e-mail, each dropping the alarm delivery test's notification by the alarm name in its body", () => {
    const subscriptions = Object.values(configured.template().findResources("AWS::SNS::Subscription"));

    expect(subscriptions.map((subscription) => subscription.Properties)).toEqual(
      EMAILS.map((email) =>
        expect.objectContaining({
          Protocol: "email",
          Endpoint: email,
          // SNS applies it to the JSON alarm notification CloudWatch publishes; every other alarm passes.
          FilterPolicyScope: "MessageBody",
          FilterPolicy: { AlarmName: [{ "anything-but": ["petstore-prod-alarm-delivery-test"] }] },
        }),
      ),
    );
  });
});

describe("the deployment events topic", () => {
  it("is encrypted with the alarm topic's key, TLS-only, publishable by this account's alarms only, and pages nobody", () => {
    const template = configured.template();
    const topicId = topicIdOf(template, "DeploymentEventsTopic");
    const [keyId] = Object.keys(template.findResources("AWS::KMS::Key"));
    const topic = template.findResources("AWS::SNS::Topic")[topicId];

    expect(topic?.Properties.KmsMasterKeyId).toEqual({ "Fn::GetAtt": [keyId, "Arn"] });
    template.hasResourceProperties("AWS::SNS::TopicPolicy", {
      Topics: [{ Ref: topicId }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          {
            Sid: "AllowCloudWatchAlarmsOfThisAccount",
            Effect: "Allow",
            Principal: { Service: "cloudwatch.amazonaws.com" },
            Action: "sns:Publish",
            Resource: { Ref: topicId },
            Condition: ONLY_THIS_ACCOUNTS_ALARMS,
          },
        ]),
      },
    });
    // The alarm e-mails and the pager topic are the alarm topic's only.
    const subscribed = Object.values(template.findResources("AWS::SNS::Subscription")).map(
      (subscription) => subscription.Properties.TopicArn,
    );
    expect(subscribed.length).toBeGreaterThan(0);
    for (const topicArn of subscribed) expect(topicArn).toEqual({ Ref: alarmTopicIdOf(template) });
    for (const properties of Object.values(alarms).map((found) => found.Properties)) {
      expect(JSON.stringify(properties.AlarmActions)).not.toContain(topicId);
    }
  });
});

describe("the alarm delivery test alarm", () => {
  it("has the fixed name npm run alarms:verify and the deploy role use", () => {
    const [, properties] = deliveryTest;

    expect(properties.AlarmName).toBe("petstore-prod-alarm-delivery-test");
    expect(alarmDeliveryTestAlarmName("staging")).toBe("petstore-staging-alarm-delivery-test");
  });

  it("notifies every paging topic when it fires, the very topics the paging alarms notify, and only the deployment events topic when it clears", () => {
    const template = configured.template();
    const [, properties] = deliveryTest;
    const pagingTopics = [{ Ref: alarmTopicIdOf(template) }, EXISTING_TOPIC];

    expect(properties.AlarmActions).toEqual(pagingTopics);
    for (const found of Object.values(alarms)) expect(found.Properties.AlarmActions).toEqual(pagingTopics);
    expect(properties.OKActions).toEqual([{ Ref: topicIdOf(template, "DeploymentEventsTopic") }]);
    expect(properties.InsufficientDataActions).toBeUndefined();
  });

  it("notifies the stage's own alarm topic alone when no existing topic is configured", () => {
    const template = monitoredStack({ alarmEmails: EMAILS }).template();
    const [deliveryTestAlarm] = Object.entries(template.findResources("AWS::CloudWatch::Alarm")).filter(([id]) =>
      id.startsWith("MonitoringAlarmDeliveryTest"),
    );

    expect(deliveryTestAlarm?.[1].Properties.AlarmActions).toEqual([{ Ref: alarmTopicIdOf(template) }]);
  });

  it("watches a metric nothing publishes, with missing data not breaching: it never fires by itself", () => {
    const [, properties] = deliveryTest;

    expect(properties).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      MetricName: ALARM_DELIVERY_TEST_METRIC,
      Dimensions: [{ Name: "Stage", Value: "prod" }],
      Threshold: 0,
      ComparisonOperator: "GreaterThanThreshold",
      TreatMissingData: "notBreaching",
    });
    expect(Object.values(metricNames)).not.toContain(ALARM_DELIVERY_TEST_METRIC);
  });

  it("clears to the deployment events topic, which is encrypted with the paging topic's key and lets CloudWatch publish on the same terms", () => {
    const template = configured.template();
    const topics = template.findResources("AWS::SNS::Topic");
    const cloudWatchStatementOf = (topicId: string) => {
      const [policy] = Object.values(template.findResources("AWS::SNS::TopicPolicy")).filter(
        (candidate) => JSON.stringify(candidate.Properties.Topics) === JSON.stringify([{ Ref: topicId }]),
      );
      const statements = policy?.Properties.PolicyDocument.Statement as { Sid?: string; Resource?: unknown }[];
      const { Resource, ...rest } = statements.find(
        (statement) => statement.Sid === "AllowCloudWatchAlarmsOfThisAccount",
      ) as { Resource: unknown };
      expect(Resource).toEqual({ Ref: topicId });
      return rest;
    };
    const pagingTopic = alarmTopicIdOf(template);
    const eventsTopic = topicIdOf(template, "DeploymentEventsTopic");

    expect(topics[eventsTopic]?.Properties.KmsMasterKeyId).toEqual(topics[pagingTopic]?.Properties.KmsMasterKeyId);
    expect(cloudWatchStatementOf(eventsTopic)).toEqual(cloudWatchStatementOf(pagingTopic));
  });

  it("is left off the dashboard's alarm widget: its ALARM during a test says nothing about the stage", () => {
    const [dashboard] = Object.values(configured.template().findResources("AWS::CloudWatch::Dashboard"));

    expect(JSON.stringify(dashboard?.Properties.DashboardBody)).not.toContain(deliveryTest[0]);
  });
});

describe("alarm destinations", () => {
  it("sends every alarm, when it fires and when it clears, to the stage's topic and the configured existing topic", () => {
    const topicId = alarmTopicIdOf(configured.template());
    const both = [{ Ref: topicId }, EXISTING_TOPIC];

    // Every alarm but the delivery test alarm (see its own tests).
    expect(Object.keys(alarms).length).toBeGreaterThan(10);
    for (const properties of Object.values(alarms).map((found) => found.Properties)) {
      expect(properties.AlarmActions).toEqual(both);
      expect(properties.OKActions).toEqual(both);
      expect(properties.AlarmDescription).toBeTruthy();
    }
  });

  it("wires an alarm defined elsewhere in the stack to the same destinations and the dashboard's alarm widget", () => {
    const { stack, monitoring } = monitoredStack({ alarmEmails: [], alarmTopicArn: EXISTING_TOPIC });
    const elsewhere = new cloudwatch.Alarm(stack, "Elsewhere", {
      metric: new cloudwatch.Metric({ namespace: "AWS/WAFV2", metricName: "BlockedRequests" }),
      threshold: 1,
      evaluationPeriods: 1,
    });

    monitoring.notify(elsewhere);

    const template = Template.fromStack(stack);
    const topicId = alarmTopicIdOf(template);
    const [elsewhereId] = Object.keys(template.findResources("AWS::CloudWatch::Alarm")).filter((id) =>
      id.startsWith("Elsewhere"),
    );
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      MetricName: "BlockedRequests",
      AlarmActions: [{ Ref: topicId }, EXISTING_TOPIC],
    });
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    expect(JSON.stringify(dashboard?.Properties.DashboardBody)).toContain(elsewhereId);
  });

  it("warns at synth time when a stage that requires a destination has none", () => {
    const unconfigured = monitoredStack({ alarmEmails: [] });

    Annotations.fromStack(unconfigured.stack).hasWarning(
      "/MonitoringUnderTest/Monitoring",
      Match.stringLikeRegexp(
        'The prod stage has no alarm destination: its alarms will reach nobody\\. Set prod:alarmEmails and/or prod:alarmTopicArn in cdk.json\'s "context"',
      ),
    );
    Annotations.fromStack(configured.stack).hasNoWarning("*", Match.stringLikeRegexp("alarm destination"));
    Annotations.fromStack(monitoredStack({ alarmEmails: ["a@example.com"] }).stack).hasNoWarning("*", Match.anyValue());
    Annotations.fromStack(monitoredStack({ alarmEmails: [] }, false).stack).hasNoWarning("*", Match.anyValue());
  });
});

describe("the alarms", () => {
  /** The expression an alarm evaluates, and the metric each of its ids stands for. */
  function mathOf(properties: AlarmProperties) {
    const metrics = properties.Metrics ?? [];
    const expression = metrics.find((metric) => metric.ReturnData !== false)?.Expression;
    const byId = Object.fromEntries(
      metrics
        .filter((metric) => metric.MetricStat)
        .map((metric) => {
          const stat = metric.MetricStat as { Metric: { MetricName: string }; Stat: string };
          return [metric.Id, `${stat.Metric.MetricName}/${stat.Stat}`];
        }),
    );
    return { expression, byId };
  }

  it("alarms on the 5xx share only above the minimum request count, for 10 minutes", () => {
    const properties = alarm("ServerErrorRate");

    expect(mathOf(properties)).toEqual({
      expression: "IF(count >= 40, errors / count, 0)",
      byId: { count: "Count/Sum", errors: "5XXError/Sum" },
    });
    expect(properties).toMatchObject({ Threshold: 0.02, EvaluationPeriods: 2, TreatMissingData: "notBreaching" });
  });

  it("alarms on the 4xx share (throttling and firewall blocks among them) only above the minimum request count", () => {
    const properties = alarm("ClientErrorRate");

    expect(mathOf(properties)).toEqual({
      expression: "IF(count >= 40, errors / count, 0)",
      byId: { count: "Count/Sum", errors: "4XXError/Sum" },
    });
    expect(properties).toMatchObject({ Threshold: 0.35, EvaluationPeriods: 2 });
  });

  it("alarms on p99 latency only above the minimum request count", () => {
    const properties = alarm("LatencyP99");

    expect(mathOf(properties)).toEqual({
      expression: "IF(count >= 40, latency, 0)",
      byId: { count: "Count/Sum", latency: "Latency/p99" },
    });
    expect(properties).toMatchObject({ Threshold: 1234, EvaluationPeriods: 2 });
  });

  it("alarms on each function's p99 duration at the configured share of its timeout", () => {
    for (const name of ["ListPets", "CreatePet"]) {
      const properties = alarm(`${name}DurationP99`);

      expect(mathOf(properties)).toEqual({
        expression: "IF(count >= 40, duration, 0)",
        byId: { count: "Invocations/Sum", duration: "Duration/p99" },
      });
      expect(properties.Threshold).toBe(0.75 * TIMEOUT.toMilliseconds());
      expect(properties.Threshold).toBeLessThan(TIMEOUT.toMilliseconds());
    }
  });

  it("alarms on each function's errors and throttles, table throttling and auth failures", () => {
    expect(alarm("ListPetsErrors")).toMatchObject({ MetricName: "Errors", Threshold: 3 });
    expect(alarm("CreatePetThrottles")).toMatchObject({ MetricName: "Throttles", Threshold: 0 });
    expect(JSON.stringify(alarm("TableThrottles").Metrics)).toContain("ThrottledRequests");
    const auth = alarm("AuthFailureBurst");
    expect(auth.Threshold).toBe(77);
    expect(JSON.stringify(auth.Metrics)).toContain(metricNames.authFailures);
    expect(JSON.stringify(auth.Metrics)).toContain(METRICS_NAMESPACE);
  });

  it("alarms on DynamoDB system errors of every operation the functions use", () => {
    const properties = alarm("TableSystemErrors");
    const stats = (properties.Metrics ?? []).flatMap((metric) =>
      metric.MetricStat ? [metric.MetricStat as { Metric: { MetricName: string; Dimensions: unknown[] } }] : [],
    );

    expect(properties.Threshold).toBe(4);
    expect(stats.length).toBeGreaterThanOrEqual(5);
    expect(new Set(stats.map((stat) => stat.Metric.MetricName))).toEqual(new Set(["SystemErrors"]));
    expect(JSON.stringify(stats)).toContain('"Value":"Query"');
    expect(JSON.stringify(stats)).toContain('"Value":"PutItem"');
  });

  it("alarms when creates stay near POST /pets' throttle for 15 minutes: the trigger of the design past the first ceiling", () => {
    const properties = alarm("CreatesNearThrottle");
    const stat = (properties.MetricName ?? "") as string;

    // 80% of 150 a second, over a 5-minute period, in each of 3 periods.
    expect(properties.Threshold).toBe(120 * 300);
    expect(properties.ComparisonOperator).toBe("GreaterThanOrEqualToThreshold");
    expect(properties.EvaluationPeriods).toBe(3);
    expect(stat).toBe("PetsCreated");
    expect(properties.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: "Stage", Value: "prod" },
        { Name: "Operation", Value: "createPet" },
      ]),
    );
    expect(properties.Statistic).toBe("Sum");
    expect(properties.Threshold / 300).toBeLessThan(THROTTLE);
  });

  it("alarms when SNS fails to deliver the topic's notifications", () => {
    const topicId = alarmTopicIdOf(configured.template());

    expect(alarm("AlarmDeliveryFailures")).toMatchObject({
      Namespace: "AWS/SNS",
      MetricName: "NumberOfNotificationsFailed",
      Dimensions: [{ Name: "TopicName", Value: { "Fn::GetAtt": [topicId, "TopicName"] } }],
      Statistic: "Sum",
      Threshold: 0,
      ComparisonOperator: "GreaterThanThreshold",
    });
  });
});

describe("the dashboard", () => {
  it("shows requests, errors, latency percentiles, cold starts and DynamoDB capacity", () => {
    const [dashboard] = Object.values(configured.template().findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    expect(dashboard?.Properties.DashboardName).toBe("PetStore-prod");
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
