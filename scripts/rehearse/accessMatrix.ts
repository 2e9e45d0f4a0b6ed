/**
 * The access matrix: who may do what in a deployed stage, and why; the rehearsal proves the templates against it
 * (./proof.ts). Written apart from the CDK code on purpose, as a test's expected value is. Principals and resources are
 * construct paths within their stage (`PetStore/ListPetsRole`) or the account stack; in ARN templates `{arn:PATH}`,
 * `{ref:PATH}`, `{account}`, `{region}` and `{stackName}` are filled in. A `*` is IAM's wildcard, meaning what the
 * row's reason says.
 */
import { tableAreas } from "../../lib/db/table";

export type Principal =
  /** A role (or user or group) of the assembly, by construct path. */
  | { readonly role: string }
  /** An AWS service principal; `{region}` allowed (`logs.{region}.amazonaws.com`). */
  | { readonly service: string }
  /** The stage's own account, as a key policy names it: IAM policies of the account then decide. */
  | { readonly account: "own" };

export interface AccessRow {
  readonly principal: Principal;
  /** IAM actions; a wildcard only where the template grants exactly that wildcard. */
  readonly actions: readonly string[];
  /** ARN templates; `*` alone for actions that take no resource. */
  readonly resources: readonly string[];
  /** `dynamodb:LeadingKeys` patterns the row allows; rows without it are not partition-scoped. */
  readonly partitions?: readonly string[];
  /** Request context a service's call carries (`aws:SourceArn` …), as ARN-template patterns. */
  readonly source?: Readonly<Record<string, string>>;
  readonly reason: string;
  /** Why no rehearsed call exercises the row; a row without it must be exercised. */
  readonly unexercised?: string;
}

/** Which role each function of a stage runs with: a function with another role, or a shared one, fails. */
export const functionRoles: Readonly<Record<string, string>> = {
  "PetStore/ListPetsFunction": "PetStore/ListPetsRole",
  "PetStore/CreatePetFunction": "PetStore/CreatePetRole",
  "PetStore/GetPetFunction": "PetStore/GetPetRole",
  "PetStore/SyntheticCheck/KeyFunction": "PetStore/SyntheticCheck/KeyFunctionRole",
  "PetStore/SyntheticCheck/CheckFunction": "PetStore/SyntheticCheck/CheckFunctionRole",
};

const TABLE = "{arn:PetStoreData/Table}";
const partitions = (area: keyof typeof tableAreas): readonly string[] => {
  const definition = tableAreas[area];
  return "partitionKeys" in definition ? definition.partitionKeys : [];
};
const PETS = [...partitions("pets"), ...partitions("syntheticPets")];
const API_KEYS = partitions("apiKeys");
const KEY_USES = partitions("keyUses");

/** What Lambda does with every function's role: write the function's logs and, with active tracing, its traces. */
function runsFunction(name: string, role: string, logs: string): AccessRow[] {
  return [
    {
      principal: { role },
      actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
      resources: [`{arn:${logs}}:log-stream:*`],
      reason: `Lambda writes ${name}'s logs to its own log group, no other`,
    },
    {
      principal: { role },
      actions: ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
      resources: ["*"],
      reason: `Lambda sends ${name}'s traces (active tracing); X-Ray's actions take no resource`,
    },
    {
      principal: { service: "lambda.amazonaws.com" },
      actions: ["sts:AssumeRole"],
      resources: [`{arn:${role}}`],
      reason: `Lambda runs ${name} with its own role`,
    },
  ];
}

/** An API operation's function: read the caller's key record (APIKEY partition) and record its use (KEYUSE). */
function apiFunction(operation: string, method: string, path: string): AccessRow[] {
  const role = `PetStore/${operation}Role`;
  return [
    ...runsFunction(operation, role, `PetStore/${operation}Logs`),
    {
      principal: { role },
      actions: ["dynamodb:GetItem"],
      resources: [TABLE],
      partitions: API_KEYS,
      reason: "looks up the bearer key's hash (lib/auth/dynamoApiKeyStore.ts); never writes a key record",
    },
    {
      principal: { role },
      actions: ["dynamodb:UpdateItem"],
      resources: [TABLE],
      partitions: KEY_USES,
      reason: "records the day's first use of a key for its operation (lib/auth/dynamoKeyUsageStore.ts)",
    },
    {
      principal: { service: "apigateway.amazonaws.com" },
      actions: ["lambda:InvokeFunction"],
      resources: [`{ref:PetStore/${operation}Function/Aliaslive}`],
      source: {
        "aws:SourceArn": `arn:aws:execute-api:{region}:{account}:{ref:PetStore/Api}/v1/${method}/${path}`,
        "aws:SourceAccount": "{account}",
      },
      reason: `the stage's API invokes the live alias for ${method} /${path}, from that method only`,
    },
  ];
}

// The GitHub deploy roles (PetStore-DeliveryAccess) have no rows: the rehearsal synthesizes no githubRepository, so
// has no such role; test/infra/deliveryAccess.test.ts holds each of their statements exactly.
export const accessMatrix: readonly AccessRow[] = [
  ...apiFunction("ListPets", "GET", "pets"),
  {
    principal: { role: "PetStore/ListPetsRole" },
    actions: ["dynamodb:Query"],
    resources: [TABLE],
    partitions: PETS,
    reason: "lists the caller's collection: the shared PET partition, or a synthetic key's own",
  },
  {
    principal: { role: "PetStore/ListPetsRole" },
    actions: ["dynamodb:Query"],
    resources: [`${TABLE}/index/byStatus`],
    reason: "filters by status; the sparse index holds pet items only",
  },
  ...apiFunction("CreatePet", "POST", "pets"),
  {
    principal: { role: "PetStore/CreatePetRole" },
    actions: ["dynamodb:PutItem"],
    resources: [TABLE],
    partitions: PETS,
    reason: "stores a new pet in the caller's collection",
  },
  {
    principal: { role: "PetStore/CreatePetRole" },
    actions: ["dynamodb:GetItem"],
    resources: [TABLE],
    partitions: PETS,
    reason: "reads a pet back when its conditional put finds the id taken (lib/pets/service.ts)",
    unexercised: "only a retried create whose first answer was lost collides; the scenario's creates never do",
  },
  {
    principal: { role: "PetStore/CreatePetRole" },
    actions: ["dynamodb:UpdateItem"],
    resources: [TABLE],
    partitions: partitions("petIdCounter"),
    reason: "takes the next pet id from the counter",
  },
  {
    principal: { role: "PetStore/CreatePetRole" },
    actions: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem"],
    resources: [TABLE],
    partitions: partitions("idempotencyRecords"),
    reason: "claims, completes and replays idempotency keys (lib/idempotency/dynamoStore.ts)",
  },
  {
    principal: { role: "PetStore/CreatePetRole" },
    actions: ["dynamodb:DeleteItem"],
    resources: [TABLE],
    partitions: partitions("idempotencyRecords"),
    reason: "forgets a claim when a create fails before storing its pet, so a retry is not stuck",
    unexercised: "the scenario's creates do not fail between the claim and the pet",
  },
  ...apiFunction("GetPet", "GET", "pets/*"),
  {
    principal: { role: "PetStore/GetPetRole" },
    actions: ["dynamodb:GetItem"],
    resources: [TABLE],
    partitions: PETS,
    reason: "reads one pet of the caller's collection",
  },

  // The synthetic check: a key provisioned at deploy time, a scheduled run that uses it.
  ...runsFunction(
    "the key provisioner",
    "PetStore/SyntheticCheck/KeyFunctionRole",
    "PetStore/SyntheticCheck/KeyFunctionLogs",
  ),
  {
    principal: { role: "PetStore/SyntheticCheck/KeyFunctionRole" },
    actions: ["dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"],
    resources: [TABLE],
    partitions: API_KEYS,
    reason: "issues the check's synthetic key and revokes the previous generation; API key records only",
  },
  {
    principal: { role: "PetStore/SyntheticCheck/KeyFunctionRole" },
    actions: ["secretsmanager:PutSecretValue"],
    resources: ["{ref:PetStore/SyntheticCheck/ApiKey}"],
    reason: "stores the new key for the check; it never reads it back",
  },
  ...runsFunction(
    "the synthetic check",
    "PetStore/SyntheticCheck/CheckFunctionRole",
    "PetStore/SyntheticCheck/CheckFunctionLogs",
  ),
  {
    principal: { role: "PetStore/SyntheticCheck/CheckFunctionRole" },
    actions: ["secretsmanager:GetSecretValue"],
    resources: ["{ref:PetStore/SyntheticCheck/ApiKey}"],
    reason: "reads its key; it calls the API like a client and never the table",
  },
  {
    principal: { service: "scheduler.amazonaws.com" },
    actions: ["sts:AssumeRole"],
    resources: ["{arn:PetStore/SyntheticCheck/SchedulerRole}"],
    source: { "aws:SourceAccount": "{account}" },
    reason: "the check's schedule runs with its role, for this account's schedules only",
  },
  {
    principal: { role: "PetStore/SyntheticCheck/SchedulerRole" },
    actions: ["lambda:InvokeFunction"],
    resources: ["{arn:PetStore/SyntheticCheck/CheckFunction}"],
    reason: "the schedule invokes the check",
  },
  {
    principal: { role: "PetStore/SyntheticCheck/SchedulerRole" },
    actions: ["lambda:InvokeFunction"],
    resources: ["{arn:PetStore/SyntheticCheck/CheckFunction}:*"],
    reason: "the CDK's grantInvoke adds the check's versions and aliases beside the function itself",
    unexercised: "the schedule targets the unqualified function",
  },

  // Deployments and alarms.
  {
    principal: { service: "codedeploy.amazonaws.com" },
    actions: ["sts:AssumeRole"],
    resources: ["{arn:PetStore/Rollout/ServiceRole}"],
    source: { "aws:SourceAccount": "{account}" },
    reason: "CodeDeploy shifts the live aliases with its role, for this account only",
    unexercised: "a rollout is a real deploy's, not the rehearsal's",
  },
  {
    principal: { role: "PetStore/Rollout/ServiceRole" },
    actions: ["lambda:GetAlias", "lambda:UpdateAlias", "lambda:GetProvisionedConcurrencyConfig"],
    resources: ["ListPets", "CreatePet", "GetPet"].flatMap((operation) => [
      `{arn:PetStore/${operation}Function}`,
      `{ref:PetStore/${operation}Function/Aliaslive}`,
    ]),
    reason:
      "traffic shifting on the three API functions and their live aliases (AWSCodeDeployRoleForLambdaLimited's actions)",
    unexercised: "a rollout is a real deploy's, not the rehearsal's",
  },
  {
    principal: { role: "PetStore/Rollout/ServiceRole" },
    actions: ["cloudwatch:DescribeAlarms"],
    resources: ["*"],
    reason: "CodeDeploy polls the rollback alarms; DescribeAlarms is granted on every alarm by AWS's own policy",
    unexercised: "a rollout is a real deploy's, not the rehearsal's",
  },
  {
    principal: { service: "cloudwatch.amazonaws.com" },
    actions: ["sns:Publish"],
    resources: ["{ref:PetStore/Monitoring/AlarmTopic}", "{ref:PetStore/Monitoring/DeploymentEventsTopic}"],
    source: { "aws:SourceArn": "arn:aws:cloudwatch:{region}:{account}:alarm:*", "aws:SourceAccount": "{account}" },
    reason: "the account's alarms notify the stage's topics; another account's alarms are refused",
    unexercised: "alarms change state only in AWS",
  },
  {
    principal: { service: "cloudwatch.amazonaws.com" },
    actions: ["kms:Decrypt", "kms:GenerateDataKey*"],
    resources: ["{arn:PetStore/Monitoring/AlarmTopicKey}"],
    reason:
      "CloudWatch encrypts notifications for the encrypted topic; its KMS request carries no source, so the topic policy refuses other accounts",
    unexercised: "alarms change state only in AWS",
  },
  {
    principal: { service: "logs.{region}.amazonaws.com" },
    actions: ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
    resources: ["{arn:PetStore/Logs/Key}"],
    source: { "kms:EncryptionContext:aws:logs:arn": "arn:aws:logs:{region}:{account}:log-group:{stackName}-*" },
    reason: "CloudWatch Logs encrypts the stage's own log groups with the stage's key (AWS's documented key policy)",
    unexercised: "log encryption happens in AWS",
  },
  {
    principal: { service: "logs.{region}.amazonaws.com" },
    actions: ["kms:Decrypt*", "kms:Describe*", "kms:Encrypt*", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
    resources: ["{arn:PetStore/Logs/Key}"],
    source: {
      "kms:EncryptionContext:aws:logs:arn":
        "arn:aws:logs:{region}:{account}:log-group:API-Gateway-Execution-Logs_{ref:PetStore/Api}/v1",
    },
    reason: "API Gateway's execution log group, which API Gateway names itself, uses the stage's key too",
    unexercised: "log encryption happens in AWS",
  },
  {
    principal: { account: "own" },
    actions: ["kms:*"],
    resources: ["{arn:PetStore/Logs/Key}", "{arn:PetStore/Monitoring/AlarmTopicKey}"],
    reason:
      "each key policy's default statement: the account's IAM policies decide who uses the key, and every role, user and group of the assembly is proven here",
    unexercised: "no function uses the keys directly",
  },

  // The account stack: API Gateway's account-wide logging role.
  {
    principal: { role: "PetStore-Account/ApiGatewayCloudWatchRole" },
    actions: [
      "logs:CreateLogGroup",
      "logs:CreateLogStream",
      "logs:DescribeLogGroups",
      "logs:DescribeLogStreams",
      "logs:PutLogEvents",
      "logs:GetLogEvents",
      "logs:FilterLogEvents",
    ],
    resources: ["*"],
    reason:
      "AWS's managed policy AmazonAPIGatewayPushToCloudWatchLogs, which API Gateway requires for its execution and access logs (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html)",
    unexercised: "API Gateway writes its logs in AWS",
  },
  {
    principal: { service: "apigateway.amazonaws.com" },
    actions: ["sts:AssumeRole"],
    resources: ["{arn:PetStore-Account/ApiGatewayCloudWatchRole}"],
    reason: "API Gateway writes the account's API logs with this role",
    unexercised: "API Gateway writes its logs in AWS",
  },
];
