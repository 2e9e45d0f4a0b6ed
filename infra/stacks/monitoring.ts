/**
 * Per-stage monitoring: alarms on what hurts clients (5xx rate, p99 latency, function errors and
 * throttles, DynamoDB throttling, bursts of auth failures), sent to an SNS topic, and a dashboard.
 * Request-level figures come from the functions' Embedded Metric Format lines (lib/observability).
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as cloudwatchActions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import { Construct } from "constructs";
import { METRICS_NAMESPACE, metricNames } from "../../lib/observability/metrics";

export interface MonitoringConfig {
  /** Who is told when an alarm fires (email subscriptions of the stage's topic). */
  readonly alarmEmails: readonly string[];
  /** Fraction of requests answered 5xx over 5 minutes, e.g. 0.01 for 1%. */
  readonly serverErrorRate: number;
  /** p99 of API Gateway latency over 5 minutes, in milliseconds. */
  readonly p99LatencyMs: number;
  /** Failed invocations of any one function in 5 minutes. */
  readonly functionErrors: number;
  /** 401 answers in 5 minutes across all operations: a leaked, revoked or guessed key. */
  readonly authFailures: number;
}

export interface MonitoringProps {
  /** The `Stage` dimension the functions publish their metrics with. */
  readonly stage: string;
  readonly api: apigateway.RestApi;
  /** The functions, by operation id. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  readonly table: dynamodb.ITable;
  readonly config: MonitoringConfig;
  /** What happens to the topic's key when the stage is destroyed (a KMS key is retained by default). */
  readonly keyRemovalPolicy?: RemovalPolicy;
}

const PERIOD = Duration.minutes(5);
const TABLE_OPERATIONS = [
  dynamodb.Operation.GET_ITEM,
  dynamodb.Operation.PUT_ITEM,
  dynamodb.Operation.UPDATE_ITEM,
  dynamodb.Operation.DELETE_ITEM,
  dynamodb.Operation.QUERY,
];

export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { api, functions, table, config, stage } = props;
    const operations = Object.keys(functions);

    // CloudWatch can publish to an encrypted topic only with a customer managed key it may use.
    const key = new kms.Key(this, "AlarmTopicKey", {
      enableKeyRotation: true,
      description: `Encrypts the Pet Store ${stage} alarm topic`,
      removalPolicy: props.keyRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
        actions: ["kms:Decrypt", "kms:GenerateDataKey"],
        resources: ["*"],
      }),
    );
    this.topic = new sns.Topic(this, "AlarmTopic", {
      displayName: `Pet Store ${stage} alarms`,
      masterKey: key,
      enforceSSL: true,
    });
    for (const email of config.alarmEmails) this.topic.addSubscription(new subscriptions.EmailSubscription(email));

    const emf = (metricName: string, operation: string, statistic = "Sum") =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName,
        dimensionsMap: { Stage: stage, Operation: operation },
        statistic,
        period: PERIOD,
      });
    // Ids must be unique within a graph that shows several of these sums.
    const sumOverOperations = (metricName: string, label: string) => {
      const ids = operations.map((_, index) => `${metricName.toLowerCase()}${index}`);
      return new cloudwatch.MathExpression({
        expression: ids.join(" + "),
        usingMetrics: Object.fromEntries(
          operations.map((operation, index) => [ids[index], emf(metricName, operation)]),
        ),
        label,
        period: PERIOD,
      });
    };

    const alarm = (
      id: string,
      description: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      evaluationPeriods = 1,
    ) => {
      const created = new cloudwatch.Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.notify(created);
      return created;
    };

    alarm(
      "ServerErrorRate",
      `More than ${config.serverErrorRate * 100}% of requests answered 5xx for 10 minutes. Find the failing requests in the function logs by requestId (README, Operations).`,
      api.metricServerError({ statistic: "Average", period: PERIOD }),
      config.serverErrorRate,
      2,
    );
    alarm(
      "LatencyP99",
      `p99 latency above ${config.p99LatencyMs} ms for 10 minutes. Compare API latency with integration latency and DynamoDB throttling on the dashboard.`,
      api.metricLatency({ statistic: "p99", period: PERIOD }),
      config.p99LatencyMs,
      2,
    );
    for (const [operation, fn] of Object.entries(functions)) {
      const name = operation.charAt(0).toUpperCase() + operation.slice(1);
      alarm(
        `${name}Errors`,
        `${operation}: more than ${config.functionErrors} failed invocations in 5 minutes (crashes or timeouts, not 4xx).`,
        fn.metricErrors({ period: PERIOD }),
        config.functionErrors,
      );
      alarm(
        `${name}Throttles`,
        `${operation}: Lambda throttled invocations (account or reserved concurrency exhausted).`,
        fn.metricThrottles({ period: PERIOD }),
        0,
      );
    }
    alarm(
      "TableThrottles",
      "DynamoDB throttled requests: on-demand capacity adapting, or a hot partition (creates above ~1,000/s).",
      table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period: PERIOD }),
      0,
    );
    alarm(
      "AuthFailureBurst",
      `More than ${config.authFailures} requests answered 401 in 5 minutes: a client with a revoked or mistyped key, or key guessing.`,
      sumOverOperations(metricNames.authFailures, "401 answers"),
      config.authFailures,
    );

    const perOperation = (metricName: string, statistic = "Sum") =>
      operations.map((operation) => emf(metricName, operation, statistic));
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      dashboardName: `PetStore-${stage}`,
      widgets: [
        [new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: this.alarms, width: 24, height: 3 })],
        [
          new cloudwatch.GraphWidget({
            title: "Requests by operation",
            left: perOperation(metricNames.requests),
            width: 8,
          }),
          new cloudwatch.GraphWidget({
            title: "Errors",
            left: [
              sumOverOperations(metricNames.clientErrors, "4xx"),
              sumOverOperations(metricNames.serverErrors, "5xx"),
              api.metricClientError({ period: PERIOD, statistic: "Sum", label: "gateway 4xx" }),
              api.metricServerError({ period: PERIOD, statistic: "Sum", label: "gateway 5xx" }),
            ],
            width: 8,
          }),
          new cloudwatch.GraphWidget({
            title: "Latency (ms)",
            left: ["p50", "p90", "p99"].map((statistic) =>
              api.metricLatency({ statistic, period: PERIOD, label: `API ${statistic}` }),
            ),
            right: perOperation(metricNames.latency, "p99"),
            width: 8,
          }),
        ],
        [
          new cloudwatch.GraphWidget({ title: "Cold starts", left: perOperation(metricNames.coldStarts), width: 8 }),
          new cloudwatch.GraphWidget({
            title: "DynamoDB consumed capacity",
            left: [
              table.metricConsumedReadCapacityUnits({ period: PERIOD }),
              table.metricConsumedWriteCapacityUnits({ period: PERIOD }),
            ],
            right: [table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period: PERIOD })],
            width: 8,
          }),
          new cloudwatch.GraphWidget({
            title: "Pets created, auth failures",
            left: [
              sumOverOperations(metricNames.petsCreated, "pets created"),
              sumOverOperations(metricNames.authFailures, "401 answers"),
            ],
            width: 8,
          }),
        ],
      ],
    });
  }

  /**
   * Sends the alarm's state changes to the stage's alarm destinations and shows it on the dashboard's
   * alarm widget. Alarms defined elsewhere in the stack (for example the edge firewall's) use this too.
   */
  notify(alarm: cloudwatch.Alarm): void {
    alarm.addAlarmAction(new cloudwatchActions.SnsAction(this.topic));
    alarm.addOkAction(new cloudwatchActions.SnsAction(this.topic));
    this.alarms.push(alarm);
  }
}
