/**
 * The policy findings this project accepts (cdk-nag, and the Control Tower controls it does not
 * meet), each on the narrowest construct and with the reason it is right here.
 * test/infra/nag.test.ts proves each one matches a finding that really occurs.
 */
import { type CfnElement, type Stack, Token, Validations } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as lambda from "aws-cdk-lib/aws-lambda";
import type { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import * as sns from "aws-cdk-lib/aws-sns";
import { CONTROL_TOWER_PLUGIN } from "./controlTower";
import type { EdgeProtection } from "./edgeProtection";
import type { Monitoring } from "./monitoring";
import type { GradualRollout } from "./rollout";
import type { SyntheticCheck } from "./syntheticCheck";

/** What this reads of PetStoreStack, named here because that stack imports this file (no import circle). */
type ServiceStack = Stack & {
  readonly api: apigateway.RestApi;
  readonly functions: Record<string, NodejsFunction>;
  readonly rollout: GradualRollout;
  readonly monitoring: Monitoring;
  readonly edgeProtection: EdgeProtection | undefined;
  readonly syntheticCheck: SyntheticCheck;
};

/** The Control Tower control the stage's functions do not meet, and why. */
const lambdaOutsideVpc = {
  id: `${CONTROL_TOWER_PLUGIN}::lambda_inside_vpc_check`,
  reason:
    "CT.LAMBDA.PR.3 (Lambda in a customer VPC): the functions reach only DynamoDB, Secrets Manager, CloudWatch and the stage's own public URL, public AWS endpoints reached with IAM-signed TLS, and hold no network-level secrets; a VPC would add NAT or VPC endpoints, cold-start and running costs, and protect nothing here.",
};

export function acknowledgeNagFindings(stack: ServiceStack): void {
  Validations.of(stack.api).acknowledge(
    {
      id: "AwsSolutions::AwsSolutions-APIG4",
      reason:
        "Callers present bearer API keys, which every function checks by hash in the bearerAuth Middy middleware (lib/http/middleware/bearerAuth.ts) before any other work; the mock methods only answer 404/405 errors.",
    },
    {
      id: "AwsSolutions::AwsSolutions-COG4",
      reason:
        "Clients are services holding API keys, not Cognito users; keys are issued and revoked with npm run keys.",
    },
  );
  if (Token.isUnresolved(stack.account)) {
    // Only while the stage is not pinned to an account (infra/settings.ts): a pinned stage's
    // permissions name the account literally and pass this control without acknowledgement.
    for (const permission of stack.node.findAll().filter((node) => node instanceof lambda.CfnPermission)) {
      Validations.of(permission).acknowledge({
        id: `${CONTROL_TOWER_PLUGIN}::lambda_function_public_access_prohibited_check`,
        reason:
          "CT.LAMBDA.PR.2 is met: the permission names SourceAccount and SourceArn. In a stack not pinned to an account, SourceAccount is { Ref: AWS::AccountId }, which CloudFormation resolves at deploy time, but the offline Guard rule accepts only a literal string (the validator's README: references may fail its checks). Pin the stage (docs/deploy.md) and this acknowledgement goes away.",
      });
    }
  }
  if (!stack.edgeProtection) {
    Validations.of(stack.api).acknowledge({
      id: "AwsSolutions::AwsSolutions-APIG3",
      reason:
        "This stage has no edge firewall by choice (edgeProtection in infra/config.ts): its callers are testers and load tests, stage throttling caps its rates, and it holds no production data.",
    });
  }
  // Only present when alarm e-mail addresses are configured (infra/settings.ts).
  for (const subscription of stack.monitoring.topic.node.children.filter(
    (child) => child instanceof sns.Subscription,
  )) {
    Validations.of(subscription).acknowledge({
      id: "Serverless::Serverless-SNSRedrivePolicy",
      reason:
        "An alarm e-mail SNS could not deliver would only wait in a dead-letter queue nobody reads; the AlarmDeliveryFailures alarm (NumberOfNotificationsFailed) reports it to the other destinations and the dashboard instead.",
    });
  }
  const { rollout } = stack;
  Validations.of(rollout.serviceRole).acknowledge({
    id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
    reason:
      "Only cloudwatch:DescribeAlarms, a read-only call CodeDeploy makes to poll its rollback alarms, which AWS's own CodeDeploy role policy grants on every alarm (AWSCodeDeployRoleForLambdaLimited); the role's alias actions are on these functions' ARNs only.",
  });
  const synthetic = stack.syntheticCheck;
  Validations.of(synthetic.secret).acknowledge({
    id: "AwsSolutions::AwsSolutions-SMG4",
    reason:
      "The synthetic check's API key is written by the stack's own custom resource, read only by the check function, and re-issued (the old one revoked) whenever that resource is replaced; scheduled rotation would need a rotation function that issues keys through the keys store, which buys nothing over that here.",
  });
  Validations.of(synthetic.schedulerRole).acknowledge({
    id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${stack.getLogicalId(synthetic.checkFunction.node.defaultChild as CfnElement)}.Arn>:*]`,
    reason:
      "The schedule's target (aws-scheduler-targets LambdaInvoke) grants invoking the check function and its versions; the role can invoke nothing else and only this account's schedules may assume it.",
  });
  for (const fn of [synthetic.checkFunction, synthetic.keyFunction]) {
    Validations.of(fn).acknowledge(lambdaOutsideVpc);
    Validations.of(fn).acknowledge(
      {
        id: "Serverless::Serverless-LambdaDLQ",
        reason:
          fn === synthetic.checkFunction
            ? "A failed or missing run of the synthetic check is what its alarm reports; the next run is due in 5 minutes, so there is nothing to keep and retry."
            : "CloudFormation invokes the key provisioner and waits for its answer: a failure fails the deployment, which is retried as a whole, not event by event.",
      },
      {
        id: "Serverless::Serverless-LambdaAsyncFailureDestination",
        reason:
          "Asynchronous retries are switched off on purpose (retryAttempts 0): a retried synthetic run would hammer a failing stage, a retried key provisioning would issue a second key; failures surface as the alarm or the failed deployment.",
      },
    );
    if (fn.role) {
      Validations.of(fn.role).acknowledge({
        id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason:
          "X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) has no resource-level permissions; the secret and the table are named by ARN.",
      });
    }
  }
  for (const fn of Object.values(stack.functions)) {
    Validations.of(fn).acknowledge(lambdaOutsideVpc);
    Validations.of(fn).acknowledge({
      id: "Serverless::Serverless-LambdaDLQ",
      reason:
        "Invoked synchronously by API Gateway only: a failure is answered to the client, so there is no asynchronous event to dead-letter.",
    });
    if (fn.role) {
      Validations.of(fn.role).acknowledge({
        id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason:
          "X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) has no resource-level permissions; DynamoDB access is scoped to the table, its index and its partitions.",
      });
    }
  }
}
