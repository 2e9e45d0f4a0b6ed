/**
 * Grants the rehearsal does not see used, each kept on purpose and reviewed: a permission the code
 * needs only on a path no scenario reaches, or one AWS requires without a call the rehearsal can
 * make. Everything else a role is granted must be used by a rehearsed call, or the rehearsal fails.
 * An allowance that matches nothing fails the rehearsal too, so none outlives its reason.
 *
 * `role` is the role's construct path after the stage (`PetStore/CreatePetRole`; an account
 * stack's role keeps its stack's name), `actions` and `resource` IAM wildcard patterns over the
 * granted action and the statement's resource pattern (or, for a generated must-deny call, the
 * resource's ARN).
 */
export interface Allowance {
  readonly role: string;
  readonly actions: readonly string[];
  readonly resource: string;
  readonly reason: string;
}

export const allowances: readonly Allowance[] = [
  {
    role: "PetStore/CreatePetRole",
    actions: ["dynamodb:GetItem"],
    resource: "arn:aws:dynamodb:*:*:table/petstore-*",
    reason:
      "insertPet (lib/pets/service.ts) reads a pet back when its conditional put finds the id taken: an SDK retry whose answer was lost, or a resumed idempotent create. The scenario's creates never collide.",
  },
  {
    role: "PetStore/CreatePetRole",
    actions: ["dynamodb:DeleteItem"],
    resource: "arn:aws:dynamodb:*:*:table/petstore-*",
    reason:
      "forget (lib/idempotency/dynamoStore.ts) deletes an IDEMPOTENCY# claim when a create fails before storing its pet, so that a retry with the same key is not stuck. The scenario's creates do not fail.",
  },
  {
    role: "PetStore/Rollout/ServiceRole",
    actions: ["lambda:GetAlias", "lambda:UpdateAlias", "lambda:GetProvisionedConcurrencyConfig"],
    resource: "arn:aws:lambda:*:*:function:*",
    reason:
      "CodeDeploy's traffic shifting, as the CDK's LambdaDeploymentGroup grants it (the actions of AWS's AWSCodeDeployRoleForLambdaLimited, on each function and alias it shifts). The rehearsal checks the alias reads and updates, not a rollout itself, which only a real deploy shows.",
  },
  {
    role: "PetStore/SyntheticCheck/SchedulerRole",
    actions: ["lambda:InvokeFunction"],
    resource: "arn:aws:lambda:*:*:function:*:*",
    reason:
      "The CDK's grantInvoke adds the function's qualified ARNs (versions and aliases) beside the function's own; the schedule targets the unqualified function, whose invocation is rehearsed.",
  },
  {
    role: "PetStore-Account-*/ApiGatewayCloudWatchRole",
    actions: ["logs:*"],
    resource: "*",
    reason:
      "API Gateway's account-wide logging role (AWS::ApiGateway::Account) with AWS's managed policy AmazonAPIGatewayPushToCloudWatchLogs, as API Gateway requires for execution and access logs (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html). API Gateway writes with it; no function does.",
  },
];
