/**
 * The pre-flight checks (./main.ts): what usually makes a deploy fail half-way in CloudFormation, found beforehand
 * with read-only calls, so a stage awaiting approval can run them with its read-only role. Each returns one line per
 * problem (what is wrong, what to do), or SKIPPED. AWS errors a check decides on are matched by name; any other is a
 * PreflightError of one line naming the call.
 */
import { type ACMClient, DescribeCertificateCommand } from "@aws-sdk/client-acm";
import { type APIGatewayClient, GetAccountCommand } from "@aws-sdk/client-api-gateway";
import {
  type CloudFormationClient,
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from "@aws-sdk/client-cloudformation";
import { GetAccountSettingsCommand, GetFunctionConcurrencyCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { GetHostedZoneCommand, ListResourceRecordSetsCommand, type Route53Client } from "@aws-sdk/client-route-53";
import type { STSClient } from "@aws-sdk/client-sts";
import { type StageConfig, stageReservedConcurrency } from "../../infra/config";
import { ACCOUNT_STACK_NAME, type DeployedStageName } from "../../infra/deployment";
import { contextKey, type StageSettings } from "../../infra/settings";
import { awsCall, type CallFailures, callError, callerAccount, errorParts, wrongAccountProblem } from "../awsErrors";

/** The SDK clients the checks call, all for the stage's region; tests pass mocked ones. */
export interface PreflightClients {
  readonly sts: STSClient;
  readonly cloudFormation: CloudFormationClient;
  readonly acm: ACMClient;
  readonly route53: Route53Client;
  readonly lambda: LambdaClient;
  readonly apiGateway: APIGatewayClient;
}

export interface PreflightInput {
  readonly stage: DeployedStageName;
  readonly settings: StageSettings;
  /** The stage's config (infra/config.ts): its stack names and reserved concurrency. */
  readonly config: StageConfig;
  /** How many API functions the stage has (lib/routes.ts routeList.length). */
  readonly apiFunctions: number;
  readonly clients: PreflightClients;
  readonly region: string;
}

export interface PreflightReport {
  /** One line per problem; none when the stage is ready to deploy. */
  readonly problems: string[];
  /** How many checks ran (the ones that did not apply are not counted). */
  readonly checks: number;
  /** The account the credentials are for. */
  readonly account: string;
  readonly region: string;
}

/** Something that stops the checks before they decide, e.g. expired credentials; its message is one line. */
export class PreflightError extends Error {
  override readonly name = "PreflightError";
}

/** A check's answer when it does not apply to the stage's settings; it is then not counted. */
export const SKIPPED = Symbol("skipped");
export type CheckOutcome = string[] | typeof SKIPPED;

/**
 * Lambda keeps at least this many of an account's concurrent executions unreserved, for the functions without a
 * reservation: a reservation that would leave fewer is refused.
 * https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
 */
export const MINIMUM_UNRESERVED_CONCURRENCY = 100;

/** The Service Quotas code of Lambda's "Concurrent executions" quota. */
const CONCURRENCY_QUOTA_CODE = "L-B99A9384";

// AWS errors

/** What to do about an error that is no decision of the checks. */
const FAILURES: CallFailures = {
  error: (line) => new PreflightError(line),
  advice: (kind) =>
    kind === "denied" ? " The credentials need read-only access to it." : " Run preflight again in a minute.",
};

/** An AWS call's answer, or the name of an error listed in `decisions`; any other error is a PreflightError. */
async function ask<T>(
  call: string,
  request: () => Promise<T>,
  decisions: readonly string[],
): Promise<{ ok: true; value: T } | { ok: false; error: string; message: string; cause: unknown }> {
  try {
    return { ok: true, value: await request() };
  } catch (error) {
    const { name, message } = errorParts(error);
    if (decisions.includes(name)) return { ok: false, error: name, message, cause: error };
    throw callError(FAILURES, call, error);
  }
}

/** An AWS call's answer; every error is a PreflightError. */
const must = <T>(call: string, request: () => Promise<T>): Promise<T> => awsCall(FAILURES, call, request);

/** IAM denies as AccessDenied (query and REST-XML services such as Route 53) or AccessDeniedException (JSON ones). */
const ACCESS_DENIED = ["AccessDenied", "AccessDeniedException"];

// 1. Credentials

/** The account the credentials are for, and a problem when the stage is pinned to another. */
export async function checkCredentials(
  clients: PreflightClients,
  stage: DeployedStageName,
  settings: StageSettings,
): Promise<{ account: string; problems: string[] }> {
  const account = await callerAccount(clients.sts, FAILURES);
  const wrongAccount = wrongAccountProblem(stage, account, settings.account);
  return { account, problems: wrongAccount ? [wrongAccount] : [] };
}

// 2. Stack states

export interface StackState {
  readonly stackName: string;
  /** Undefined when the stack does not exist (or, REVIEW_IN_PROGRESS, was never created). */
  readonly status?: string;
  readonly terminationProtection: boolean;
}

/** Whether a stack holds what a deploy updates: false when the deploy creates it (again). */
export function stackCreated(state: StackState): boolean {
  return state.status !== undefined && state.status !== "ROLLBACK_COMPLETE";
}

export async function describeStack(clients: PreflightClients, stackName: string): Promise<StackState> {
  const call = `cloudformation:DescribeStacks (${stackName})`;
  const answer = await ask(
    call,
    () => clients.cloudFormation.send(new DescribeStacksCommand({ StackName: stackName })),
    ["ValidationError"],
  );
  if (!answer.ok) {
    // CloudFormation answers a stack that does not exist with a ValidationError "Stack with id … does not exist".
    if (/does not exist/i.test(answer.message)) return { stackName, terminationProtection: false };
    throw callError(FAILURES, call, answer.cause);
  }
  const stack = answer.value.Stacks?.[0];
  // REVIEW_IN_PROGRESS: a stack made for a change set that was never executed; the CDK CLI treats it as not existing
  // and creates the stack anew, as it does for no stack at all.
  if (!stack?.StackStatus || stack.StackStatus === "REVIEW_IN_PROGRESS") {
    return { stackName, terminationProtection: false };
  }
  return { stackName, status: stack.StackStatus, terminationProtection: stack.EnableTerminationProtection === true };
}

/** Rollbacks and deletions that failed: CloudFormation updates such a stack no more until it is recovered. */
const STUCK_STATUSES = new Set([
  "ROLLBACK_FAILED",
  "UPDATE_ROLLBACK_FAILED",
  "DELETE_FAILED",
  "IMPORT_ROLLBACK_FAILED",
]);

/** The problems with one stack's state, for a deploy to `region`. */
export function stackStateProblems(state: StackState, region: string): string[] {
  const { stackName, status } = state;
  if (status === undefined) return [];
  if (status.endsWith("_IN_PROGRESS")) {
    return [
      `stack ${stackName} is ${status}: another deploy or rollback is running; wait for it to finish, then run preflight again.`,
    ];
  }
  if (STUCK_STATUSES.has(status)) {
    return [
      `stack ${stackName} is ${status}: CloudFormation deploys it no more until it is recovered; follow docs/deploy.md, "Recovering a stack that failed to roll back".`,
    ];
  }
  // A first create that failed and rolled back: such a stack can only be deleted, which the CDK CLI does before
  // creating it again, unless termination protection refuses the delete.
  // https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/troubleshooting.html
  if (status === "ROLLBACK_COMPLETE" && state.terminationProtection) {
    return [
      `stack ${stackName} is ROLLBACK_COMPLETE (its first create failed) with termination protection on, so the CDK CLI cannot delete it to retry: find the cause in its events, then run aws cloudformation update-termination-protection --no-enable-termination-protection --stack-name ${stackName} --region ${region} and aws cloudformation delete-stack --stack-name ${stackName} --region ${region} (it holds nothing yet).`,
    ];
  }
  // ROLLBACK_COMPLETE without protection (the service stack's usual case): the deploy deletes and re-creates it, and it
  // holds no data. Any other status is one a deploy updates.
  return [];
}

export interface StageStacks {
  readonly data: StackState;
  readonly service: StackState;
  readonly account: StackState;
}

export async function checkStacks(
  clients: PreflightClients,
  config: StageConfig,
  region: string,
): Promise<{ stacks: StageStacks; problems: string[] }> {
  const stacks: StageStacks = {
    data: await describeStack(clients, config.dataStackName),
    service: await describeStack(clients, config.stackName),
    account: await describeStack(clients, ACCOUNT_STACK_NAME),
  };
  const problems = [stacks.account, stacks.data, stacks.service].flatMap((state) => stackStateProblems(state, region));
  return { stacks, problems };
}

// 3. Certificate

/**
 * Whether a certificate name covers a domain name: equal (DNS names are case-insensitive), or a wildcard `*.rest`
 * standing for exactly one more leading label: `*.example.com` covers `api.example.com` but neither `example.com` nor
 * `a.b.example.com`. https://docs.aws.amazon.com/acm/latest/userguide/acm-certificate.html
 */
export function certificateNameCovers(certificateName: string, domainName: string): boolean {
  const name = certificateName.toLowerCase();
  const domain = domainName.toLowerCase();
  if (name === domain) return true;
  if (!name.startsWith("*.")) return false;
  const dot = domain.indexOf(".");
  return dot > 0 && domain.slice(dot + 1) === name.slice(2);
}

export async function checkCertificate(
  clients: PreflightClients,
  stage: DeployedStageName,
  settings: StageSettings,
  where: { account: string; region: string },
): Promise<CheckOutcome> {
  const domain = settings.customDomain;
  if (!domain) return SKIPPED;
  const arn = domain.certificateArn;
  const setting = contextKey(stage, "certificateArn");
  // arn:partition:acm:region:account:certificate/id. A REGIONAL custom domain serves a certificate of the API's own
  // account and region.
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-regional-api-custom-domain-create.html
  const [, , , certificateRegion, certificateAccount] = arn.split(":");
  if (certificateAccount !== where.account || certificateRegion !== where.region) {
    return [
      `certificate ${arn} (${setting}) is in ${certificateAccount}/${certificateRegion}, but ${stage} deploys to ${where.account}/${where.region}: API Gateway needs a certificate in the stage's own account and region; request or import one there and set ${setting}.`,
    ];
  }
  const answer = await ask(
    "acm:DescribeCertificate",
    () => clients.acm.send(new DescribeCertificateCommand({ CertificateArn: arn })),
    ["ResourceNotFoundException", ...ACCESS_DENIED],
  );
  if (!answer.ok || !answer.value.Certificate) {
    return [
      `certificate ${arn} (${setting}) is not in account ${where.account}, region ${where.region} (${answer.ok ? "not found" : answer.error}): request or import the certificate for ${domain.domainName} there and set ${setting} to its ARN.`,
    ];
  }
  const certificate = answer.value.Certificate;
  const problems: string[] = [];
  if (certificate.Status !== "ISSUED") {
    const todo =
      certificate.Status === "PENDING_VALIDATION"
        ? "finish its DNS validation first (create the CNAME record ACM shows for it) and wait until it is ISSUED"
        : `request or import a new one and set ${setting} to it`;
    problems.push(`certificate ${arn} is ${certificate.Status ?? "of unknown status"}, not ISSUED: ${todo}.`);
  }
  const names = [certificate.DomainName, ...(certificate.SubjectAlternativeNames ?? [])].filter(
    (name): name is string => name !== undefined,
  );
  if (!names.some((name) => certificateNameCovers(name, domain.domainName))) {
    // A wildcard one label up is an alternative unless that would be a top-level domain (`*.com`).
    const parent = domain.domainName.slice(domain.domainName.indexOf(".") + 1);
    const wanted = parent.includes(".") ? `${domain.domainName}, or for *.${parent},` : domain.domainName;
    problems.push(
      `certificate ${arn} does not cover ${domain.domainName} (it names ${[...new Set(names)].join(", ") || "nothing"}): use a certificate for ${wanted} in ${setting}.`,
    );
  }
  return problems;
}

// 4. Hosted zone

/** A DNS name as Route 53 answers it (trailing dot, any case) or as the settings hold it, comparable. */
const dnsName = (name: string) => name.toLowerCase().replace(/\.$/, "");

export async function checkHostedZone(
  clients: PreflightClients,
  stage: DeployedStageName,
  settings: StageSettings,
  account: string,
): Promise<CheckOutcome> {
  const zone = settings.customDomain?.hostedZone;
  if (!zone) return SKIPPED;
  const answer = await ask(
    "route53:GetHostedZone",
    () => clients.route53.send(new GetHostedZoneCommand({ Id: zone.id })),
    ["NoSuchHostedZone", ...ACCESS_DENIED],
  );
  if (!answer.ok || !answer.value.HostedZone) {
    return [
      `hosted zone ${zone.id} (${contextKey(stage, "hostedZoneId")}) is not in account ${account} (${answer.ok ? "not found" : answer.error}); most organisations keep DNS in a central account: delegate a subdomain zone to this account and set ${contextKey(stage, "hostedZoneId")} and ${contextKey(stage, "hostedZoneName")} to it, or leave both out and create the CNAME to the stack's CustomDomainTarget output by hand (docs/deploy.md, section 10).`,
    ];
  }
  const found = answer.value.HostedZone;
  const problems: string[] = [];
  if (dnsName(found.Name ?? "") !== dnsName(zone.name)) {
    problems.push(
      `hosted zone ${zone.id} is ${dnsName(found.Name ?? "")}, not ${zone.name} (${contextKey(stage, "hostedZoneName")}): set ${contextKey(stage, "hostedZoneId")} and ${contextKey(stage, "hostedZoneName")} to the same zone.`,
    );
  }
  if (found.Config?.PrivateZone === true) {
    problems.push(
      `hosted zone ${zone.id} (${zone.name}) is private: the custom domain needs its record in a public zone; set ${contextKey(stage, "hostedZoneId")} to the public zone of ${zone.name}.`,
    );
  }
  return problems;
}

// 5. A DNS record in the way of the stack's alias record

/** The record types that clash with the alias A (and AAAA) record the stack creates for the domain. */
const CLASHING_TYPES = new Set(["A", "AAAA", "CNAME"]);

export async function checkExistingRecord(
  clients: PreflightClients,
  stage: DeployedStageName,
  settings: StageSettings,
): Promise<CheckOutcome> {
  const domain = settings.customDomain;
  const zone = domain?.hostedZone;
  if (!domain || !zone) return SKIPPED;
  const answer = await must("route53:ListResourceRecordSets", () =>
    clients.route53.send(
      new ListResourceRecordSetsCommand({
        HostedZoneId: zone.id,
        StartRecordName: domain.domainName,
        StartRecordType: "A",
        MaxItems: 10,
      }),
    ),
  );
  // Records are listed in name order from the start name on: the domain's own come first.
  const clashing = (answer.ResourceRecordSets ?? []).filter(
    (record) =>
      dnsName(record.Name ?? "") === dnsName(domain.domainName) && CLASHING_TYPES.has(String(record.Type ?? "")),
  );
  if (clashing.length === 0) return [];
  const types = [...new Set(clashing.map((record) => record.Type))].join(", ");
  return [
    `a DNS record for ${domain.domainName} (${types}) already exists in hosted zone ${zone.name} (${zone.id}): the stack's alias record would fail to create; remove it, or leave out ${contextKey(stage, "hostedZoneId")} and ${contextKey(stage, "hostedZoneName")} and point the record at the stack's CustomDomainTarget output yourself.`,
  ];
}

// 6. Lambda concurrency

/** The names of a stack's Lambda functions (ListStackResources, every page). */
async function stackFunctionNames(clients: PreflightClients, stackName: string): Promise<string[]> {
  const resources: StackResourceSummary[] = [];
  let nextToken: string | undefined;
  do {
    const page = await must(`cloudformation:ListStackResources (${stackName})`, () =>
      clients.cloudFormation.send(
        new ListStackResourcesCommand({ StackName: stackName, ...(nextToken ? { NextToken: nextToken } : {}) }),
      ),
    );
    resources.push(...(page.StackResourceSummaries ?? []));
    nextToken = page.NextToken;
  } while (nextToken);
  return resources
    .filter(
      (resource) =>
        resource.ResourceType === "AWS::Lambda::Function" &&
        resource.PhysicalResourceId &&
        resource.ResourceStatus !== "DELETE_COMPLETE",
    )
    .map((resource) => resource.PhysicalResourceId as string);
}

/** What the stage's existing functions reserve now: already taken out of the account's unreserved concurrency. */
async function reservedByStacks(clients: PreflightClients, stacks: readonly StackState[]): Promise<number> {
  let reserved = 0;
  for (const stack of stacks.filter(stackCreated)) {
    for (const functionName of await stackFunctionNames(clients, stack.stackName)) {
      const answer = await ask(
        `lambda:GetFunctionConcurrency (${functionName})`,
        () => clients.lambda.send(new GetFunctionConcurrencyCommand({ FunctionName: functionName })),
        ["ResourceNotFoundException"],
      );
      // A function deleted outside CloudFormation reserves nothing; no reservation reads as undefined.
      reserved += answer.ok ? (answer.value.ReservedConcurrentExecutions ?? 0) : 0;
    }
  }
  return reserved;
}

export async function checkConcurrency(
  clients: PreflightClients,
  input: { stage: DeployedStageName; config: StageConfig; apiFunctions: number; region: string; account: string },
  stacks: StageStacks,
): Promise<string[]> {
  const settings = await must("lambda:GetAccountSettings", () =>
    clients.lambda.send(new GetAccountSettingsCommand({})),
  );
  const limit = settings.AccountLimit?.ConcurrentExecutions;
  const unreserved = settings.AccountLimit?.UnreservedConcurrentExecutions;
  if (limit === undefined || unreserved === undefined) {
    throw new PreflightError("lambda:GetAccountSettings answered without the account's concurrency limits.");
  }
  const needed = stageReservedConcurrency(input.config, input.apiFunctions);
  // An update replaces the reservations the stage's functions hold now: count them as available. Both stacks, so that
  // the sum is right wherever the stage's functions live.
  const already = await reservedByStacks(clients, [stacks.data, stacks.service]);
  const left = unreserved + already - needed;
  if (left >= MINIMUM_UNRESERVED_CONCURRENCY) return [];
  const quota = limit + (MINIMUM_UNRESERVED_CONCURRENCY - left);
  const held = already > 0 ? ` (${unreserved} unreserved plus ${already} its functions hold already)` : "";
  return [
    `Lambda concurrency: ${input.stage} reserves ${needed} concurrent executions in all (${input.config.functions.reservedConcurrency} for each of ${input.apiFunctions} API functions, plus its background functions), but account ${input.account} has ${unreserved + already} of its ${limit} available to it in ${input.region}${held} and Lambda keeps ${MINIMUM_UNRESERVED_CONCURRENCY} unreserved: the quota must be at least ${quota}. New accounts start far below the default 1,000: request an increase in Service Quotas (AWS Lambda, "Concurrent executions", quota code ${CONCURRENCY_QUOTA_CODE}) in ${input.region}.`,
  ];
}

// 7. API Gateway's CloudWatch role

export async function checkApiGatewayRole(
  clients: PreflightClients,
  stage: DeployedStageName,
  settings: StageSettings,
  accountStack: StackState,
): Promise<CheckOutcome> {
  // Once the account stack exists it owns the setting (infra/stacks/accountStack.ts). A ROLLBACK_COMPLETE one set
  // nothing that lasted and is created again, like none at all.
  if (stackCreated(accountStack)) return SKIPPED;
  const account = await must("apigateway:GetAccount", () => clients.apiGateway.send(new GetAccountCommand({})));
  const current = account.cloudwatchRoleArn || undefined;
  const setting = contextKey(stage, "apiGatewayCloudWatchRoleArn");
  const adopted = settings.apiGatewayCloudWatchRoleArn;
  if (adopted === undefined) {
    if (current === undefined) return [];
    return [
      `the account already has API Gateway's CloudWatch role ${current} (another API set it up); adopt it with ${setting} in cdk.json instead of replacing it with ${ACCOUNT_STACK_NAME}'s own.`,
    ];
  }
  if (adopted === current) return [];
  return [
    current === undefined
      ? `${setting} adopts ${adopted}, but the account has no API Gateway CloudWatch role: leave ${setting} out so that ${ACCOUNT_STACK_NAME} creates one.`
      : `${setting} adopts ${adopted}, but the account's API Gateway CloudWatch role is ${current}: set ${setting} to ${current}.`,
  ];
}

/** Runs every check that applies to the stage; throws a PreflightError when AWS fails in a way no check decides on. */
export async function runPreflight(input: PreflightInput): Promise<PreflightReport> {
  const { stage, settings, config, clients, region } = input;
  const problems: string[] = [];
  let checks = 0;
  const record = (outcome: CheckOutcome) => {
    if (outcome === SKIPPED) return;
    checks += 1;
    problems.push(...outcome);
  };

  const credentials = await checkCredentials(clients, stage, settings);
  record(credentials.problems);
  const { account } = credentials;
  // Everything else would describe the wrong account: its problems would mislead.
  if (credentials.problems.length > 0) return { problems, checks, account, region };

  const { stacks, problems: stackProblems } = await checkStacks(clients, config, region);
  record(stackProblems);

  const certificate = await checkCertificate(clients, stage, settings, { account, region });
  record(certificate);

  const zone = await checkHostedZone(clients, stage, settings, account);
  record(zone);
  // The alias record is created with the service stack: an update keeps the one it has. Without a usable zone there is
  // nothing to list (its problem is reported already).
  if (zone !== SKIPPED && zone.length === 0 && !stackCreated(stacks.service)) {
    record(await checkExistingRecord(clients, stage, settings));
  }

  record(await checkConcurrency(clients, { ...input, account }, stacks));
  record(await checkApiGatewayRole(clients, stage, settings, stacks.account));

  return { problems, checks, account, region };
}
