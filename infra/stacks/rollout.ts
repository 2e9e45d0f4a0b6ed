/**
 * Gradual rollout with automatic rollback. Each API function serves through its alias `live`; a new
 * version reaches clients only through a CodeDeploy deployment of that alias, which CloudFormation
 * starts when the alias's version changes (the alias's CodeDeployLambdaAliasUpdate update policy)
 * and waits for. CodeDeploy shifts traffic as the stage's config says (a canary in production, all
 * at once in staging), watches the rollback alarms below throughout, and puts the alias back on the
 * old version when one fires; the CloudFormation update then fails and rolls the stack back.
 * https://docs.aws.amazon.com/codedeploy/latest/userguide/deployment-steps-lambda.html
 * How to watch, stop and roll back by hand: docs/delivery.md.
 */
import { Duration, Stack } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as cloudwatchActions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as codedeploy from "aws-cdk-lib/aws-codedeploy";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { METRICS_NAMESPACE, metricNames } from "../../lib/observability/metrics";
import type { DeployedStageName } from "../deployment";

/** The alias API Gateway invokes: the version clients get. */
export const LIVE_ALIAS = "live";

/** How CodeDeploy moves an alias to a new version. */
export type TrafficShifting =
  | { readonly type: "allAtOnce" }
  /** `percentage` of requests go to the new version for `interval`, then all of them. */
  | { readonly type: "canary"; readonly percentage: number; readonly interval: Duration };

export interface RolloutConfig {
  readonly trafficShifting: TrafficShifting;
  /**
   * Failed requests in one minute (5xx answers and failed invocations) from which a rollback alarm
   * fires, provided they are also more than the stage's accepted 5xx share of that minute's
   * requests. An absolute count, so that the alarm can fire on the few requests a canary gets at
   * low traffic; the share, so that background failures at high traffic do not.
   */
  readonly failuresToRollBack: number;
}

export interface GradualRolloutProps {
  readonly stage: DeployedStageName;
  readonly api: apigateway.RestApi;
  /** The name of the API's stage (`v1`). */
  readonly stageName: string;
  /** Each API function's `live` alias, by operation id. */
  readonly aliases: Readonly<Record<string, lambda.Alias>>;
  readonly config: RolloutConfig;
  /** The share of 5xx answers the stage accepts (monitoring's serverErrorRate): above it, a deployment is rolled back. */
  readonly serverErrorRate: number;
  /** This deploy shifts traffic without watching the rollback alarms (infra/settings.ts, ignoreRollbackAlarms). */
  readonly ignoreRollbackAlarms: boolean;
  /** Where the rollback alarms send their state changes: a topic nobody is paged from (./monitoring.ts). */
  readonly eventsTopic: sns.ITopic;
}

/**
 * One minute: a rollback alarm must be able to fire within a 5-minute canary. (The paging alarms in
 * ./monitoring.ts cannot: they need 50 requests in each of two 5-minute periods.)
 */
const ROLLBACK_PERIOD = Duration.minutes(1);

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

export class GradualRollout extends Construct {
  readonly application: codedeploy.LambdaApplication;
  readonly deploymentConfig: codedeploy.ILambdaDeploymentConfig;
  readonly deploymentGroups: Record<string, codedeploy.LambdaDeploymentGroup> = {};
  /** The role CodeDeploy deploys with: it may move these aliases and read alarms, nothing else. */
  readonly serviceRole: iam.Role;
  /** The stage's 5xx answers, gateway errors included: judges every function's deployment. */
  readonly stageRollbackAlarm: cloudwatch.Alarm;
  /** Each function's failures through its alias, by operation id. */
  readonly functionRollbackAlarms: Record<string, cloudwatch.Alarm> = {};

  constructor(scope: Construct, id: string, props: GradualRolloutProps) {
    super(scope, id);
    const { stage, api, aliases, config } = props;
    if (!Number.isInteger(config.failuresToRollBack) || config.failuresToRollBack < 1) {
      throw new Error(`rollout.failuresToRollBack of the ${stage} stage must be a whole number of at least 1.`);
    }

    this.application = new codedeploy.LambdaApplication(this, "Application", {
      applicationName: `petstore-${stage}`,
    });
    this.deploymentConfig = this.deploymentConfigFor(config.trafficShifting, stage);

    this.serviceRole = new iam.Role(this, "ServiceRole", {
      assumedBy: new iam.ServicePrincipal("codedeploy.amazonaws.com", {
        conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
      }),
      description: `CodeDeploy shifts the Pet Store ${stage} functions' live aliases`,
    });

    // 1 in a minute with at least `failuresToRollBack` failures that are also more than the accepted
    // share of its requests, else 0 (metric math IF and comparisons:
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html).
    const rollsBack = (failures: string, requests: string) =>
      `IF(${failures} >= ${config.failuresToRollBack}, IF(${failures} > ${props.serverErrorRate} * ${requests}, 1, 0), 0)`;
    // These judge deployments and are not pages: CodeDeploy acts on them (it polls their state), and
    // a rollback fails the deploy, which the pipeline reports. Their only action is the stage's
    // deployment events topic, which pages nobody; the paging alarms (./monitoring.ts) are unchanged.
    const notifyEvents = new cloudwatchActions.SnsAction(props.eventsTopic);
    const rollbackAlarm = (alarmId: string, description: string, expression: cloudwatch.MathExpression) => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        alarmDescription: description,
        metric: expression,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      created.addAlarmAction(notifyEvents);
      created.addOkAction(notifyEvents);
      return created;
    };
    const judgedBy = `${config.failuresToRollBack} or more in a minute, and more than ${props.serverErrorRate * 100}% of that minute's`;

    // The stage's metrics by its names, not by references to the API's resources: the aliases'
    // deployment groups depend on this alarm, and the API's methods depend on the aliases.
    const stageMetric = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: "AWS/ApiGateway",
        metricName,
        dimensionsMap: { ApiName: api.restApiName, Stage: props.stageName },
        statistic: "Sum",
        period: ROLLBACK_PERIOD,
      });
    this.stageRollbackAlarm = rollbackAlarm(
      "StageServerErrorsRollback",
      `Rolls back a deployment of the ${stage} functions: ${judgedBy} requests answered 5xx by the stage (gateway errors included). Not a page (docs/delivery.md).`,
      new cloudwatch.MathExpression({
        expression: rollsBack("FILL(errors, 0)", "FILL(requests, 0)"),
        usingMetrics: { errors: stageMetric("5XXError"), requests: stageMetric("Count") },
        label: "stage 5xx beyond the rollback limit",
        period: ROLLBACK_PERIOD,
      }),
    );

    const statements: iam.PolicyStatement[] = [];
    for (const [operation, alias] of Object.entries(aliases)) {
      const name = pascal(operation);
      // The handler's own 5xx answers (Embedded Metric Format, lib/observability/metrics.ts) and
      // invocations that failed without one (crash, timeout), over all invocations through the
      // alias. CloudWatch cannot split the handler's answers by version, so a failing old version
      // stops a deployment too: the safe side.
      const alarm = rollbackAlarm(
        `${name}FailuresRollback`,
        `Rolls back a deployment of ${operation}: ${judgedBy} invocations of its ${LIVE_ALIAS} alias failed or answered 5xx. Not a page (docs/delivery.md).`,
        new cloudwatch.MathExpression({
          expression: rollsBack("(FILL(answered5xx, 0) + FILL(crashed, 0))", "FILL(invocations, 0)"),
          usingMetrics: {
            answered5xx: new cloudwatch.Metric({
              namespace: METRICS_NAMESPACE,
              metricName: metricNames.serverErrors,
              dimensionsMap: { Stage: stage, Operation: operation },
              statistic: "Sum",
              period: ROLLBACK_PERIOD,
            }),
            crashed: alias.metricErrors({ statistic: "Sum", period: ROLLBACK_PERIOD }),
            invocations: alias.metricInvocations({ statistic: "Sum", period: ROLLBACK_PERIOD }),
          },
          label: `${operation} failures beyond the rollback limit`,
          period: ROLLBACK_PERIOD,
        }),
      );
      this.functionRollbackAlarms[operation] = alarm;

      const group = new codedeploy.LambdaDeploymentGroup(this, `${name}Deployment`, {
        application: this.application,
        deploymentGroupName: operation,
        alias,
        deploymentConfig: this.deploymentConfig,
        alarms: [alarm, this.stageRollbackAlarm],
        // While the stage fails, its rollback alarms are in ALARM and would roll back the very deploy
        // that fixes it; that one deploy can ignore them (docs/delivery.md).
        ignoreAlarmConfiguration: props.ignoreRollbackAlarms,
        autoRollback: {
          failedDeployment: true,
          stoppedDeployment: true,
          deploymentInAlarm: !props.ignoreRollbackAlarms,
        },
        // The construct would attach AWSCodeDeployRoleForLambdaLimited, which may move every alias
        // in the account; the role gets exactly what it needs below instead.
        role: this.serviceRole.withoutPolicyUpdates(),
      });
      // The group's alarm setting must be in place before CloudFormation asks it to move the alias.
      alias.node.addDependency(group);
      this.deploymentGroups[operation] = group;
      // What AWSCodeDeployRoleForLambdaLimited grants for Lambda deployments, on these aliases only
      // (no hooks, no S3 revisions here):
      // https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSCodeDeployRoleForLambdaLimited.html
      // Lambda authorises alias actions on the function's ARN, and accepts the qualified one too:
      // https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html
      statements.push(
        new iam.PolicyStatement({
          actions: ["lambda:GetAlias", "lambda:UpdateAlias", "lambda:GetProvisionedConcurrencyConfig"],
          resources: [alias.version.lambda.functionArn, alias.functionArn],
        }),
      );
    }
    for (const statement of statements) this.serviceRole.addToPrincipalPolicy(statement);
    // CodeDeploy reads its alarms' states with DescribeAlarms, a read-only call that AWS's own
    // policy grants on every alarm (see nagAcknowledgements.ts).
    this.serviceRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["cloudwatch:DescribeAlarms"], resources: ["*"] }),
    );
  }

  private deploymentConfigFor(shifting: TrafficShifting, stage: DeployedStageName) {
    if (shifting.type === "allAtOnce") return codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE;
    const { percentage, interval } = shifting;
    const minutes = interval.toMinutes({ integral: false });
    // CodeDeploy's limits for a time-based canary: a whole percentage below 100, whole minutes.
    if (
      !Number.isInteger(percentage) ||
      percentage < 1 ||
      percentage > 99 ||
      !Number.isInteger(minutes) ||
      minutes < 1
    ) {
      throw new Error(
        `rollout.trafficShifting of the ${stage} stage: a canary needs a whole percentage from 1 to 99 and an interval of whole minutes.`,
      );
    }
    return new codedeploy.LambdaDeploymentConfig(this, "Canary", {
      trafficRouting: codedeploy.TrafficRouting.timeBasedCanary({ percentage, interval }),
    });
  }
}

/** The longest a traffic shift of this stage takes before CodeDeploy finishes (or rolls back). */
export function trafficShiftingDuration(shifting: TrafficShifting): Duration {
  return shifting.type === "canary" ? shifting.interval : Duration.minutes(0);
}
