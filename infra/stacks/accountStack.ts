/**
 * What API Gateway needs once per account and region, whatever stages run there: the IAM role it
 * writes execution and access logs with, set as the account's API Gateway CloudWatch role
 * (AWS::ApiGateway::Account, a single setting per account and region). Owned here, by one stack,
 * instead of by each stage stack, where whichever stage deployed last would own the setting and the
 * other would drift. Deployed once per account and region, before the stages (docs/deploy.md).
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html
 */
import { type Environment, RemovalPolicy, Stack, type StackProps, Validations } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { ACCOUNT_STACK_NAME, accountStackId, type DeployedStage } from "../deployment";
import type { StageSettings } from "../settings";

export { ACCOUNT_STACK_NAME };

export interface AccountStackProps extends StackProps {
  /** Off only in the test that proves every acknowledgement matches a real finding. */
  readonly acknowledgeNagFindings?: boolean;
}

export class AccountStack extends Stack {
  readonly cloudWatchRole: iam.Role;

  constructor(scope: Construct, id: string, props: AccountStackProps = {}) {
    const { acknowledgeNagFindings = true, ...stackProps } = props;
    super(scope, id, {
      stackName: ACCOUNT_STACK_NAME,
      description: "Pet Store API: account-wide API Gateway settings (the CloudWatch Logs role)",
      // The stages' logging depends on it: deleting it by mistake would stop their execution logs.
      terminationProtection: true,
      ...stackProps,
    });
    this.cloudWatchRole = new iam.Role(this, "ApiGatewayCloudWatchRole", {
      assumedBy: new iam.ServicePrincipal("apigateway.amazonaws.com"),
      description: "Lets API Gateway write execution and access logs to CloudWatch Logs (account-wide setting)",
      managedPolicies: [
        iam.ManagedPolicy.fromAwsManagedPolicyName("service-role/AmazonAPIGatewayPushToCloudWatchLogs"),
      ],
    });
    const account = new apigateway.CfnAccount(this, "ApiGatewayAccount", {
      cloudWatchRoleArn: this.cloudWatchRole.roleArn,
    });
    // Kept if the stack is ever deleted: the setting outlives it, and a role it names must exist. Not
    // kept when the first create rolls back, so that the create can be retried as it is.
    this.cloudWatchRole.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
    account.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);

    if (acknowledgeNagFindings) {
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
  const environments = new Map<string, { env: Environment; stages: DeployedStage[] }>();
  for (const { stage, settings } of stages) {
    const { account, region } = settings;
    const key = `${account ?? ""}/${region ?? ""}`;
    const found = environments.get(key) ?? {
      env: { ...(account === undefined ? {} : { account }), ...(region === undefined ? {} : { region }) },
      stages: [],
    };
    found.stages.push(stage);
    environments.set(key, found);
  }
  return [...environments.values()].map(
    ({ env, stages: served }) => new AccountStack(scope, accountStackId(served), { env, ...options }),
  );
}
