/**
 * What API Gateway needs once per account and region, whatever stages run there: the IAM role it
 * writes execution and access logs with, set as the account's API Gateway CloudWatch role
 * (AWS::ApiGateway::Account, a single setting per account and region). Owned here, by one stack,
 * instead of by each stage stack, where whichever stage deployed last would own the setting and the
 * other would drift. Deployed once per account and region, before the stages (docs/deploy.md).
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html
 *
 * An account that already has such a role (another team's API set the setting up) keeps it: with
 * `<stage>:apiGatewayCloudWatchRoleArn` the stack creates no role and points the setting at that
 * one, which leaves it as it is, instead of taking the setting over with a role of its own.
 */
import { type Environment, RemovalPolicy, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { ACCOUNT_STACK_NAME, accountStackId, type DeployedStage } from "../deployment";
import { contextKey, SettingsError, type StageSettings } from "../settings";
import { costTags, tagResources } from "../tags";

export { ACCOUNT_STACK_NAME };

export interface AccountStackProps extends StackProps {
  /** Off only in the test that proves every acknowledgement matches a real finding. */
  readonly acknowledgeNagFindings?: boolean;
  /** The role the account already has, adopted instead of creating one. */
  readonly existingCloudWatchRoleArn?: string;
}

export class AccountStack extends Stack {
  /** The role it created; undefined when it adopted the account's existing one. */
  readonly cloudWatchRole: iam.Role | undefined;

  constructor(scope: Construct, id: string, props: AccountStackProps = {}) {
    const { acknowledgeNagFindings = true, existingCloudWatchRoleArn, ...stackProps } = props;
    super(scope, id, {
      stackName: ACCOUNT_STACK_NAME,
      description: "Pet Store API: account-wide API Gateway settings (the CloudWatch Logs role)",
      // No termination protection: what it holds is retained when it is deleted (below), so a delete
      // loses nothing, and a failed first create must stay retryable by the same deploy, which the
      // CDK CLI does by deleting the failed stack first (docs/deploy.md, "A first create that fails").
      terminationProtection: false,
      ...stackProps,
    });
    this.cloudWatchRole = existingCloudWatchRoleArn
      ? undefined
      : new iam.Role(this, "ApiGatewayCloudWatchRole", {
          assumedBy: new iam.ServicePrincipal("apigateway.amazonaws.com"),
          description: "Lets API Gateway write execution and access logs to CloudWatch Logs (account-wide setting)",
          managedPolicies: [
            iam.ManagedPolicy.fromAwsManagedPolicyName("service-role/AmazonAPIGatewayPushToCloudWatchLogs"),
          ],
        });
    const account = new apigateway.CfnAccount(this, "ApiGatewayAccount", {
      cloudWatchRoleArn: this.cloudWatchRole?.roleArn ?? (existingCloudWatchRoleArn as string),
    });
    // Kept if the stack is ever deleted: the setting outlives it, and a role it names must exist. Not
    // kept when the first create rolls back, so that the create can be retried as it is.
    this.cloudWatchRole?.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
    account.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);

    if (acknowledgeNagFindings && this.cloudWatchRole) {
      Validations.of(this.cloudWatchRole).acknowledge({
        id: "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        reason:
          "The account-wide role API Gateway uses to write execution logs; this AWS managed policy is the documented one and covers log groups API Gateway names itself.",
      });
    }
  }
}

/**
 * One account stack per account and region the stages are pinned to (staging and production may
 * share one); an unpinned stage's is environment-agnostic, deployed wherever the credentials point.
 * Its id names the stages it serves (accountStackId), so that one selector per stage,
 * accountStackSelector (`'PetStore-Account-*Production*'`), finds it in every pinning combination;
 * in CloudFormation each is named `PetStore-Account`.
 */
export function addAccountStacks(
  scope: Construct,
  stages: readonly { readonly stage: DeployedStage; readonly settings: StageSettings }[],
  options: { acknowledgeNagFindings?: boolean } = {},
): AccountStack[] {
  const environments = new Map<
    string,
    { env: Environment; stages: DeployedStage[]; adopted: { stage: DeployedStage; arn: string }[] }
  >();
  for (const { stage, settings } of stages) {
    const { account, region } = settings;
    const key = `${account ?? ""}/${region ?? ""}`;
    const found = environments.get(key) ?? {
      env: { ...(account === undefined ? {} : { account }), ...(region === undefined ? {} : { region }) },
      stages: [],
      adopted: [],
    };
    found.stages.push(stage);
    if (settings.apiGatewayCloudWatchRoleArn) found.adopted.push({ stage, arn: settings.apiGatewayCloudWatchRoleArn });
    environments.set(key, found);
  }
  return [...environments.values()].map(({ env, stages: served, adopted }) => {
    const arns = new Set(adopted.map((entry) => entry.arn));
    if (arns.size > 1) {
      throw new SettingsError(
        `Invalid deployment settings: ${adopted.map((entry) => contextKey(entry.stage.stage, "apiGatewayCloudWatchRoleArn")).join(" and ")} name different roles, but the stages share one account and region, which has one such setting.`,
      );
    }
    const [existingCloudWatchRoleArn] = arns;
    const tags = costTags(served.map((stage) => stage.stage));
    const stack = new AccountStack(scope, accountStackId(served), {
      env,
      tags,
      ...options,
      ...(existingCloudWatchRoleArn === undefined ? {} : { existingCloudWatchRoleArn }),
    });
    tagResources(stack, tags);
    return stack;
  });
}
