/**
 * `npm run preflight`: each decision of the pre-flight checks against mocked AWS answers (every call
 * they make must be read-only), and the command's lines and exit codes.
 */
import { ACMClient, type CertificateDetail, DescribeCertificateCommand } from "@aws-sdk/client-acm";
import { APIGatewayClient, GetAccountCommand } from "@aws-sdk/client-api-gateway";
import {
  CloudFormationClient,
  DescribeStacksCommand,
  ListStackResourcesCommand,
  type Stack,
  type StackResourceSummary,
} from "@aws-sdk/client-cloudformation";
import { GetAccountSettingsCommand, GetFunctionConcurrencyCommand, LambdaClient } from "@aws-sdk/client-lambda";
import {
  GetHostedZoneCommand,
  ListResourceRecordSetsCommand,
  type ResourceRecordSet,
  Route53Client,
} from "@aws-sdk/client-route-53";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { stageConfigs, stageReservedConcurrency } from "../../infra/config";
import { ACCOUNT_STACK_NAME, type DeployedStageName } from "../../infra/deployment";
import type { StageSettings } from "../../infra/settings";
import { routeList } from "../../lib/routes";
import {
  certificateNameCovers,
  MINIMUM_UNRESERVED_CONCURRENCY,
  type PreflightClients,
  PreflightError,
  runPreflight,
} from "../../scripts/preflight/checks";
import { main, parsePreflightArguments } from "../../scripts/preflight/main";
import { captureOutput } from "../support/consoleOutput";
import { refusedStageArguments, runStageScript, runWithoutCredentials, usageRefusal } from "../support/stageCommand";

const sts = mockClient(STSClient);
const cloudFormation = mockClient(CloudFormationClient);
const acm = mockClient(ACMClient);
const route53 = mockClient(Route53Client);
const lambda = mockClient(LambdaClient);
const apiGateway = mockClient(APIGatewayClient);
const mocks = { sts, cloudFormation, acm, route53, lambda, apiGateway };

const ACCOUNT = "222222222222";
const REGION = "eu-west-1";
const DOMAIN = "api.example.com";
const CERTIFICATE_ARN = `arn:aws:acm:${REGION}:${ACCOUNT}:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b`;
const ZONE = { id: "Z0123456789ABCDEFGHIJ", name: "example.com" };
const production = stageConfigs.Production;
const staging = stageConfigs.Staging;
const productionNeeds = stageReservedConcurrency(production, routeList.length);

/** Production with a custom domain in its own hosted zone: all seven checks apply. */
const readySettings: StageSettings = {
  account: ACCOUNT,
  region: REGION,
  alarmEmails: ["oncall@example.com"],
  customDomain: {
    domainName: DOMAIN,
    certificateArn: CERTIFICATE_ARN,
    hostedZone: ZONE,
    disableExecuteApiEndpoint: false,
  },
};

const clients: PreflightClients = {
  sts: new STSClient({ region: REGION }),
  cloudFormation: new CloudFormationClient({ region: REGION }),
  acm: new ACMClient({ region: REGION }),
  route53: new Route53Client({ region: REGION }),
  lambda: new LambdaClient({ region: REGION }),
  apiGateway: new APIGatewayClient({ region: REGION }),
};

function awsError(name: string, message = `${name} (test)`): Error {
  return Object.assign(new Error(message), { name });
}

/** What DescribeStacks answers per stack name; a stack not listed does not exist. */
let stacks: Record<string, Partial<Stack>>;
/** Each stack's Lambda functions and the concurrency each reserves now. */
let stackFunctions: Record<string, { name: string; reserved?: number }[]>;
let certificate: CertificateDetail;
let records: ResourceRecordSet[];

function stackIs(stackName: string, StackStatus: Stack["StackStatus"], EnableTerminationProtection = false) {
  stacks[stackName] = { StackName: stackName, StackStatus, EnableTerminationProtection, CreationTime: new Date(0) };
}

beforeEach(() => {
  for (const mock of Object.values(mocks)) mock.reset();
  stacks = {};
  stackFunctions = {};
  certificate = {
    CertificateArn: CERTIFICATE_ARN,
    DomainName: DOMAIN,
    SubjectAlternativeNames: [DOMAIN],
    Status: "ISSUED",
  };
  records = [
    { Name: "example.com.", Type: "NS" },
    { Name: "www.example.com.", Type: "CNAME" },
  ];
  sts.on(GetCallerIdentityCommand).resolves({ Account: ACCOUNT, Arn: `arn:aws:iam::${ACCOUNT}:role/deploy` });
  cloudFormation.on(DescribeStacksCommand).callsFake(async ({ StackName }: { StackName: string }) => {
    const stack = stacks[StackName];
    if (!stack) throw awsError("ValidationError", `Stack with id ${StackName} does not exist`);
    return { Stacks: [stack] };
  });
  cloudFormation.on(ListStackResourcesCommand).callsFake(async ({ StackName }: { StackName: string }) => ({
    StackResourceSummaries: (stackFunctions[StackName] ?? []).map(
      ({ name }): StackResourceSummary => ({
        LogicalResourceId: name,
        PhysicalResourceId: name,
        ResourceType: "AWS::Lambda::Function",
        ResourceStatus: "UPDATE_COMPLETE",
        LastUpdatedTimestamp: new Date(0),
      }),
    ),
  }));
  acm.on(DescribeCertificateCommand).callsFake(async () => ({ Certificate: certificate }));
  route53.on(GetHostedZoneCommand).resolves({
    HostedZone: {
      Id: `/hostedzone/${ZONE.id}`,
      Name: `${ZONE.name}.`,
      CallerReference: "x",
      Config: { PrivateZone: false },
    },
  });
  route53.on(ListResourceRecordSetsCommand).callsFake(async () => ({
    ResourceRecordSets: records,
    IsTruncated: false,
    MaxItems: 10,
  }));
  lambda.on(GetAccountSettingsCommand).resolves({
    AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 1000 },
  });
  lambda.on(GetFunctionConcurrencyCommand).callsFake(async ({ FunctionName }: { FunctionName: string }) => {
    const found = Object.values(stackFunctions)
      .flat()
      .find(({ name }) => name === FunctionName);
    if (!found) throw awsError("ResourceNotFoundException", `Function not found: ${FunctionName}`);
    return found.reserved === undefined ? {} : { ReservedConcurrentExecutions: found.reserved };
  });
  apiGateway.on(GetAccountCommand).resolves({});
});

/** Every command any mock received, by name. */
function commandsSent(): string[] {
  return Object.values(mocks).flatMap((mock) => mock.calls().map((call) => call.args[0].constructor.name));
}

afterEach(() => {
  vi.restoreAllMocks();
  // The pre-flight runs with a read-only role: it must never ask AWS to change anything.
  for (const command of commandsSent()) expect(command).toMatch(/^(Describe|Get|List)\w+Command$/);
});

function check(options: { stage?: DeployedStageName; settings?: StageSettings } = {}) {
  const stage = options.stage ?? "prod";
  return runPreflight({
    stage,
    settings: options.settings ?? readySettings,
    config: stage === "prod" ? production : staging,
    apiFunctions: routeList.length,
    clients,
    region: REGION,
  });
}

async function problems(options: Parameters<typeof check>[0] = {}): Promise<string[]> {
  return (await check(options)).problems;
}

describe("a stage ready to deploy", () => {
  it("passes all seven checks on a first create with a custom domain in its own zone", async () => {
    const report = await check();

    expect(report).toEqual({ problems: [], checks: 7, account: ACCOUNT, region: REGION });
    expect(new Set(commandsSent())).toEqual(
      new Set([
        "GetCallerIdentityCommand",
        "DescribeStacksCommand",
        "DescribeCertificateCommand",
        "GetHostedZoneCommand",
        "ListResourceRecordSetsCommand",
        "GetAccountSettingsCommand",
        "GetAccountCommand",
      ]),
    );
  });

  it("skips the checks that do not apply: no custom domain, and an account stack that owns the CloudWatch role", async () => {
    stackIs(ACCOUNT_STACK_NAME, "CREATE_COMPLETE", true);

    const report = await check({ settings: { alarmEmails: [] } });

    expect(report).toEqual({ problems: [], checks: 3, account: ACCOUNT, region: REGION });
    expect(acm.calls()).toHaveLength(0);
    expect(route53.calls()).toHaveLength(0);
    expect(apiGateway.calls()).toHaveLength(0);
  });

  it("checks the certificate but no DNS record when the stage has a domain without a hosted zone", async () => {
    const { hostedZone: _, ...withoutZone } = readySettings.customDomain as NonNullable<StageSettings["customDomain"]>;

    const report = await check({ settings: { ...readySettings, customDomain: withoutZone } });

    expect(report.problems).toEqual([]);
    expect(report.checks).toBe(5);
    expect(route53.calls()).toHaveLength(0);
  });
});

describe("the credentials", () => {
  it("must be for the account the stage is pinned to, and nothing else is looked at otherwise", async () => {
    sts.on(GetCallerIdentityCommand).resolves({ Account: "111111111111" });

    const report = await check();

    expect(report.problems).toEqual([
      `credentials are for account 111111111111 but prod is pinned to ${ACCOUNT} (prod:account in cdk.json): sign in to ${ACCOUNT}.`,
    ]);
    expect(report.checks).toBe(1);
    expect(commandsSent()).toEqual(["GetCallerIdentityCommand"]);
  });

  it("may be for any account when the stage is not pinned", async () => {
    sts.on(GetCallerIdentityCommand).resolves({ Account: "333333333333" });

    const report = await check({ settings: { alarmEmails: [] } });

    expect(report).toMatchObject({ problems: [], account: "333333333333" });
  });
});

describe("the stacks' states", () => {
  it.each([
    "CREATE_IN_PROGRESS",
    "UPDATE_IN_PROGRESS",
    "UPDATE_ROLLBACK_IN_PROGRESS",
    "ROLLBACK_IN_PROGRESS",
    "DELETE_IN_PROGRESS",
    "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
  ] as const)("%s: another deploy or rollback is running, wait for it", async (status) => {
    stackIs(production.stackName, status);

    expect(await problems()).toEqual([
      `stack ${production.stackName} is ${status}: another deploy or rollback is running; wait for it to finish, then run preflight again.`,
    ]);
  });

  it.each([
    ["ROLLBACK_FAILED", production.stackName],
    ["UPDATE_ROLLBACK_FAILED", production.dataStackName],
    ["DELETE_FAILED", ACCOUNT_STACK_NAME],
  ] as const)("%s (%s) must be recovered first, as docs/deploy.md says", async (status, stackName) => {
    stackIs(stackName, status);

    const found = await problems();

    expect(found).toEqual([
      `stack ${stackName} is ${status}: CloudFormation deploys it no more until it is recovered; follow docs/deploy.md, "Recovering a stack that failed to roll back".`,
    ]);
  });

  it.each(["CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"] as const)(
    "%s on every stack is ready for an update",
    async (status) => {
      for (const stackName of [production.stackName, production.dataStackName, ACCOUNT_STACK_NAME]) {
        stackIs(stackName, status, true);
      }

      expect(await problems()).toEqual([]);
    },
  );

  it("a service stack in ROLLBACK_COMPLETE is fine (the deploy re-creates it) while the protected data stack's is a problem", async () => {
    stackIs(production.stackName, "ROLLBACK_COMPLETE");
    stackIs(production.dataStackName, "ROLLBACK_COMPLETE", true);

    const found = await problems();

    expect(found).toHaveLength(1);
    expect(found[0]).toBe(
      `stack ${production.dataStackName} is ROLLBACK_COMPLETE (its first create failed) with termination protection on, so the CDK CLI cannot delete it to retry: find the cause in its events, then run aws cloudformation update-termination-protection --no-enable-termination-protection --stack-name ${production.dataStackName} --region ${REGION} and aws cloudformation delete-stack --stack-name ${production.dataStackName} --region ${REGION} (it holds nothing yet).`,
    );
  });

  it("the account stack in ROLLBACK_COMPLETE with termination protection is a problem too", async () => {
    stackIs(ACCOUNT_STACK_NAME, "ROLLBACK_COMPLETE", true);

    const found = await problems();

    expect(found).toHaveLength(1);
    expect(found[0]).toContain(`stack ${ACCOUNT_STACK_NAME} is ROLLBACK_COMPLETE`);
    expect(found[0]).toContain(`delete-stack --stack-name ${ACCOUNT_STACK_NAME}`);
  });

  it("a data stack in ROLLBACK_COMPLETE without termination protection is deleted by the deploy: fine", async () => {
    stackIs(production.dataStackName, "ROLLBACK_COMPLETE");

    expect(await problems()).toEqual([]);
  });

  it("a stack left in REVIEW_IN_PROGRESS by an unexecuted change set counts as not created", async () => {
    stackIs(production.stackName, "REVIEW_IN_PROGRESS");
    records = [{ Name: `${DOMAIN}.`, Type: "A" }];

    // Not in progress, and a first create: the existing record is in the way.
    expect(await problems()).toEqual([expect.stringMatching(/^a DNS record for api\.example\.com \(A\)/)]);
  });
});

describe("the custom domain's certificate", () => {
  it("must be ISSUED: a pending one needs its DNS validation finished", async () => {
    certificate = { ...certificate, Status: "PENDING_VALIDATION" };

    expect(await problems()).toEqual([
      `certificate ${CERTIFICATE_ARN} is PENDING_VALIDATION, not ISSUED: finish its DNS validation first (create the CNAME record ACM shows for it) and wait until it is ISSUED.`,
    ]);
  });

  it("must cover the domain name", async () => {
    certificate = { ...certificate, DomainName: "www.example.com", SubjectAlternativeNames: ["www.example.com"] };

    expect(await problems()).toEqual([
      `certificate ${CERTIFICATE_ARN} does not cover ${DOMAIN} (it names www.example.com): use a certificate for ${DOMAIN}, or for *.example.com, in prod:certificateArn.`,
    ]);
  });

  it("covers the domain with a wildcard one label deep, in any case", async () => {
    certificate = {
      ...certificate,
      DomainName: "example.com",
      SubjectAlternativeNames: ["example.com", "*.Example.COM"],
    };

    expect(await problems()).toEqual([]);
  });

  it("does not cover the apex with a wildcard", async () => {
    const apex = { ...readySettings.customDomain, domainName: "example.com" } as StageSettings["customDomain"];
    certificate = { ...certificate, DomainName: "*.example.com", SubjectAlternativeNames: ["*.example.com"] };

    expect(await problems({ settings: { ...readySettings, customDomain: apex } })).toEqual([
      `certificate ${CERTIFICATE_ARN} does not cover example.com (it names *.example.com): use a certificate for example.com in prod:certificateArn.`,
    ]);
  });

  it.each([
    ["*.example.com", "api.example.com", true],
    ["api.example.com", "API.example.com", true],
    ["*.example.com", "example.com", false],
    ["*.example.com", "a.b.example.com", false],
    ["*.b.example.com", "a.b.example.com", true],
    ["example.com", "api.example.com", false],
  ])("name %s covers %s: %s", (name, domain, covers) => {
    expect(certificateNameCovers(name, domain)).toBe(covers);
  });

  it.each(["ResourceNotFoundException", "AccessDeniedException"])(
    "%s: the certificate is not in the stage's account and region",
    async (name) => {
      acm.on(DescribeCertificateCommand).rejects(awsError(name));

      expect(await problems()).toEqual([
        `certificate ${CERTIFICATE_ARN} (prod:certificateArn) is not in account ${ACCOUNT}, region ${REGION} (${name}): request or import the certificate for ${DOMAIN} there and set prod:certificateArn to its ARN.`,
      ]);
    },
  );

  it("of another account is refused without asking ACM (unpinned stage)", async () => {
    sts.on(GetCallerIdentityCommand).resolves({ Account: "333333333333" });
    const { account: _, ...unpinned } = readySettings;

    expect(await problems({ settings: unpinned })).toEqual([
      expect.stringMatching(
        /^certificate .* \(prod:certificateArn\) is in 222222222222\/eu-west-1, but prod deploys to 333333333333\/eu-west-1: /,
      ),
    ]);
    expect(acm.calls()).toHaveLength(0);
  });
});

describe("the custom domain's hosted zone", () => {
  it.each(["AccessDenied", "NoSuchHostedZone"])(
    "%s: the zone is in another account; delegate a subdomain or create the CNAME by hand",
    async (name) => {
      route53.on(GetHostedZoneCommand).rejects(awsError(name));

      expect(await problems()).toEqual([
        `hosted zone ${ZONE.id} (prod:hostedZoneId) is not in account ${ACCOUNT} (${name}); most organisations keep DNS in a central account: delegate a subdomain zone to this account and set prod:hostedZoneId and prod:hostedZoneName to it, or leave both out and create the CNAME to the stack's CustomDomainTarget output by hand (docs/deploy.md, section 10).`,
      ]);
      // No zone to look for records in.
      expect(route53.commandCalls(ListResourceRecordSetsCommand)).toHaveLength(0);
    },
  );

  it("must be public", async () => {
    route53.on(GetHostedZoneCommand).resolves({
      HostedZone: { Id: ZONE.id, Name: "example.com.", CallerReference: "x", Config: { PrivateZone: true } },
    });

    expect(await problems()).toEqual([
      `hosted zone ${ZONE.id} (example.com) is private: the custom domain needs its record in a public zone; set prod:hostedZoneId to the public zone of example.com.`,
    ]);
  });

  it("must have the name the settings give it", async () => {
    route53.on(GetHostedZoneCommand).resolves({
      HostedZone: { Id: ZONE.id, Name: "example.org.", CallerReference: "x", Config: { PrivateZone: false } },
    });

    expect(await problems()).toEqual([
      `hosted zone ${ZONE.id} is example.org, not example.com (prod:hostedZoneName): set prod:hostedZoneId and prod:hostedZoneName to the same zone.`,
    ]);
  });

  it("matches its name whatever the case and trailing dot", async () => {
    route53.on(GetHostedZoneCommand).resolves({
      HostedZone: { Id: ZONE.id, Name: "Example.COM.", CallerReference: "x" },
    });

    expect(await problems()).toEqual([]);
  });
});

describe("an existing DNS record for the domain", () => {
  it.each(["A", "AAAA", "CNAME"] as const)("of type %s is in the way of a first create", async (type) => {
    records = [{ Name: "API.example.com.", Type: type, TTL: 300, ResourceRecords: [{ Value: "192.0.2.1" }] }];

    expect(await problems()).toEqual([
      `a DNS record for ${DOMAIN} (${type}) already exists in hosted zone example.com (${ZONE.id}): the stack's alias record would fail to create; remove it, or leave out prod:hostedZoneId and prod:hostedZoneName and point the record at the stack's CustomDomainTarget output yourself.`,
    ]);
    expect(route53.commandCalls(ListResourceRecordSetsCommand)[0]?.args[0].input).toEqual({
      HostedZoneId: ZONE.id,
      StartRecordName: DOMAIN,
      StartRecordType: "A",
      MaxItems: 10,
    });
  });

  it("of another type, or for another name, is no problem", async () => {
    records = [
      { Name: `${DOMAIN}.`, Type: "TXT" },
      { Name: `www.${DOMAIN}.`, Type: "A" },
    ];

    expect(await problems()).toEqual([]);
  });

  it("is the stack's own once the service stack exists: not looked for", async () => {
    stackIs(production.stackName, "UPDATE_COMPLETE", true);
    records = [{ Name: `${DOMAIN}.`, Type: "A" }];

    const report = await check();

    expect(report.problems).toEqual([]);
    expect(report.checks).toBe(6);
    expect(route53.commandCalls(ListResourceRecordSetsCommand)).toHaveLength(0);
  });

  it("is in the way when the service stack is ROLLBACK_COMPLETE (created again)", async () => {
    stackIs(production.stackName, "ROLLBACK_COMPLETE");
    records = [{ Name: `${DOMAIN}.`, Type: "CNAME" }];

    expect(await problems()).toEqual([expect.stringMatching(/^a DNS record for api\.example\.com \(CNAME\)/)]);
  });
});

describe("Lambda concurrency", () => {
  it("on a new account far below the default quota is a problem naming the numbers and the quota code", async () => {
    lambda.on(GetAccountSettingsCommand).resolves({
      AccountLimit: { ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10 },
    });

    expect(await problems()).toEqual([
      `Lambda concurrency: prod reserves ${productionNeeds} concurrent executions in all (${production.functions.reservedConcurrency} for each of ${routeList.length} API functions, plus its background functions), but account ${ACCOUNT} has 10 of its 10 available to it in ${REGION} and Lambda keeps 100 unreserved: the quota must be at least ${productionNeeds + 100}. New accounts start far below the default 1,000: request an increase in Service Quotas (AWS Lambda, "Concurrent executions", quota code L-B99A9384) in ${REGION}.`,
    ]);
  });

  it("passes with exactly the minimum left unreserved, and fails with one less", async () => {
    const limits = (unreserved: number) =>
      lambda.on(GetAccountSettingsCommand).resolves({
        AccountLimit: { ConcurrentExecutions: 5000, UnreservedConcurrentExecutions: unreserved },
      });

    limits(productionNeeds + MINIMUM_UNRESERVED_CONCURRENCY);
    expect(await problems()).toEqual([]);

    limits(productionNeeds + MINIMUM_UNRESERVED_CONCURRENCY - 1);
    expect(await problems()).toEqual([expect.stringContaining("the quota must be at least 5001.")]);
  });

  it("adds back what an existing stage's functions already reserve (every page of its resources)", async () => {
    stackIs(production.stackName, "UPDATE_COMPLETE", true);
    const functions = routeList.map((route, index) => ({
      name: `Production-PetStore-${route.operationId}`,
      // One function without a reservation: GetFunctionConcurrency answers none.
      ...(index === 0 ? {} : { reserved: production.functions.reservedConcurrency }),
    }));
    stackFunctions[production.stackName] = functions;
    const alreadyReserved = (routeList.length - 1) * production.functions.reservedConcurrency;
    // Two pages: the first with the functions but one (and the table), the second with the last.
    const summary = (name: string, ResourceType = "AWS::Lambda::Function"): StackResourceSummary => ({
      LogicalResourceId: name,
      PhysicalResourceId: name,
      ResourceType,
      ResourceStatus: "UPDATE_COMPLETE",
      LastUpdatedTimestamp: new Date(0),
    });
    cloudFormation.on(ListStackResourcesCommand).callsFake(async ({ NextToken }: { NextToken?: string }) =>
      NextToken === "page-2"
        ? { StackResourceSummaries: functions.slice(-1).map(({ name }) => summary(name)) }
        : {
            StackResourceSummaries: [
              ...functions.slice(0, -1).map(({ name }) => summary(name)),
              summary("table", "AWS::DynamoDB::Table"),
            ],
            NextToken: "page-2",
          },
    );
    // Unreserved is what is left after the stage's own reservations: enough once they are added back.
    const unreserved = productionNeeds + MINIMUM_UNRESERVED_CONCURRENCY - alreadyReserved;
    lambda.on(GetAccountSettingsCommand).resolves({
      AccountLimit: { ConcurrentExecutions: 2000, UnreservedConcurrentExecutions: unreserved },
    });

    expect(await problems()).toEqual([]);
    expect(cloudFormation.commandCalls(ListStackResourcesCommand).map((call) => call.args[0].input)).toEqual([
      { StackName: production.stackName },
      { StackName: production.stackName, NextToken: "page-2" },
    ]);
    expect(lambda.commandCalls(GetFunctionConcurrencyCommand)).toHaveLength(routeList.length);

    // One less unreserved, and the numbers in the line show what was added back.
    lambda.on(GetAccountSettingsCommand).resolves({
      AccountLimit: { ConcurrentExecutions: 2000, UnreservedConcurrentExecutions: unreserved - 1 },
    });
    expect(await problems()).toEqual([
      expect.stringContaining(`(${unreserved - 1} unreserved plus ${alreadyReserved} its functions hold already)`),
    ]);
  });

  it("does not look at the functions of a service stack that is created again", async () => {
    stackIs(production.stackName, "ROLLBACK_COMPLETE");

    expect(await problems()).toEqual([]);
    expect(cloudFormation.commandCalls(ListStackResourcesCommand)).toHaveLength(0);
  });
});

describe("API Gateway's CloudWatch role", () => {
  const existingRole = `arn:aws:iam::${ACCOUNT}:role/other-team-apigateway-logs`;

  it("already set for the account must be adopted with the setting, not replaced", async () => {
    apiGateway.on(GetAccountCommand).resolves({ cloudwatchRoleArn: existingRole });

    expect(await problems()).toEqual([
      `the account already has API Gateway's CloudWatch role ${existingRole} (another API set it up); adopt it with prod:apiGatewayCloudWatchRoleArn in cdk.json instead of replacing it with ${ACCOUNT_STACK_NAME}'s own.`,
    ]);
  });

  it("is fine when the setting adopts it", async () => {
    apiGateway.on(GetAccountCommand).resolves({ cloudwatchRoleArn: existingRole });

    expect(await problems({ settings: { ...readySettings, apiGatewayCloudWatchRoleArn: existingRole } })).toEqual([]);
  });

  it("must be the one the setting adopts", async () => {
    const adopted = `arn:aws:iam::${ACCOUNT}:role/stale`;
    apiGateway.on(GetAccountCommand).resolves({ cloudwatchRoleArn: existingRole });

    expect(await problems({ settings: { ...readySettings, apiGatewayCloudWatchRoleArn: adopted } })).toEqual([
      `prod:apiGatewayCloudWatchRoleArn adopts ${adopted}, but the account's API Gateway CloudWatch role is ${existingRole}: set prod:apiGatewayCloudWatchRoleArn to ${existingRole}.`,
    ]);
  });

  it("is not looked at once the account stack exists (it owns the setting)", async () => {
    stackIs(ACCOUNT_STACK_NAME, "UPDATE_COMPLETE", true);
    apiGateway.on(GetAccountCommand).resolves({ cloudwatchRoleArn: existingRole });

    const report = await check();

    expect(report).toMatchObject({ problems: [], checks: 6 });
    expect(apiGateway.calls()).toHaveLength(0);
  });
});

describe("AWS errors no check decides on", () => {
  it("become one line naming the call and the error, not a stack trace", async () => {
    lambda
      .on(GetAccountSettingsCommand)
      .rejects(awsError("ExpiredTokenException", "The security token included in the request is expired.\n"));

    const failure = await check().catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(PreflightError);
    expect((failure as Error).message).toBe(
      "lambda:GetAccountSettings failed: ExpiredTokenException: The security token included in the request is expired. Sign in to the stage's account again: the credentials are expired or not valid.",
    );
  });

  it("a ValidationError other than a missing stack is one too", async () => {
    cloudFormation.on(DescribeStacksCommand).rejects(awsError("ValidationError", "1 validation error detected"));

    await expect(check()).rejects.toThrow(
      new PreflightError(
        `cloudformation:DescribeStacks (${production.dataStackName}) failed: ValidationError: 1 validation error detected.`,
      ),
    );
  });
});

describe("the preflight command", () => {
  const context = {
    "prod:account": ACCOUNT,
    "prod:region": REGION,
    "prod:domainName": DOMAIN,
    "prod:certificateArn": CERTIFICATE_ARN,
    "prod:hostedZoneId": ZONE.id,
    "prod:hostedZoneName": ZONE.name,
  };

  it("prints one ready line and exits 0", async () => {
    const { out, err } = captureOutput();

    const code = await main(["--stage", "prod"], { env: {}, context: () => context });

    expect({ code, out, err }).toEqual({
      code: 0,
      out: [`preflight: prod ready to deploy to ${ACCOUNT}/${REGION} (7 checks)`],
      err: [],
    });
  });

  it("prints one line per problem and exits 1", async () => {
    const { out, err } = captureOutput();
    certificate = { ...certificate, Status: "PENDING_VALIDATION" };
    stackIs(production.stackName, "UPDATE_IN_PROGRESS");

    const code = await main(["--stage", "prod"], { env: {}, context: () => context });

    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([
      expect.stringMatching(/^preflight: stack Production-PetStore is UPDATE_IN_PROGRESS: /),
      expect.stringMatching(/^preflight: certificate .* is PENDING_VALIDATION, not ISSUED: /),
    ]);
  });

  it("stops at a malformed setting with its one line", async () => {
    const { err } = captureOutput();

    const code = await main(["--stage", "prod"], { env: {}, context: () => ({ "prod:account": "12345" }) });

    expect(code).toBe(1);
    expect(err).toEqual([
      "preflight: Invalid deployment setting context prod:account: must be one 12-digit AWS account id.",
    ]);
    expect(commandsSent()).toEqual([]);
  });

  it("takes the region from AWS_REGION when the stage pins none, and asks for one when there is none", async () => {
    const { out, err } = captureOutput();
    const unpinned = { "prod:account": ACCOUNT };

    expect(await main(["--stage", "prod"], { env: { AWS_REGION: REGION }, context: () => unpinned })).toBe(0);
    expect(out).toEqual([`preflight: prod ready to deploy to ${ACCOUNT}/${REGION} (4 checks)`]);
    expect(await main(["--stage", "prod"], { env: {}, context: () => unpinned })).toBe(1);
    expect(err).toEqual([
      `preflight: No AWS region: pin prod:region in cdk.json's "context", or set AWS_REGION to the region prod is deployed to.`,
    ]);
  });

  it.each(refusedStageArguments)("refuses %j with one usage line", (argv, problem) => {
    expect(usageRefusal(() => parsePreflightArguments(argv))).toBe(
      `${problem} Usage: npm run preflight -- --stage <staging|prod>`,
    );
  });

  it("exits 2 with a single usage line on bad arguments", async () => {
    const { code, stdout, stderr } = await runStageScript("scripts/preflight/main.ts", ["--stage", "qa"]);

    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toBe(`preflight: unknown stage "qa". Usage: npm run preflight -- --stage <staging|prod>\n`);
  });

  it("exits 1 with one line, no stack trace, without AWS credentials or region", async () => {
    // No region (unless cdk.json pins one) stops it before any call; with one, the SDK finds no
    // credentials at once: no files in HOME, no instance metadata.
    const { code, stdout, stderr } = await runWithoutCredentials("scripts/preflight/main.ts", ["--stage", "prod"]);

    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^preflight: [^\n]+\n$/);
    expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
  });
});
