/**
 * The policy findings this project accepts (cdk-nag, and the one Control Tower control it does not
 * meet), each on the narrowest construct and with the reason it is right here.
 * test/infra/nag.test.ts proves each one matches a finding that really occurs.
 */
import { Token, Validations } from "aws-cdk-lib";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { CONTROL_TOWER_PLUGIN } from "./controlTower";
import type { PetStoreStack } from "./petStoreStack";

export function acknowledgeNagFindings(stack: PetStoreStack): void {
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
  Validations.of(stack.api.deploymentStage).acknowledge({
    id: "Serverless::Serverless-APIGWStructuredLogging",
    reason:
      "The access log is JSON once API Gateway substitutes its variables: $context.error.messageString is written unquoted because API Gateway quotes and escapes it itself, so the format string alone is not JSON, which is what this rule parses (infra/stacks/accessLog.ts; test/unit/accessLog.test.ts renders and parses it).",
  });
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
  for (const fn of Object.values(stack.functions)) {
    Validations.of(fn).acknowledge({
      id: `${CONTROL_TOWER_PLUGIN}::lambda_inside_vpc_check`,
      reason:
        "CT.LAMBDA.PR.3 (Lambda in a customer VPC): the functions reach only DynamoDB and CloudWatch, public AWS endpoints reached with IAM-signed TLS, and hold no network-level secrets; a VPC would add NAT or VPC endpoints, cold-start and running costs, and protect nothing here.",
    });
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
