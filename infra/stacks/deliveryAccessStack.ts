/**
 * What lets GitHub Actions deploy without a long-lived AWS key: the GitHub OIDC identity provider
 * and, per stage, a deploy role that only a job of this repository running in that stage's GitHub
 * environment can assume, and that may do nothing but assume the CDK bootstrap roles (which
 * `cdk diff` and `cdk deploy` use), make the pre-flight checks' read-only calls, write the smoke
 * checks' synthetic key record (smokeKeyStatements), and set the stage's alarm delivery test alarm
 * to ALARM and read its history (`npm run alarms:verify`).
 * Optional and outside the stage stacks: `infra/app.ts` adds it only when the cdk context names the
 * repository (docs/delivery.md, one-time set-up).
 *
 * One stack per account, holding the roles of the stages pinned to that account only: the CDK
 * bootstrap's deploy role can deploy anything in its account (its CloudFormation execution role is
 * administrator by default), so a staging role in production's account would let the unreviewed
 * `staging` environment deploy production, past the approval gate. With no stage pinned there is
 * one stack with both roles, for one account holding both stages (docs/delivery.md says what the
 * staging role can reach then).
 */
import {
  ArnFormat,
  CfnOutput,
  DefaultStackSynthesizer,
  Duration,
  Fn,
  Stack,
  type StackProps,
  Validations,
} from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import { tableAreas } from "../../lib/db/table";
import { servingTableName } from "../config";
import {
  ACCOUNT_STACK_NAME,
  alarmDeliveryTestAlarmName,
  type DeployedStage,
  type DeployedStageName,
  deployedStages,
} from "../deployment";
import { contextKey, type StageSettings, unconfiguredSettings } from "../settings";
import { costTags, tagResources } from "../tags";

/** GitHub's token issuer; IAM names the token's claims after it (`<host>:aud`, `<host>:sub`). */
export const GITHUB_OIDC_HOST = "token.actions.githubusercontent.com";
/** The audience aws-actions/configure-aws-credentials requests by default. */
export const GITHUB_OIDC_AUDIENCE = "sts.amazonaws.com";

export const DELIVERY_ACCESS_STACK_NAME = "PetStore-DeliveryAccess";

/**
 * How long a deploy job's AWS session may last; the deploy workflow asks for exactly this
 * (`role-duration-seconds`) and gives the job as long (`timeout-minutes`). `cdk deploy` waits for
 * CloudFormation, which waits for CodeDeploy to shift each function's traffic (a 5-minute canary in
 * production) and, when a rollback alarm fires, for the stack's rollback, which moves the aliases
 * back. The CLI's session of the bootstrap deploy role is a chained one (at most an hour:
 * https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html; the CLI assumes it again
 * from the job's session, https://github.com/aws/aws-cdk/issues/32287), so the job's own session is
 * what must outlast the deploy: when it runs
 * out, the CLI stops watching a deploy CloudFormation carries on with, the job fails, and the next
 * deploy finds the stack busy. One hour (the default) is too tight for a deploy that rolls back.
 */
export const DEPLOY_SESSION_DURATION = Duration.hours(2);

/**
 * The cdk context keys (`npx cdk deploy PetStore-DeliveryAccess -c githubRepository=owner/repo`).
 * An existing OIDC provider is a setting of each stage's account (`<stage>:githubOidcProviderArn`,
 * infra/settings.ts); the old app-wide `githubOidcProviderArn` gave every account the same ARN and
 * is refused.
 */
export const DELIVERY_CONTEXT = {
  githubRepository: "githubRepository",
  githubOidcProviderArn: "githubOidcProviderArn",
  /** CDK's own key, also read by the stage stacks' synthesizer. */
  bootstrapQualifier: "@aws-cdk/core:bootstrapQualifier",
} as const;

export interface DeliveryAccessConfig {
  /**
   * The repository as its OIDC tokens name it in the `sub` claim: `owner/repo`, or for repositories
   * with immutable subject claims (created or renamed from mid-2026 on, or opted in) the form
   * with their numeric ids that the repository's OIDC settings show.
   */
  readonly githubRepository: string;
  /** Qualifier of the `cdk bootstrap` the stages deploy through (default hnb659fds). */
  readonly bootstrapQualifier: string;
  /** The stages to make deploy roles for (default: all). */
  readonly stages: readonly DeployedStage[];
}

export class DeliveryConfigError extends Error {}

/** GitHub owner and repository names, optionally each with an immutable id; no wildcard, no `:`. */
const REPOSITORY_PATTERN = /^[A-Za-z0-9-]+(@[0-9]+)?\/[A-Za-z0-9._-]+(@[0-9]+)?$/;
/** What `cdk bootstrap --qualifier` accepts. */
const QUALIFIER_PATTERN = /^[A-Za-z0-9_-]{1,10}$/;

/**
 * The typed configuration from cdk context, or undefined when no repository is named (then the app
 * has no delivery stack and synthesises exactly as before).
 */
export function deliveryAccessConfigFromContext(
  tryGetContext: (key: string) => unknown,
): DeliveryAccessConfig | undefined {
  const repository = tryGetContext(DELIVERY_CONTEXT.githubRepository);
  if (tryGetContext(DELIVERY_CONTEXT.githubOidcProviderArn) !== undefined) {
    throw new DeliveryConfigError(
      `${DELIVERY_CONTEXT.githubOidcProviderArn} would apply to every account; an account's existing provider is a setting of the stage(s) in that account: set ${contextKey("staging", "githubOidcProviderArn")} and/or ${contextKey("prod", "githubOidcProviderArn")} in cdk.json instead.`,
    );
  }
  if (repository === undefined) return undefined;
  if (typeof repository !== "string" || !REPOSITORY_PATTERN.test(repository)) {
    throw new DeliveryConfigError(
      `${DELIVERY_CONTEXT.githubRepository} must be owner/repo as the OIDC sub claim names it, not ${JSON.stringify(repository)}.`,
    );
  }
  const qualifier = tryGetContext(DELIVERY_CONTEXT.bootstrapQualifier) ?? DefaultStackSynthesizer.DEFAULT_QUALIFIER;
  if (typeof qualifier !== "string" || !QUALIFIER_PATTERN.test(qualifier)) {
    throw new DeliveryConfigError(
      `${DELIVERY_CONTEXT.bootstrapQualifier} must be a cdk bootstrap qualifier (1 to 10 letters, digits, - or _), not ${JSON.stringify(qualifier)}.`,
    );
  }
  return {
    githubRepository: repository,
    bootstrapQualifier: qualifier,
    stages: Object.values(deployedStages),
  };
}

/**
 * The `sub` claim of a job that runs in a GitHub environment:
 * `repo:ORG-NAME/REPO-NAME:environment:ENVIRONMENT-NAME`
 * (https://docs.github.com/en/actions/reference/security/oidc#filtering-for-a-specific-environment).
 * A job with an environment carries this subject whatever branch or event started it.
 */
export function githubEnvironmentSubject(repository: string, environment: string): string {
  return `repo:${repository}:environment:${environment}`;
}

/**
 * cdk-nag's AwsSolutions-IAM5 flags every resource with a `*` in the pre-flight statements: a stack's
 * ARN ends in the id CloudFormation generates (`stack/<name>/*`), a function's name in the suffix it
 * generates, and lambda:GetAccountSettings accepts no resource but `*`. Each is acknowledged on the
 * role, by the finding's own id (cdk-nag writes an intrinsic as `<Ref>`).
 */
function acknowledgePreflightWildcards(
  role: iam.Role,
  statements: readonly iam.PolicyStatement[],
  reason = "Read-only pre-flight calls (npm run preflight): a stack ARN ends in the id CloudFormation generates, a function name in the suffix it generates, and lambda:GetAccountSettings has no resource but *.",
): void {
  const stack = Stack.of(role);
  const render = (resource: string): string => {
    const resolved = stack.resolve(resource) as unknown;
    if (typeof resolved === "string") return resolved;
    const [separator, parts] = (resolved as { "Fn::Join": [string, unknown[]] })["Fn::Join"];
    return parts
      .map((part) => (typeof part === "string" ? part : `<${(part as { Ref: string }).Ref}>`))
      .join(separator);
  };
  const wildcards = new Set(
    statements
      .flatMap((statement) => statement.resources)
      .map(render)
      .filter((resource) => resource.includes("*")),
  );
  Validations.of(role).acknowledge(
    ...[...wildcards].map((resource) => ({
      id: `AwsSolutions::AwsSolutions-IAM5[Resource::${resource}]`,
      reason,
    })),
  );
}

/** The bootstrap's lookup role (ReadOnlyAccess, kms:Decrypt denied) in a stage's account and region. */
const lookupRoleArn = (qualifier: string, region: string | undefined) =>
  bootstrapRoleArn(DefaultStackSynthesizer.DEFAULT_LOOKUP_ROLE_ARN, qualifier, region);

/** One bootstrap role's ARN, from the synthesizer's template, for the qualifier and the stage's region. */
function bootstrapRoleArn(template: string, qualifier: string, region: string | undefined): string {
  const qualified = template.replaceAll(`\${Qualifier}`, qualifier);
  // A stage pinned to a region deploys through that region's bootstrap roles, wherever this stack is.
  return Fn.sub(region === undefined ? qualified : qualified.replaceAll(`\${AWS::Region}`, region));
}

/**
 * Who may assume a role: exact matches only, the audience configure-aws-credentials asks for and
 * this repository's jobs in this one GitHub environment.
 */
function githubEnvironmentPrincipal(providerArn: string, repository: string, environment: string) {
  return new iam.WebIdentityPrincipal(providerArn, {
    StringEquals: {
      [`${GITHUB_OIDC_HOST}:aud`]: GITHUB_OIDC_AUDIENCE,
      [`${GITHUB_OIDC_HOST}:sub`]: githubEnvironmentSubject(repository, environment),
    },
  });
}

/**
 * The roles `cdk bootstrap` creates and the CDK CLI assumes to deploy (CloudFormation), publish
 * assets (S3, ECR) and look things up, in the account and region this stack is deployed to. The
 * CloudFormation execution role is not among them: only CloudFormation assumes it.
 */
function bootstrapRoleArns(qualifier: string, region: string | undefined): string[] {
  return [
    DefaultStackSynthesizer.DEFAULT_DEPLOY_ROLE_ARN,
    DefaultStackSynthesizer.DEFAULT_FILE_ASSET_PUBLISHING_ROLE_ARN,
    DefaultStackSynthesizer.DEFAULT_IMAGE_ASSET_PUBLISHING_ROLE_ARN,
    DefaultStackSynthesizer.DEFAULT_LOOKUP_ROLE_ARN,
  ].map((template) => bootstrapRoleArn(template, qualifier, region));
}

export interface DeliveryAccessStackProps extends StackProps {
  readonly config: DeliveryAccessConfig;
  /** The region each stage is pinned to, if any: its role may assume that region's bootstrap roles. */
  readonly stageRegions?: Readonly<Partial<Record<DeployedStageName, string>>>;
  /** The stages' settings: the pre-flight checks read the certificate and zone they name. */
  readonly stageSettings?: Readonly<Partial<Record<DeployedStageName, StageSettings>>>;
  /** The account's GitHub OIDC provider when it has one already (an account holds one). */
  readonly existingOidcProviderArn?: string;
}

/**
 * The read-only calls `npm run preflight` makes for a stage (scripts/preflight), on exactly the
 * stage's stacks, certificate and zone where the action allows a resource: the deploy job runs it
 * before `cdk deploy`, and the preview job before production's approval is requested.
 */
export function preflightStatements(
  scope: Construct,
  stage: DeployedStage,
  settings: StageSettings | undefined,
  region: string | undefined,
): iam.PolicyStatement[] {
  const stack = Stack.of(scope);
  const inRegion = (service: string, resource: string, resourceName: string, arnFormat?: ArnFormat) =>
    stack.formatArn({
      service,
      resource,
      resourceName,
      ...(region === undefined ? {} : { region }),
      ...(arnFormat === undefined ? {} : { arnFormat }),
    });
  const customDomain = settings?.customDomain;
  return [
    new iam.PolicyStatement({
      sid: "PreflightStacks",
      actions: ["cloudformation:DescribeStacks", "cloudformation:ListStackResources"],
      resources: [stage.dataStackName, stage.stackName, ACCOUNT_STACK_NAME].map((name) =>
        inRegion("cloudformation", "stack", `${name}/*`),
      ),
    }),
    new iam.PolicyStatement({
      sid: "PreflightFunctionConcurrency",
      actions: ["lambda:GetFunctionConcurrency"],
      // CloudFormation names a function `<stack name>-<logical id>-<suffix>`.
      resources: [inRegion("lambda", "function", `${stage.stackName}-*`, ArnFormat.COLON_RESOURCE_NAME)],
    }),
    new iam.PolicyStatement({
      sid: "PreflightAccountSettings",
      // Neither supports a resource narrower than the account's settings themselves.
      actions: ["lambda:GetAccountSettings"],
      resources: ["*"],
    }),
    new iam.PolicyStatement({
      sid: "PreflightApiGatewayAccount",
      actions: ["apigateway:GET"],
      resources: [
        stack.formatArn({
          service: "apigateway",
          account: "",
          resource: "/account",
          ...(region === undefined ? {} : { region }),
        }),
      ],
    }),
    ...(customDomain
      ? [
          new iam.PolicyStatement({
            sid: "PreflightCertificate",
            actions: ["acm:DescribeCertificate"],
            resources: [customDomain.certificateArn],
          }),
        ]
      : []),
    ...(customDomain?.hostedZone
      ? [
          new iam.PolicyStatement({
            sid: "PreflightHostedZone",
            actions: ["route53:GetHostedZone", "route53:ListResourceRecordSets"],
            resources: [
              stack.formatArn({
                service: "route53",
                region: "",
                account: "",
                resource: "hostedzone",
                resourceName: customDomain.hostedZone.id,
              }),
            ],
          }),
        ]
      : []),
  ];
}

/**
 * What `npm run alarms:verify` calls after the deploy (scripts/alarmsVerify): SetAlarmState on the
 * stage's delivery test alarm, and DescribeAlarmHistory to read whether its notification was
 * published. Both accept that one alarm as their resource (Service Authorization Reference, Amazon
 * CloudWatch: the `alarm` resource type is required for both actions,
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazoncloudwatch.html), so
 * the role may set the state of no other alarm: not a paging one, not another stage's.
 */
export function alarmDeliveryTestStatements(
  scope: Construct,
  stage: DeployedStage,
  region: string | undefined,
  settings?: Pick<StageSettings, "alarmTopicArn">,
): iam.PolicyStatement[] {
  const stack = Stack.of(scope);
  return [
    new iam.PolicyStatement({
      sid: "AlarmDeliveryTest",
      actions: ["cloudwatch:SetAlarmState", "cloudwatch:DescribeAlarmHistory"],
      resources: [
        stack.formatArn({
          service: "cloudwatch",
          resource: "alarm",
          resourceName: alarmDeliveryTestAlarmName(stage.stage),
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          ...(region === undefined ? {} : { region }),
        }),
      ],
    }),
    // Before it sets the alarm off, the command lists each paging topic's subscriptions: at least one
    // must be confirmed, and each confirmed one must filter the test out. The stage's own topic is
    // named by CloudFormation `<stack name>-<logical id>-<suffix>` (its ARN is the stack output the
    // command reads with the Preflight policy's cloudformation:DescribeStacks); the existing topic
    // is the one the stage's settings name. ListSubscriptionsByTopic takes the topic as its resource
    // (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsns.html).
    new iam.PolicyStatement({
      sid: "AlarmDeliveryTestSubscriptions",
      actions: ["sns:ListSubscriptionsByTopic"],
      resources: [
        stack.formatArn({
          service: "sns",
          resource: `${stage.stackName}-MonitoringAlarmTopic*`,
          ...(region === undefined ? {} : { region }),
        }),
        ...(settings?.alarmTopicArn ? [settings.alarmTopicArn] : []),
      ],
    }),
    // A subscription's filter policy: GetSubscriptionAttributes names no resource type in the Service
    // Authorization Reference (same page), so only `*` allows it; it reads, never changes.
    new iam.PolicyStatement({
      sid: "AlarmDeliveryTestFilterPolicies",
      actions: ["sns:GetSubscriptionAttributes"],
      resources: ["*"],
    }),
  ];
}

/**
 * What the smoke step's `npm run keys -- create --stage <stage> --synthetic --expires-in 1h` needs
 * beyond the pre-flight's cloudformation:DescribeStacks (which finds the table in the stage's
 * outputs): one conditional PutItem of a key record (lib/auth/dynamoApiKeyStore.ts; a condition
 * expression needs no other action), on the table the stage serves from, and only in the API key
 * partition (`dynamodb:LeadingKeys`, as the functions' grants are limited:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html). It
 * cannot read, list, revoke or overwrite a key, nor touch a pet. The table is encrypted with an AWS
 * owned key (infra/stacks/dataStack.ts sets none), so no KMS permission is needed. A stage switched
 * to a restored table (`<stage>:tableName`) needs this stack deployed again for the grant to follow.
 */
export function smokeKeyStatements(
  scope: Construct,
  stage: DeployedStage,
  settings: StageSettings | undefined,
  region: string | undefined,
): iam.PolicyStatement[] {
  return [
    new iam.PolicyStatement({
      sid: "SmokeKey",
      actions: ["dynamodb:PutItem"],
      resources: [
        Stack.of(scope).formatArn({
          service: "dynamodb",
          resource: "table",
          resourceName: servingTableName({ tableName: stage.tableName, settings: settings ?? unconfiguredSettings }),
          ...(region === undefined ? {} : { region }),
        }),
      ],
      conditions: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": [...tableAreas.apiKeys.partitionKeys] } },
    }),
  ];
}

export class DeliveryAccessStack extends Stack {
  /** One per stage, by GitHub environment name. */
  readonly deployRoles: ReadonlyMap<string, iam.Role>;

  constructor(scope: Construct, id: string, props: DeliveryAccessStackProps) {
    super(scope, id, props);
    const { config } = props;

    // IAM no longer needs a certificate thumbprint for GitHub's issuer: it verifies the issuer's TLS
    // certificate against its own trusted CAs (IAM API reference, UpdateOpenIDConnectProviderThumbprint:
    // https://docs.aws.amazon.com/IAM/latest/APIReference/API_UpdateOpenIDConnectProviderThumbprint.html;
    // https://github.com/aws-actions/configure-aws-credentials/issues/763). The native resource
    // needs no custom-resource Lambda function.
    const provider = props.existingOidcProviderArn
      ? iam.OidcProviderNative.fromOidcProviderArn(this, "GitHubOidcProvider", props.existingOidcProviderArn)
      : new iam.OidcProviderNative(this, "GitHubOidcProvider", {
          url: `https://${GITHUB_OIDC_HOST}`,
          clientIds: [GITHUB_OIDC_AUDIENCE],
        });

    const roles = new Map<string, iam.Role>();
    for (const stage of config.stages) {
      const region = props.stageRegions?.[stage.stage];
      const preflight = preflightStatements(this, stage, props.stageSettings?.[stage.stage], region);
      const alarmDeliveryTest = alarmDeliveryTestStatements(this, stage, region, props.stageSettings?.[stage.stage]);
      const role = new iam.Role(this, `${stage.id}DeployRole`, {
        description: `GitHub Actions deploys of ${stage.stackName} from ${config.githubRepository}, environment ${stage.githubEnvironment}`,
        maxSessionDuration: DEPLOY_SESSION_DURATION,
        assumedBy: githubEnvironmentPrincipal(
          provider.oidcProviderArn,
          config.githubRepository,
          stage.githubEnvironment,
        ),
        inlinePolicies: {
          AssumeCdkBootstrapRoles: new iam.PolicyDocument({
            statements: [
              new iam.PolicyStatement({
                actions: ["sts:AssumeRole"],
                resources: bootstrapRoleArns(config.bootstrapQualifier, region),
              }),
            ],
          }),
          Preflight: new iam.PolicyDocument({ statements: preflight }),
          AlarmDeliveryTest: new iam.PolicyDocument({ statements: alarmDeliveryTest }),
          SmokeKey: new iam.PolicyDocument({
            statements: smokeKeyStatements(this, stage, props.stageSettings?.[stage.stage], region),
          }),
        },
      });
      acknowledgePreflightWildcards(role, preflight);
      acknowledgePreflightWildcards(
        role,
        alarmDeliveryTest,
        "Read-only calls of npm run alarms:verify: the stage's alarm topic is named by CloudFormation with a generated suffix, and sns:GetSubscriptionAttributes has no resource but *.",
      );
      roles.set(stage.githubEnvironment, role);
      new CfnOutput(this, `${stage.id}DeployRoleArn`, {
        value: role.roleArn,
        description: `Variable AWS_DEPLOY_ROLE_ARN of the GitHub environment ${stage.githubEnvironment}`,
      });
      const { previewEnvironment } = stage;
      if (previewEnvironment) {
        roles.set(
          previewEnvironment,
          this.previewRole(config, provider.oidcProviderArn, { ...stage, previewEnvironment }, preflight, region),
        );
      }
    }
    this.deployRoles = roles;
  }

  /**
   * The role of the job that runs before a stage's approval is requested (`production-preview`):
   * read-only, so an unreviewed job may hold it. It runs the pre-flight checks and assumes the CDK
   * lookup role (read-only by the bootstrap's design), which `cdk diff --method template` uses to
   * read the deployed template: the approver sees production's diff even when production is in an
   * account no staging credential can reach.
   */
  private previewRole(
    config: DeliveryAccessConfig,
    providerArn: string,
    stage: DeployedStage & { previewEnvironment: string },
    preflight: iam.PolicyStatement[],
    region: string | undefined,
  ): iam.Role {
    const role = new iam.Role(this, `${stage.id}PreviewRole`, {
      description: `Read-only preview of ${stage.stackName} before its approval, from ${config.githubRepository}, environment ${stage.previewEnvironment}`,
      maxSessionDuration: Duration.hours(1),
      assumedBy: githubEnvironmentPrincipal(providerArn, config.githubRepository, stage.previewEnvironment),
      inlinePolicies: {
        AssumeCdkLookupRole: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              actions: ["sts:AssumeRole"],
              resources: [lookupRoleArn(config.bootstrapQualifier, region)],
            }),
          ],
        }),
        Preflight: new iam.PolicyDocument({ statements: preflight }),
      },
    });
    acknowledgePreflightWildcards(role, preflight);
    new CfnOutput(this, `${stage.id}PreviewRoleArn`, {
      value: role.roleArn,
      description: `Variable AWS_PREVIEW_ROLE_ARN of the GitHub environment ${stage.previewEnvironment}`,
    });
    return role;
  }
}

/** The id of the delivery access stack for one account (`cdk deploy PetStore-DeliveryAccess-222222222222`). */
export const deliveryAccessStackId = (account: string | undefined): string =>
  account === undefined ? DELIVERY_ACCESS_STACK_NAME : `${DELIVERY_ACCESS_STACK_NAME}-${account}`;

/**
 * The delivery access stacks: one per account the stages are pinned to, each with only the roles of
 * the stages in that account; or, with no stage pinned, one environment-agnostic stack with every
 * stage's role. Pinning some stages but not others is refused: the unpinned stage's role would land
 * in whatever account the credentials point to, possibly the pinned one's.
 */
export function addDeliveryAccessStacks(
  scope: Construct,
  config: DeliveryAccessConfig,
  settingsOf: (stage: DeployedStage) => StageSettings,
): DeliveryAccessStack[] {
  const pinned = config.stages.filter((stage) => settingsOf(stage).account !== undefined);
  const unpinned = config.stages.filter((stage) => settingsOf(stage).account === undefined);
  if (pinned.length > 0 && unpinned.length > 0) {
    throw new DeliveryConfigError(
      `Deploy roles: ${pinned.map((stage) => stage.stage).join(", ")} is pinned to an account but ${unpinned.map((stage) => stage.stage).join(", ")} is not; pin every stage (<stage>:account and <stage>:region in cdk.json) so that each account holds only its own stages' deploy roles.`,
    );
  }
  const byAccount = new Map<string | undefined, DeployedStage[]>();
  for (const stage of config.stages) {
    const { account } = settingsOf(stage);
    byAccount.set(account, [...(byAccount.get(account) ?? []), stage]);
  }
  return [...byAccount].map(([account, stages]) => {
    const regions = Object.fromEntries(
      stages.flatMap((stage) => {
        const { region } = settingsOf(stage);
        return region === undefined ? [] : [[stage.stage, region]];
      }),
    );
    const region = stages.map((stage) => settingsOf(stage).region).find((candidate) => candidate !== undefined);
    const providers = [...new Set(stages.flatMap((stage) => settingsOf(stage).githubOidcProviderArn ?? []))];
    if (providers.length > 1) {
      throw new DeliveryConfigError(
        `${stages.map((stage) => contextKey(stage.stage, "githubOidcProviderArn")).join(" and ")} name different providers, but the stages share one account, which holds one GitHub OIDC provider.`,
      );
    }
    const [existingOidcProviderArn] = providers;
    const tags = costTags(stages.map((stage) => stage.stage));
    const stack = new DeliveryAccessStack(scope, deliveryAccessStackId(account), {
      tags,
      stackName: DELIVERY_ACCESS_STACK_NAME,
      config: { ...config, stages },
      stageRegions: regions,
      stageSettings: Object.fromEntries(stages.map((stage) => [stage.stage, settingsOf(stage)])),
      ...(existingOidcProviderArn === undefined ? {} : { existingOidcProviderArn }),
      ...(account === undefined ? {} : { env: { account, ...(region === undefined ? {} : { region }) } }),
      description:
        account === undefined
          ? "GitHub Actions OIDC deploy roles of the Pet Store API stages"
          : `GitHub Actions OIDC deploy roles of the Pet Store API stages in account ${account}: ${stages.map((stage) => stage.stage).join(", ")}`,
    });
    tagResources(stack, tags);
    return stack;
  });
}
