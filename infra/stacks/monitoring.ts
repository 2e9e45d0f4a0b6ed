/**
 * Per-stage monitoring: alarms on what hurts clients (5xx and 4xx rates, p99 latency, function
 * errors, throttles and durations near the timeout, DynamoDB throttling and system errors, bursts
 * of auth failures, alarm notifications that failed), sent to the stage's alarm destinations, a
 * non-paging alarm that proves after each deploy that notifications arrive, and a dashboard.
 * Request-level figures come from the functions' Embedded Metric Format lines (lib/observability).
 * What each alarm means and what to do first: docs/alarms.md.
 */
import { Annotations, ArnFormat, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
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
import { alarmDeliveryTestAlarmName, alarmDeliveryTestFilterPolicy, type DeployedStageName } from "../deployment";
import { contextKey, type StageSettings } from "../settings";

export interface MonitoringConfig {
  /**
   * Fewer API requests (or invocations of a function) than this in 5 minutes, and the rate, latency
   * and duration alarms stay quiet: a handful of requests says nothing about a rate, and one bad
   * request at 3 a.m. is not a page. An outage with no traffic at all is the synthetic check's to catch.
   */
  readonly minimumRequests: number;
  /** Fraction of requests answered 5xx over 5 minutes, e.g. 0.01 for 1%. */
  readonly serverErrorRate: number;
  /**
   * Fraction of requests answered 4xx over 5 minutes: stage throttling (429), requests the edge
   * firewall refuses through API Gateway, and client mistakes such as revoked keys or bad input.
   */
  readonly clientErrorRate: number;
  /** p99 of API Gateway latency over 5 minutes, in milliseconds. */
  readonly p99LatencyMs: number;
  /** Failed invocations of any one function in 5 minutes. */
  readonly functionErrors: number;
  /** p99 duration of a function as a fraction of its timeout (0.8: within 20% of being killed). */
  readonly p99DurationOfTimeout: number;
  /** 401 answers in 5 minutes across all operations: a leaked, revoked or guessed key. */
  readonly authFailures: number;
  /** DynamoDB SystemErrors (HTTP 500 from DynamoDB itself) in 5 minutes. */
  readonly tableSystemErrors: number;
  /**
   * The synthetic check alarms when this many of the last `outOfPeriods` 5-minute periods had a run
   * that failed, and, once it has run at all, when none of the last `outOfPeriods` periods had a run.
   */
  readonly syntheticCheck: { readonly failedPeriods: number; readonly outOfPeriods: number };
  /** When no alarm destination is configured, `cdk synth` and `cdk deploy` print a warning (production). */
  readonly requireAlarmDestination: boolean;
}

/**
 * Creates near POST /pets' throttle, sustained: the trigger of the design past the first ceiling
 * (docs/capacity.md), observable under today's limits, unlike any rate above the throttle.
 */
export const CREATES_NEAR_THROTTLE = {
  /** Creates per second, as a share of the stage's throttle on POST /pets. */
  shareOfThrottle: 0.8,
  /** For this long, in 5-minute periods. */
  sustainedMinutes: 15,
} as const;

export interface MonitoringProps {
  /** The `Stage` dimension the functions publish their metrics with. */
  readonly stage: DeployedStageName;
  /** Requests per second the stage lets through to each method, POST /pets included (infra/config.ts). */
  readonly methodThrottlePerSecond: number;
  readonly api: apigateway.RestApi;
  /** The functions, by operation id. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** The functions' timeout, which the duration alarms compare with. */
  readonly functionTimeout: Duration;
  readonly table: dynamodb.ITable;
  readonly config: MonitoringConfig;
  /** Where alarms go besides the stage's own topic (infra/settings.ts). */
  readonly destinations: Pick<StageSettings, "alarmEmails" | "alarmTopicArn">;
  /**
   * Requests the edge firewall's rate limits refused (infra/stacks/edgeProtection.ts), when the stage
   * has one: one client over its own budget is that client's problem, so they are taken out of the
   * client error alarm (docs/alarms.md).
   */
  readonly rateLimitedRequests?: cloudwatch.IMetric;
  /** What happens to the topic's key when the stage is destroyed (a KMS key is retained by default). */
  readonly keyRemovalPolicy?: RemovalPolicy;
}

/** The warning `cdk synth` prints for a stage whose alarms would reach nobody. */
export const NO_ALARM_DESTINATION_WARNING = "petstore:Monitoring.noAlarmDestination";

/** Named in infra/deployment.ts, where the command and the deploy role find it without aws-cdk-lib. */
export { alarmDeliveryTestAlarmName };

/** The delivery test alarm's metric, which nothing publishes. */
export const ALARM_DELIVERY_TEST_METRIC = "AlarmDeliveryTest";

const CLOUDWATCH = new iam.ServicePrincipal("cloudwatch.amazonaws.com");

/**
 * Lets CloudWatch publish to the topic for alarms of this account and region only, on their own
 * behalf: the confused-deputy conditions AWS documents for a topic policy, with the alarm as
 * aws:SourceArn (arn:<partition>:cloudwatch:<region>:<account>:alarm:<name>).
 * https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html ("Allow any CloudWatch
 * alarm to publish to a topic in a different account");
 * https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger
 */
function allowThisAccountsAlarmsToPublish(topic: sns.Topic): void {
  const stack = Stack.of(topic);
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: "AllowCloudWatchAlarmsOfThisAccount",
      principals: [CLOUDWATCH],
      actions: ["sns:Publish"],
      resources: [topic.topicArn],
      conditions: {
        StringEquals: { "aws:SourceAccount": stack.account },
        ArnLike: {
          "aws:SourceArn": stack.formatArn({
            service: "cloudwatch",
            resource: "alarm",
            resourceName: "*",
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        },
      },
    }),
  );
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
  /**
   * Where the deployment-judging alarms (./rollout.ts) send their state changes: a topic of record,
   * not a page. Nothing subscribes to it by default (docs/alarms.md).
   */
  readonly deploymentEventsTopic: sns.Topic;
  /**
   * Named `alarmDeliveryTestAlarmName(stage)`; its ALARM notifies every paging topic (whose
   * subscriptions filter it out), its OK the deployment events topic only.
   */
  readonly deliveryTestAlarm: cloudwatch.Alarm;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly dashboard: cloudwatch.Dashboard;
  /** Every topic an alarm is sent to: the stage's own, and the configured existing one if any. */
  private readonly alarmTopics: sns.ITopic[];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const { api, functions, table, config, stage } = props;
    const operations = Object.keys(functions);

    // CloudWatch publishes to an SSE-KMS topic only with a customer managed key whose key policy lets
    // its service principal use it, and AWS documents that statement without conditions:
    // kms:Decrypt and kms:GenerateDataKey* for cloudwatch.amazonaws.com, Resource "*"
    // (SNS developer guide, "Enable compatibility between event sources from AWS services and
    // encrypted topics": https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services;
    // https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns). The confused-deputy keys
    // aws:SourceAccount and aws:SourceArn are documented for the topic policy, where SNS evaluates
    // them against the alarm that publishes (below), not for the KMS request the publish causes; a
    // key policy that required them could make every notification fail ("Failed to execute action"
    // in the alarm's history) with nothing at deploy time to say so. The key is reachable only
    // through the topics it encrypts, so another account's alarm is stopped at their policies.
    const key = new kms.Key(this, "AlarmTopicKey", {
      enableKeyRotation: true,
      description: `Encrypts the Pet Store ${stage} alarm topic`,
      removalPolicy: props.keyRemovalPolicy ?? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "AllowCloudWatchAlarmsToEncryptNotifications",
        principals: [CLOUDWATCH],
        actions: ["kms:Decrypt", "kms:GenerateDataKey*"],
        resources: ["*"],
      }),
    );
    this.topic = new sns.Topic(this, "AlarmTopic", {
      displayName: `Pet Store ${stage} alarms`,
      masterKey: key,
      // The topic policy this creates holds only a Deny, and replaces SNS's default policy: without
      // the Allow below, CloudWatch could not publish and no alarm would ever be delivered.
      enforceSSL: true,
    });
    allowThisAccountsAlarmsToPublish(this.topic);

    // Same key and same publisher as the alarm topic, but no subscriptions: the rollback alarms fire
    // on a single failed request during a deployment (CodeDeploy acts on them by polling), which is
    // no reason to page anyone. Their state changes are recorded here, where whoever wants them
    // (a chat channel, a deploy log) can subscribe, and AWS Control Tower's CT.CLOUDWATCH.PR.1 (an
    // alarm must have an action) is met.
    // https://docs.aws.amazon.com/controltower/latest/controlreference/cloudwatch-rules.html
    this.deploymentEventsTopic = new sns.Topic(this, "DeploymentEventsTopic", {
      displayName: `Pet Store ${stage} deployment events`,
      masterKey: key,
      enforceSSL: true,
    });
    allowThisAccountsAlarmsToPublish(this.deploymentEventsTopic);

    // Published through the paging topics themselves (their policies, their key): `npm run
    // alarms:verify` sets it to ALARM after each deploy and reads in its history whether each
    // paging topic accepted its notification (docs/alarms.md). Every subscription the stack creates
    // drops that notification (alarmDeliveryTestFilterPolicy, below), so it pages nobody. Nothing
    // publishes its metric, and missing data is not breaching, so it never fires by itself.
    this.deliveryTestAlarm = new cloudwatch.Alarm(this, "AlarmDeliveryTest", {
      alarmName: alarmDeliveryTestAlarmName(stage),
      alarmDescription:
        "Not a page: proves that alarm notifications reach the paging topics, whose subscriptions filter it out. npm run alarms:verify sets it to ALARM " +
        "after each deploy and back to OK; nothing else ever does (docs/alarms.md).",
      metric: new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: ALARM_DELIVERY_TEST_METRIC,
        dimensionsMap: { Stage: stage },
        statistic: "Maximum",
        period: PERIOD,
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

    const { alarmEmails, alarmTopicArn } = props.destinations;
    for (const email of alarmEmails) {
      const subscription = this.topic.addSubscription(new subscriptions.EmailSubscription(email));
      // Drops the delivery test's notification, by the alarm name in the message body (infra/deployment.ts).
      const cfn = subscription.node.defaultChild as sns.CfnSubscription;
      cfn.filterPolicyScope = "MessageBody";
      cfn.filterPolicy = alarmDeliveryTestFilterPolicy(stage);
    }
    this.alarmTopics = [
      this.topic,
      ...(alarmTopicArn ? [sns.Topic.fromTopicArn(this, "ExistingAlarmTopic", alarmTopicArn)] : []),
    ];
    for (const topic of this.alarmTopics) this.deliveryTestAlarm.addAlarmAction(new cloudwatchActions.SnsAction(topic));
    // Its return to OK is a record of the test's end, on the topic that pages nobody, and never
    // counts as proof: the command counts only this run's ALARM notification.
    this.deliveryTestAlarm.addOkAction(new cloudwatchActions.SnsAction(this.deploymentEventsTopic));
    if (config.requireAlarmDestination && alarmEmails.length === 0 && !alarmTopicArn) {
      Annotations.of(this).addWarningV2(
        NO_ALARM_DESTINATION_WARNING,
        `The ${stage} stage has no alarm destination: its alarms will reach nobody. Set ${contextKey(stage, "alarmEmails")} ` +
          `and/or ${contextKey(stage, "alarmTopicArn")} in cdk.json's "context" (docs/alarms.md).`,
      );
    }

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
      comparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    ) => {
      const created = new cloudwatch.Alarm(this, id, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods,
        comparisonOperator,
        // No data is no traffic here; an outage that leaves no data at all is the synthetic check's.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.notify(created);
      return created;
    };
    /**
     * `value` while at least `minimumRequests` were counted in the period, 0 below (metric math IF:
     * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html).
     */
    const whenBusy = (value: string, metrics: Record<string, cloudwatch.IMetric>, label: string) =>
      new cloudwatch.MathExpression({
        expression: `IF(count >= ${config.minimumRequests}, ${value}, 0)`,
        usingMetrics: metrics,
        label,
        period: PERIOD,
      });
    const requests = api.metricCount({ statistic: "Sum", period: PERIOD });
    /**
     * The 4xx share without the requests the edge's rate limits refused, on both sides: a key at any
     * multiple of its limit is that client's problem, not a page (docs/alarms.md, "What pages").
     */
    const clientErrorShare = () => {
      const errors = api.metricClientError({ statistic: "Sum", period: PERIOD });
      if (!props.rateLimitedRequests) return whenBusy("errors / count", { count: requests, errors }, "4xx share");
      const limited = "FILL(limited, 0)";
      return new cloudwatch.MathExpression({
        expression: `IF(count - ${limited} >= ${config.minimumRequests}, IF(errors > ${limited}, (errors - ${limited}) / (count - ${limited}), 0), 0)`,
        usingMetrics: { count: requests, errors, limited: props.rateLimitedRequests },
        label: "4xx share, rate-limited requests left out",
        period: PERIOD,
      });
    };
    const busyFor = `with at least ${config.minimumRequests} requests`;

    alarm(
      "ServerErrorRate",
      `More than ${config.serverErrorRate * 100}% of requests answered 5xx for 10 minutes (${busyFor} each 5 minutes). Find the failing requests in the function logs (docs/alarms.md).`,
      whenBusy(
        "errors / count",
        { count: requests, errors: api.metricServerError({ statistic: "Sum", period: PERIOD }) },
        "5xx share",
      ),
      config.serverErrorRate,
      2,
    );
    alarm(
      "ClientErrorRate",
      `More than ${config.clientErrorRate * 100}% of requests answered 4xx for 10 minutes (${busyFor} each 5 minutes): throttling (429), firewall blocks, or clients failing. Access logs: status by ip and errorType (docs/alarms.md).`,
      clientErrorShare(),
      config.clientErrorRate,
      2,
    );
    alarm(
      "LatencyP99",
      `p99 latency above ${config.p99LatencyMs} ms for 10 minutes (${busyFor} each 5 minutes). Compare API latency with integration latency and DynamoDB throttling on the dashboard.`,
      whenBusy(
        "latency",
        { count: requests, latency: api.metricLatency({ statistic: "p99", period: PERIOD }) },
        "p99 latency",
      ),
      config.p99LatencyMs,
      2,
    );
    const durationLimitMs = Math.round(props.functionTimeout.toMilliseconds() * config.p99DurationOfTimeout);
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
      alarm(
        `${name}DurationP99`,
        `${operation}: p99 duration above ${durationLimitMs} ms (${config.p99DurationOfTimeout * 100}% of the ${props.functionTimeout.toSeconds()} s timeout) for 10 minutes, ${busyFor.replace("requests", "invocations")}: close to being killed mid-request.`,
        whenBusy(
          "duration",
          {
            count: fn.metricInvocations({ statistic: "Sum", period: PERIOD }),
            duration: fn.metricDuration({ statistic: "p99", period: PERIOD }),
          },
          `${operation} p99 duration`,
        ),
        durationLimitMs,
        2,
      );
    }
    alarm(
      "TableThrottles",
      "DynamoDB throttled requests: on-demand capacity adapting, or a hot partition (creates above ~1,000/s).",
      table.metricThrottledRequestsForOperations({ operations: TABLE_OPERATIONS, period: PERIOD }),
      0,
    );
    alarm(
      "TableSystemErrors",
      `DynamoDB answered more than ${config.tableSystemErrors} requests with its own 500 in 5 minutes: an AWS-side problem; clients got 503 with Retry-After after the SDK's retries.`,
      table.metricSystemErrorsForOperations({ operations: TABLE_OPERATIONS, period: PERIOD }),
      config.tableSystemErrors,
    );
    alarm(
      "AuthFailureBurst",
      `More than ${config.authFailures} requests answered 401 in 5 minutes: a client with a revoked or mistyped key, or key guessing.`,
      sumOverOperations(metricNames.authFailures, "401 answers"),
      config.authFailures,
    );
    const nearThrottlePerSecond = Math.floor(props.methodThrottlePerSecond * CREATES_NEAR_THROTTLE.shareOfThrottle);
    alarm(
      "CreatesNearThrottle",
      `${nearThrottlePerSecond} or more creates a second (${CREATES_NEAR_THROTTLE.shareOfThrottle * 100}% of POST /pets' throttle of ${props.methodThrottlePerSecond}) for ${CREATES_NEAR_THROTTLE.sustainedMinutes} minutes: raise the throttle and start the design past the first ceiling (docs/capacity.md).`,
      emf(metricNames.petsCreated, "createPet"),
      nearThrottlePerSecond * PERIOD.toSeconds(),
      Math.ceil(CREATES_NEAR_THROTTLE.sustainedMinutes / PERIOD.toMinutes()),
      cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    );
    alarm(
      "AlarmDeliveryFailures",
      "SNS failed to deliver alarm notifications from the stage's topic: some alarms may have reached nobody. Check the topic's subscriptions (confirmed? endpoint still valid?).",
      this.topic.metricNumberOfNotificationsFailed({ statistic: "Sum", period: PERIOD }),
      0,
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
    for (const topic of this.alarmTopics) {
      alarm.addAlarmAction(new cloudwatchActions.SnsAction(topic));
      alarm.addOkAction(new cloudwatchActions.SnsAction(topic));
    }
    this.alarms.push(alarm);
  }
}
