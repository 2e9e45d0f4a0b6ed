/**
 * A full outage must alarm: with no traffic there are no error metrics at all, and the request
 * alarms treat missing data as fine. So every 5 minutes EventBridge Scheduler invokes a function
 * that runs the smoke checks (lib/smoke/checks.ts) through the stage's public URL, and an alarm
 * fires when runs fail or stop reporting (missing data counts as failing), after a warm-up that
 * keeps a new stage's alarm quiet until the check has had time to run.
 *
 * The check's API key is made at deploy time by a custom resource (lib/synthetic/keyProvisioner.ts):
 * the key itself only in this construct's secret, its SHA-256 hash record in the table. It never
 * appears in the template, the logs or the outputs.
 */
import { CustomResource, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as schedulerTargets from "aws-cdk-lib/aws-scheduler-targets";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import { Construct, type IDependable } from "constructs";
import { itemKeys } from "../../lib/db/table";
import { METRICS_NAMESPACE } from "../../lib/observability/metrics";
import { syntheticMetricNames } from "../../lib/observability/syntheticMetrics";
import type { SyntheticKeyProperties } from "../../lib/synthetic/keyProvisioner";
import type { DeployedStageName } from "../deployment";
import { cdkBundling } from "./functionBundling";
import type { Monitoring, MonitoringConfig } from "./monitoring";
import type { StageLogs } from "./stageLogs";

export interface SyntheticCheckProps {
  readonly stage: DeployedStageName;
  /** The stage's public base URL, ending in /v1. */
  readonly baseUrl: string;
  /** The table holding the stage's API key records. */
  readonly table: dynamodb.ITable;
  readonly monitoring: Monitoring;
  readonly alarm: MonitoringConfig["syntheticCheck"];
  /** The level of the functions' own log lines, as for the API functions. */
  readonly applicationLogLevel: lambda.ApplicationLogLevel;
  /** Each of its functions' reserved concurrency: one run at a time is all they need (infra/config.ts). */
  readonly reservedConcurrency: number;
  /** The stage's log groups (encrypted, kept as the stage's logs are). */
  readonly logs: StageLogs;
  /** What must exist before the first run (the API's deployment stage). */
  readonly runsAfter: readonly IDependable[];
  /** The project root, for bundling. */
  readonly projectRoot: string;
}

/**
 * Raise it and deploy to rotate the check's key: CloudFormation then replaces the custom resource,
 * which issues a new key, and deletes the old one, which revokes the old key.
 */
// 2: the check's key carries the synthetic mark in its text (`petstore_<stage>_synthetic_…`), which
// the check now requires; deploying it replaces the key of generation 1, which had no mark.
export const SYNTHETIC_KEY_GENERATION = 2;

/** One run every 5 minutes; the alarm's period is the same. */
export const SYNTHETIC_CHECK_INTERVAL = Duration.minutes(5);

/**
 * How long a new synthetic-check alarm waits for data before missing runs count: the first run
 * (due within one interval of the deploy) and a full evaluation window after it.
 */
export const syntheticCheckWarmUp = (evaluationPeriods: number): Duration =>
  Duration.minutes(SYNTHETIC_CHECK_INTERVAL.toMinutes() * (evaluationPeriods + 1));

export class SyntheticCheck extends Construct {
  readonly secret: secretsmanager.Secret;
  readonly checkFunction: NodejsFunction;
  readonly keyFunction: NodejsFunction;
  readonly schedule: scheduler.Schedule;
  readonly schedulerRole: iam.Role;
  /** Runs that failed or did not report, once the alarm's warm-up has passed. */
  readonly alarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: SyntheticCheckProps) {
    super(scope, id);
    const { stage, table } = props;

    // Secrets Manager fills it with a random placeholder, which the key provisioner replaces at once.
    this.secret = new secretsmanager.Secret(this, "ApiKey", {
      description: `API key of the Pet Store ${stage} synthetic check (written at deploy time; its hash is in the table)`,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.keyFunction = this.projectFunction("KeyFunction", {
      entry: "functions/syntheticCheckKey.ts",
      description: `Provisions the ${stage} synthetic check's API key at deploy time (CloudFormation custom resource)`,
      timeout: Duration.minutes(1),
      props,
    });
    this.keyFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ["secretsmanager:PutSecretValue"],
        resources: [this.secret.secretArn],
      }),
    );
    // Only API key records: writing one, marking one revoked, listing them to find one by id.
    // The functions that serve requests gain nothing here. (IAM cannot name the one record, whose
    // sort key is the hash of a key made at deploy time; the partition is the narrowest scope.)
    this.keyFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"],
        resources: [table.tableArn],
        conditions: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": [itemKeys.apiKeyPartition] } },
      }),
    );
    const properties: SyntheticKeyProperties = {
      TableName: table.tableName,
      SecretArn: this.secret.secretArn,
      Stage: stage,
    };
    const key = new CustomResource(this, "Key", {
      serviceToken: this.keyFunction.functionArn,
      resourceType: "Custom::SyntheticCheckKey",
      // The generation only tells CloudFormation that the key must be replaced; the function ignores it.
      properties: { ...properties, Generation: String(SYNTHETIC_KEY_GENERATION) },
      // Should the function die without answering, the deployment fails after this instead of an hour.
      serviceTimeout: Duration.minutes(5),
    });

    this.checkFunction = this.projectFunction("CheckFunction", {
      entry: "functions/syntheticCheck.ts",
      description: `Runs the smoke checks against the ${stage} stage every ${SYNTHETIC_CHECK_INTERVAL.toMinutes()} minutes`,
      // Each request may take up to 15 s (lib/smoke/checks.ts); a run that hangs longer publishes
      // nothing, which the alarm counts as a failure.
      timeout: Duration.minutes(2),
      props,
      environment: {
        PETSTORE_BASE_URL: props.baseUrl,
        PETSTORE_API_KEY_SECRET_ARN: this.secret.secretArn,
        PETSTORE_STAGE: stage,
      },
    });
    this.checkFunction.addToRolePolicy(
      new iam.PolicyStatement({ actions: ["secretsmanager:GetSecretValue"], resources: [this.secret.secretArn] }),
    );

    // Its own role, rather than the one the target would add to the stack, so that it lives here and
    // only this account's schedules may assume it.
    this.schedulerRole = new iam.Role(this, "SchedulerRole", {
      assumedBy: new iam.ServicePrincipal("scheduler.amazonaws.com", {
        conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
      }),
      description: `Lets the ${stage} synthetic check's schedule invoke its function`,
    });
    this.schedule = new scheduler.Schedule(this, "Schedule", {
      description: `Pet Store ${stage} synthetic check`,
      schedule: scheduler.ScheduleExpression.rate(SYNTHETIC_CHECK_INTERVAL),
      // A run that fails is not retried: the next one is due in 5 minutes, and the alarm judges them.
      target: new schedulerTargets.LambdaInvoke(this.checkFunction, { retryAttempts: 0, role: this.schedulerRole }),
    });
    // The first run needs the key and the deployed API.
    this.schedule.node.addDependency(key, ...props.runsAfter);

    const passed = new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: syntheticMetricNames.passed,
      dimensionsMap: { Stage: stage },
      statistic: "Minimum",
      period: SYNTHETIC_CHECK_INTERVAL,
    });
    const { failedPeriods, outOfPeriods } = props.alarm;
    // A run that did not report counts as a failed one: a check that stopped running (a disabled
    // schedule, a function that cannot start or times out) alarms like a stage that fails it.
    this.alarm = new cloudwatch.Alarm(this, "Alarm", {
      alarmDescription:
        `The ${stage} synthetic check failed, or did not report, in ${failedPeriods} of the last ${outOfPeriods} ` +
        `${SYNTHETIC_CHECK_INTERVAL.toMinutes()}-minute periods: the stage may be down for its clients. ` +
        "The check function's log group names each failed check (docs/alarms.md).",
      metric: passed,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: outOfPeriods,
      datapointsToAlarm: failedPeriods,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    // Missing data as breaching would make a new stage's alarm fire before the check's first run:
    // a page on every first deploy. CloudWatch's warm-up period keeps a new (or updated) alarm in
    // INSUFFICIENT_DATA, without actions, until its evaluation window has filled with data or the
    // period has passed, whichever comes first: a check that runs ends it after its runs fill the
    // window, one that never runs alarms when it ends.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-warm-up.html
    // (cfn-lint 1.51's schema predates the property; CloudFormation's and aws-cdk-lib's have it.)
    const warmUpConfiguration: cloudwatch.CfnAlarm.WarmUpConfigurationProperty = {
      warmUpPeriodDurationInMinutes: syntheticCheckWarmUp(outOfPeriods).toMinutes(),
      onlyStartEvaluatingAfterWarmUpPeriodEnds: false,
    };
    (this.alarm.node.defaultChild as cloudwatch.CfnAlarm).warmUpConfiguration = warmUpConfiguration;
    props.monitoring.notify(this.alarm);
    props.monitoring.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Synthetic check",
        left: [passed.with({ label: "runs passed (1) or failed (0)" })],
        right: [
          new cloudwatch.Metric({
            namespace: METRICS_NAMESPACE,
            metricName: syntheticMetricNames.failedChecks,
            dimensionsMap: { Stage: stage },
            statistic: "Maximum",
            period: SYNTHETIC_CHECK_INTERVAL,
            label: "failed checks",
          }),
        ],
        width: 12,
      }),
    );
  }

  /** Like the API's functions: Node 24 on arm64, JSON logs to a group of its own, an own role, shared bundling. */
  private projectFunction(
    id: string,
    options: {
      entry: string;
      description: string;
      timeout: Duration;
      props: SyntheticCheckProps;
      environment?: Record<string, string>;
    },
  ): NodejsFunction {
    const { props } = options;
    const logGroup = props.logs.logGroup(this, `${id}Logs`);
    const role = new iam.Role(this, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: options.description,
    });
    logGroup.grantWrite(role);
    return new NodejsFunction(this, id, {
      entry: `${props.projectRoot}${options.entry}`,
      handler: "handler",
      projectRoot: props.projectRoot,
      depsLockFilePath: `${props.projectRoot}package-lock.json`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 256,
      timeout: options.timeout,
      role,
      logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      applicationLogLevelV2: props.applicationLogLevel,
      // START and REPORT lines (init duration, memory) are kept, as for the API functions.
      systemLogLevelV2: lambda.SystemLogLevel.INFO,
      tracing: lambda.Tracing.ACTIVE,
      description: options.description,
      // Invoked asynchronously (by the schedule or CloudFormation), where a retry helps nobody.
      retryAttempts: 0,
      reservedConcurrentExecutions: props.reservedConcurrency,
      ...(options.environment ? { environment: options.environment } : {}),
      bundling: cdkBundling(),
    });
  }
}
