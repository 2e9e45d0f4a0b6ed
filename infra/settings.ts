/**
 * Deployment settings a platform engineer sets without editing code: the AWS account and region a
 * stage is pinned to, where its alarms go, its custom domain, and (for one deploy) whether its
 * rollback alarms are ignored. Each comes from CDK context (cdk.json's "context",
 * or `npx cdk deploy -c prod:account=123456789012`) or, when the context does not have it, from the
 * environment (`PETSTORE_PROD_ACCOUNT=123456789012`). The app entry (infra/app.ts) reads them once
 * and hands each stage's settings to its constructs inside the stage's typed config; no construct
 * reads context or the environment itself. Nothing is required: with no settings, `npm run synth`
 * works offline and produces environment-agnostic stacks.
 */
import { type DeployedStageName, deployedStages } from "./deployment";

export interface StageSettings {
  /** The 12-digit account the stage may be deployed to; deploying with another account's credentials fails. */
  readonly account?: string;
  /** The region the stage is deployed to, e.g. `eu-west-1`. */
  readonly region?: string;
  /** E-mail addresses subscribed to the stage's alarm topic (each must confirm the subscription). */
  readonly alarmEmails: readonly string[];
  /** An existing SNS topic (for example the team's pager integration) that receives the stage's alarms too. */
  readonly alarmTopicArn?: string;
  /** The stage's own address, `https://<domainName>/v1`; only the execute-api address when undefined. */
  readonly customDomain?: CustomDomainSettings;
  /**
   * For one deploy: CodeDeploy shifts traffic without looking at the rollback alarms. For shipping a
   * fix (or an earlier commit) while the stage is failing, when the alarms would roll it back at once
   * (docs/delivery.md). Never set in cdk.json.
   */
  readonly ignoreRollbackAlarms?: true;
  /**
   * API Gateway's CloudWatch Logs role that the stage's account already has (another team's API set
   * it up): the account stack adopts it instead of replacing the account-wide setting with a role of
   * its own (infra/stacks/accountStack.ts). Stages sharing an account must agree.
   */
  readonly apiGatewayCloudWatchRoleArn?: string;
  /**
   * The GitHub OIDC identity provider the stage's account already has (an account holds one): the
   * delivery access stack of that account trusts it instead of creating one
   * (infra/stacks/deliveryAccessStack.ts). Stages sharing an account must agree.
   */
  readonly githubOidcProviderArn?: string;
  /**
   * The table the stage's functions use instead of its data stack's own (`petstore-<stage>`): a table
   * restored to a point in time by `npm run restore` (scripts/restore), which prints the value. The
   * data stack keeps, and never deletes, its own table (infra/stacks/dataStack.ts).
   */
  readonly tableName?: string;
}

export interface CustomDomainSettings {
  /** For example `api.example.com`: a REGIONAL API Gateway domain name, mapped to the stage under `v1`. */
  readonly domainName: string;
  /** An issued ACM certificate for the domain name, in the stage's own account and region. */
  readonly certificateArn: string;
  /** When given, the stack keeps an alias record for the domain name in this public Route 53 zone. */
  readonly hostedZone?: { readonly id: string; readonly name: string };
  /** Refuse calls through `https://<api-id>.execute-api.<region>.amazonaws.com` (403): the domain is the only way in. */
  readonly disableExecuteApiEndpoint: boolean;
}

/** A stage's settings when nothing is configured. */
export const unconfiguredSettings: StageSettings = { alarmEmails: [] };

export class SettingsError extends Error {
  override readonly name = "SettingsError";
}

/** The setting names, as they appear after the stage in a context key (`prod:alarmEmails`). */
export const settingNames = [
  "account",
  "region",
  "alarmEmails",
  "alarmTopicArn",
  "domainName",
  "certificateArn",
  "hostedZoneId",
  "hostedZoneName",
  "disableExecuteApiEndpoint",
  "ignoreRollbackAlarms",
  "apiGatewayCloudWatchRoleArn",
  "githubOidcProviderArn",
  "tableName",
] as const;
type SettingName = (typeof settingNames)[number];

/** `prod:alarmTopicArn` in context, `PETSTORE_PROD_ALARM_TOPIC_ARN` in the environment. */
export const contextKey = (stage: DeployedStageName, name: SettingName) => `${stage}:${name}`;
export const environmentVariable = (stage: DeployedStageName, name: SettingName) =>
  `PETSTORE_${stage.toUpperCase()}_${name.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`;

/** A lower-case DNS name of at least two labels, without scheme, path or trailing dot. */
const DOMAIN_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

const rules: Record<SettingName, { pattern: RegExp; many: boolean; expected: string }> = {
  account: { pattern: /^\d{12}$/, many: false, expected: "one 12-digit AWS account id" },
  region: { pattern: /^[a-z]{2}(-[a-z]+)+-\d$/, many: false, expected: "one AWS region such as eu-west-1" },
  alarmEmails: {
    pattern: /^[^\s@,;]+@[^\s@,;]+\.[^\s@,;]+$/,
    many: true,
    expected: "e-mail addresses separated by commas",
  },
  alarmTopicArn: {
    pattern: /^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[\w-]{1,256}$/,
    many: false,
    expected: "one SNS topic ARN",
  },
  domainName: {
    pattern: DOMAIN_NAME,
    many: false,
    expected: "one lower-case domain name such as api.example.com (no https://, no path)",
  },
  certificateArn: {
    pattern: /^arn:aws[a-z-]*:acm:[a-z]{2}(-[a-z]+)+-\d:\d{12}:certificate\/[0-9a-f-]{36}$/,
    many: false,
    expected: "one ACM certificate ARN",
  },
  hostedZoneId: {
    pattern: /^Z[0-9A-Z]{1,31}$/,
    many: false,
    expected: "one Route 53 hosted zone id such as Z0123456789ABCDEFGHIJ",
  },
  hostedZoneName: { pattern: DOMAIN_NAME, many: false, expected: "one lower-case domain name such as example.com" },
  disableExecuteApiEndpoint: { pattern: /^(true|false)$/, many: false, expected: "true or false" },
  ignoreRollbackAlarms: { pattern: /^(true|false)$/, many: false, expected: "true or false" },
  apiGatewayCloudWatchRoleArn: {
    pattern: /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/,
    many: false,
    expected: "one IAM role ARN",
  },
  githubOidcProviderArn: {
    pattern: /^arn:aws[a-z-]*:iam::\d{12}:oidc-provider\/token\.actions\.githubusercontent\.com$/,
    many: false,
    expected: "the ARN of the account's IAM OIDC provider for token.actions.githubusercontent.com",
  },
  // DynamoDB's own limits on a table name (3 to 255 of these characters):
  // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html
  // tableNameProblem below also requires the stage's own prefix.
  tableName: { pattern: /^[a-zA-Z0-9_.-]{3,255}$/, many: false, expected: "one DynamoDB table name" },
};

/**
 * Why `name` cannot be the stage's table (`<stage>:tableName`), or undefined when it can: it must be
 * the stage's own (`petstore-<stage>`, or a name that starts `petstore-<stage>-`), so that a setting
 * copied from another stage can never point staging's functions at production's data.
 */
export function tableNameProblem(stage: DeployedStageName, name: string): string | undefined {
  const own = deployedStages[stage].tableName;
  if (!rules.tableName.pattern.test(name)) return `must be ${rules.tableName.expected}`;
  if (name !== own && !name.startsWith(`${own}-`)) {
    return `must be ${own} or start with ${own}- (the stage's own tables)`;
  }
  return undefined;
}

/**
 * One stage's settings. `context` looks a key up in CDK context; `environment` is only consulted for
 * a setting the context does not have. A malformed value is a SettingsError naming the setting and
 * where it came from (never silently ignored: a typo in an account id must not deploy anywhere).
 */
export function readStageSettings(
  stage: DeployedStageName,
  context: (key: string) => unknown,
  environment: Readonly<Record<string, string | undefined>>,
): StageSettings {
  const lookUp = (name: SettingName): { value: unknown; source: string } | undefined => {
    const key = contextKey(stage, name);
    const fromContext = context(key);
    if (fromContext !== undefined && fromContext !== null && fromContext !== "") {
      return { value: fromContext, source: `context ${key}` };
    }
    const variable = environmentVariable(stage, name);
    return environment[variable]?.trim() ? { value: environment[variable], source: variable } : undefined;
  };
  const valid = (name: SettingName): string[] => {
    const found = lookUp(name);
    if (!found) return [];
    // cdk.json may hold a list; `-c` and the environment give comma-separated text.
    const items = (Array.isArray(found.value) ? found.value : String(found.value).split(","))
      .map((item) => String(item).trim())
      .filter(Boolean);
    const { pattern, many, expected } = rules[name];
    const wellFormed = items.length > 0 && items.every((item) => pattern.test(item));
    if (!wellFormed || (!many && items.length > 1)) {
      // The value itself is left out: the source is enough to find it, and CI logs are shared.
      throw new SettingsError(`Invalid deployment setting ${found.source}: must be ${expected}.`);
    }
    return items;
  };
  const [account] = valid("account");
  const [region] = valid("region");
  const [alarmTopicArn] = valid("alarmTopicArn");
  const customDomain = customDomainSettings(stage, (name) => valid(name)[0], { account, region });
  const [ignoreRollbackAlarms] = valid("ignoreRollbackAlarms");
  const [apiGatewayCloudWatchRoleArn] = valid("apiGatewayCloudWatchRoleArn");
  const [githubOidcProviderArn] = valid("githubOidcProviderArn");
  const [tableName] = valid("tableName");
  const tableProblem = tableName === undefined ? undefined : tableNameProblem(stage, tableName);
  if (tableProblem) {
    throw new SettingsError(`Invalid deployment setting ${contextKey(stage, "tableName")}: ${tableProblem}.`);
  }
  for (const [name, arn] of [
    ["apiGatewayCloudWatchRoleArn", apiGatewayCloudWatchRoleArn],
    ["githubOidcProviderArn", githubOidcProviderArn],
  ] as const) {
    // arn:partition:iam::account:…; an account-wide resource of another account cannot be adopted.
    if (arn !== undefined && account !== undefined && arn.split(":")[4] !== account) {
      throw new SettingsError(
        `Invalid deployment settings: ${contextKey(stage, name)} must be in the stage's account (${contextKey(stage, "account")}): it is adopted there, not shared.`,
      );
    }
  }
  return {
    alarmEmails: valid("alarmEmails"),
    ...(account === undefined ? {} : { account }),
    ...(region === undefined ? {} : { region }),
    ...(alarmTopicArn === undefined ? {} : { alarmTopicArn }),
    ...(customDomain === undefined ? {} : { customDomain }),
    ...(ignoreRollbackAlarms === "true" ? { ignoreRollbackAlarms: true as const } : {}),
    ...(apiGatewayCloudWatchRoleArn === undefined ? {} : { apiGatewayCloudWatchRoleArn }),
    ...(githubOidcProviderArn === undefined ? {} : { githubOidcProviderArn }),
    ...(tableName === undefined ? {} : { tableName }),
  };
}

/** The custom domain settings, each well-formed already, checked against each other and the stage's pin. */
function customDomainSettings(
  stage: DeployedStageName,
  value: (name: SettingName) => string | undefined,
  pinned: { account: string | undefined; region: string | undefined },
): CustomDomainSettings | undefined {
  const key = (name: SettingName) => contextKey(stage, name);
  const inconsistent = (problem: string) => new SettingsError(`Invalid deployment settings: ${problem}.`);
  const domainName = value("domainName");
  const certificateArn = value("certificateArn");
  const hostedZoneId = value("hostedZoneId");
  const hostedZoneName = value("hostedZoneName");
  const disableExecuteApiEndpoint = value("disableExecuteApiEndpoint") === "true";

  if (domainName === undefined) {
    const without = (["certificateArn", "hostedZoneId", "hostedZoneName"] as const).find(
      (name) => value(name) !== undefined,
    );
    if (without) throw inconsistent(`${key(without)} is set but ${key("domainName")} is not`);
    if (disableExecuteApiEndpoint) {
      throw inconsistent(
        `${key("disableExecuteApiEndpoint")} needs ${key("domainName")}: without a custom domain the stage would have no address`,
      );
    }
    return undefined;
  }
  if (certificateArn === undefined) {
    throw inconsistent(`${key("domainName")} needs ${key("certificateArn")}, the ACM certificate it serves`);
  }
  // arn:partition:acm:region:account:certificate/id. API Gateway serves a REGIONAL domain name with
  // a certificate of the API's own region and account:
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-regional-api-custom-domain-create.html
  const [, , , certificateRegion, certificateAccount] = certificateArn.split(":");
  if (pinned.region !== undefined && certificateRegion !== pinned.region) {
    throw inconsistent(
      `${key("certificateArn")} must be a certificate in the stage's region (${key("region")}): a REGIONAL domain name uses a certificate of its API's region`,
    );
  }
  if (pinned.account !== undefined && certificateAccount !== pinned.account) {
    throw inconsistent(`${key("certificateArn")} must be a certificate in the stage's account (${key("account")})`);
  }
  if ((hostedZoneId === undefined) !== (hostedZoneName === undefined)) {
    throw inconsistent(`${key("hostedZoneId")} and ${key("hostedZoneName")} go together: set both or neither`);
  }
  if (hostedZoneName !== undefined && domainName !== hostedZoneName && !domainName.endsWith(`.${hostedZoneName}`)) {
    throw inconsistent(`${key("domainName")} must be ${key("hostedZoneName")} or a name under it`);
  }
  return {
    domainName,
    certificateArn,
    ...(hostedZoneId !== undefined && hostedZoneName !== undefined
      ? { hostedZone: { id: hostedZoneId, name: hostedZoneName } }
      : {}),
    disableExecuteApiEndpoint,
  };
}

/**
 * Context keys of the settings source itself. A deploy's settings must match those of the branch
 * the pipeline deploys (infra/settingsBaseline.ts); `-c` flags, PETSTORE_* variables and local
 * changes to cdk.json that differ from them are refused unless `allowSettingsDrift` is set
 * (settingsDrift below).
 */
export const SETTINGS_CONTEXT = { allowSettingsDrift: "allowSettingsDrift" } as const;

/** Settings that must match the committed ones: all but ignoreRollbackAlarms, which is for one deploy by design. */
const committedSettingNames = settingNames.filter((name) => name !== "ignoreRollbackAlarms");

/** A setting's value as comparable text: lists and comma-separated text alike, trimmed. */
export function comparable(value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const items = (Array.isArray(value) ? value : String(value).split(",")).map((item) => String(item).trim());
  return items.filter(Boolean).join(",") || undefined;
}

/** What a run's settings are compared with (infra/settingsBaseline.ts builds it). */
export interface SettingsBaselineLike {
  readonly label: string;
  readonly context: Readonly<Record<string, unknown>>;
  readonly workingTree?: Readonly<Record<string, unknown>>;
  readonly describeLocalChange?: (key: string) => string;
}

/**
 * Where the settings this run would deploy with differ from the baseline's, one entry per setting
 * (`prod:account (from PETSTORE_PROD_ACCOUNT)`), without values. `context` is what the app got
 * (this checkout's cdk.json merged with cdk.context.json and `-c` flags).
 */
export function settingsDrift(
  stages: readonly DeployedStageName[],
  context: (key: string) => unknown,
  environment: Readonly<Record<string, string | undefined>>,
  baseline: SettingsBaselineLike,
): string[] {
  const drift: string[] = [];
  for (const stage of stages) {
    for (const name of committedSettingNames) {
      const key = contextKey(stage, name);
      const variable = environmentVariable(stage, name);
      const fromBaseline = comparable(baseline.context[key]);
      const fromContext = comparable(context(key));
      const fromEnvironment = comparable(environment[variable]);
      if (fromContext !== fromBaseline) {
        const fromLocalFile = baseline.workingTree && comparable(baseline.workingTree[key]) === fromContext;
        const source =
          fromLocalFile && baseline.describeLocalChange
            ? baseline.describeLocalChange(key)
            : fromContext === undefined
              ? "unset here"
              : "from -c or cdk.context.json";
        drift.push(`${key} (${source})`);
      } else if (fromEnvironment !== undefined && fromEnvironment !== fromBaseline) {
        // Even where the context wins over it: whoever set it expects it to apply.
        drift.push(`${key} (from ${variable})`);
      }
    }
  }
  return drift;
}

/** The one line a drifting run stops with. */
export function settingsDriftMessage(drift: readonly string[], baseline: { readonly label: string }): string {
  return (
    `Deployment settings differ from ${baseline.label}, what the pipeline deploys: ${drift.join(", ")}. ` +
    "Its next run would undo this deploy; merge the change into main through a pull request (docs/deploy.md, section 1), " +
    `or pass -c ${SETTINGS_CONTEXT.allowSettingsDrift}=true for a deliberate one-off.`
  );
}

/**
 * Warnings about committed settings that are legal but dangerous to keep: `ignoreRollbackAlarms` is
 * meant for one deploy; committed, it turns off the rollback alarms of every deploy of the stage.
 * Printed by every synthesis (infra/app.ts) and in the pipeline's summary (scripts/readiness.ts).
 */
export function committedSettingWarnings(
  stages: readonly DeployedStageName[],
  committed: Readonly<Record<string, unknown>>,
): string[] {
  return stages
    .filter((stage) => comparable(committed[contextKey(stage, "ignoreRollbackAlarms")]) === "true")
    .map(
      (stage) =>
        `cdk.json commits ${contextKey(stage, "ignoreRollbackAlarms")}: every deploy of ${stage} shifts traffic without watching its rollback alarms. ` +
        `It is meant for one deploy (-c ${contextKey(stage, "ignoreRollbackAlarms")}=true, or the workflow's ignore-rollback-alarms input); remove it from cdk.json.`,
    );
}

/**
 * Why the pipeline may not deploy a stage with these settings, or undefined when it may. Production
 * must be pinned to an account and region and have an alarm destination: the pipeline must not
 * deploy it wherever its role happens to point, nor with alarms that reach nobody.
 */
export function pipelineReadiness(stage: DeployedStageName, settings: StageSettings): string | undefined {
  if (stage !== "prod") return undefined;
  const missing = [
    ...(settings.account === undefined ? [contextKey(stage, "account")] : []),
    ...(settings.region === undefined ? [contextKey(stage, "region")] : []),
    ...(settings.alarmEmails.length === 0 && settings.alarmTopicArn === undefined
      ? [`${contextKey(stage, "alarmEmails")} or ${contextKey(stage, "alarmTopicArn")}`]
      : []),
  ];
  return missing.length === 0
    ? undefined
    : `The pipeline does not deploy ${stage} without ${missing.join(", ")} in cdk.json's "context" (docs/deploy.md, section 1).`;
}
