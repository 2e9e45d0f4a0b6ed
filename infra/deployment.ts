/**
 * How a deployed stage is found from outside the CDK app (keys CLI, smoke tests, people): its
 * CloudFormation stack name and the names of the stack outputs. Kept free of aws-cdk-lib so that
 * the CLIs start quickly.
 */
import type { StageName } from "../lib/config";

export type DeployedStageName = Exclude<StageName, "local">;

export interface DeployedStage {
  /** CDK stage id: `npx cdk deploy 'Staging/*'`. */
  readonly id: "Staging" | "Production";
  /** What the functions call their stage: names it in API keys and metrics. */
  readonly stage: DeployedStageName;
  /** CloudFormation stack name, what DescribeStacks and the console show. */
  readonly stackName: string;
  /**
   * The CloudFormation stack holding the stage's data (the table), created before `stackName` and
   * deployed by the same selector. Kept apart so that a failed first create of the service stack
   * never has to delete a protected table (docs/deploy.md, "A first create that fails").
   */
  readonly dataStackName: string;
  /** The stage's DynamoDB table, named so that it is never replaced silently (infra/stacks/dataStack.ts). */
  readonly tableName: string;
  /**
   * The GitHub environment that deploys it (.github/workflows/deploy.yml): its required reviewers
   * gate the deploy, and its deploy role trusts only that environment (infra/stacks/deliveryAccessStack.ts).
   */
  readonly githubEnvironment: "staging" | "production";
  /**
   * For a stage deployed only after a person approves it: the GitHub environment of the job that
   * runs before the approval is requested, with read-only access to the stage's account (the
   * pre-flight checks and the template diff the approver reads). None for a stage without approval.
   */
  readonly previewEnvironment?: "production-preview";
}

export const deployedStages: Readonly<Record<DeployedStageName, DeployedStage>> = {
  staging: {
    id: "Staging",
    stage: "staging",
    stackName: "Staging-PetStore",
    dataStackName: "Staging-PetStoreData",
    tableName: "petstore-staging",
    githubEnvironment: "staging",
  },
  prod: {
    id: "Production",
    stage: "prod",
    stackName: "Production-PetStore",
    dataStackName: "Production-PetStoreData",
    tableName: "petstore-prod",
    githubEnvironment: "production",
    previewEnvironment: "production-preview",
  },
};

/**
 * The alarm `npm run alarms:verify -- --stage <stage>` sets to ALARM to prove that notifications
 * arrive (scripts/alarmsVerify): a fixed name, so that the command and the deploy role's policy
 * (infra/stacks/deliveryAccessStack.ts) can name it without reading the stack (infra/stacks/monitoring.ts).
 */
export const alarmDeliveryTestAlarmName = (stage: DeployedStageName): string => `petstore-${stage}-alarm-delivery-test`;

/**
 * The subscription filter policy (FilterPolicyScope `MessageBody`) that keeps the delivery test's
 * notification from every subscriber of a paging topic, so that the test publishes through the
 * paging topics' own policy and key and still pages nobody. SNS applies a MessageBody policy to the
 * JSON message CloudWatch publishes, whose `AlarmName` names the alarm; `anything-but` lets every
 * other alarm through. https://docs.aws.amazon.com/sns/latest/dg/sns-message-filtering-scope.html,
 * https://docs.aws.amazon.com/sns/latest/dg/string-value-matching.html (anything-but);
 * the notification's fields: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html.
 * The stack sets it on the subscriptions it creates (infra/stacks/monitoring.ts); `npm run
 * alarms:verify` requires it on every confirmed subscription of a paging topic (scripts/alarmsVerify).
 */
export const alarmDeliveryTestFilterPolicy = (stage: DeployedStageName) => ({
  AlarmName: [{ "anything-but": [alarmDeliveryTestAlarmName(stage)] }],
});

/** The account stack's CloudFormation name, in every account and region it is deployed to (infra/stacks/accountStack.ts). */
export const ACCOUNT_STACK_NAME = "PetStore-Account";

/**
 * The id (what `cdk deploy` selects) of the account stack that serves these stages: the stack's name
 * followed by the ids of the stages pinned to its account and region, `PetStore-Account-Staging-Production`
 * when they share one (or none is pinned), else `PetStore-Account-Staging` and
 * `PetStore-Account-Production`.
 */
export const accountStackId = (stages: readonly DeployedStage[]): string =>
  [ACCOUNT_STACK_NAME, ...stages.map((stage) => stage.id)].join("-");

/**
 * Selects the one account stack a stage deploys into, whatever is pinned where:
 * `npx cdk deploy 'PetStore-Account-*Production*'`. Deployed before the stage, by the pipeline too.
 */
export const accountStackSelector = (stage: DeployedStage): string => `${ACCOUNT_STACK_NAME}-*${stage.id}*`;

/** Output keys of each stage's stack. */
export const STACK_OUTPUTS = {
  /** The API's public base URL, ending in /v1: the custom domain's when the stage has one. */
  baseUrl: "BaseUrl",
  /** The default `https://<api-id>.execute-api.<region>.amazonaws.com/v1`, while it is enabled. */
  executeApiUrl: "ExecuteApiUrl",
  /** The name a custom domain's DNS record must point at, when Route 53 does not manage the record. */
  customDomainTarget: "CustomDomainTarget",
  tableName: "TableName",
  alarmTopicArn: "AlarmTopicArn",
  /** The non-paging topic the rollback alarms notify (docs/alarms.md). */
  deploymentEventsTopicArn: "DeploymentEventsTopicArn",
  dashboardName: "DashboardName",
} as const;
