/**
 * Deployment settings a platform engineer sets without editing code: the AWS account and region a
 * stage is pinned to, and where its alarms go. Each comes from CDK context (cdk.json's "context",
 * or `npx cdk deploy -c prod:account=123456789012`) or, when the context does not have it, from the
 * environment (`PETSTORE_PROD_ACCOUNT=123456789012`). The app entry (infra/app.ts) reads them once
 * and hands each stage's settings to its constructs inside the stage's typed config; no construct
 * reads context or the environment itself. Nothing is required: with no settings, `npm run synth`
 * works offline and produces environment-agnostic stacks.
 */
import type { DeployedStageName } from "./deployment";

export interface StageSettings {
  /** The 12-digit account the stage may be deployed to; deploying with another account's credentials fails. */
  readonly account?: string;
  /** The region the stage is deployed to, e.g. `eu-west-1`. */
  readonly region?: string;
  /** E-mail addresses subscribed to the stage's alarm topic (each must confirm the subscription). */
  readonly alarmEmails: readonly string[];
  /** An existing SNS topic (for example the team's pager integration) that receives the stage's alarms too. */
  readonly alarmTopicArn?: string;
}

/** A stage's settings when nothing is configured. */
export const unconfiguredSettings: StageSettings = { alarmEmails: [] };

export class SettingsError extends Error {
  override readonly name = "SettingsError";
}

/** The setting names, as they appear after the stage in a context key (`prod:alarmEmails`). */
export const settingNames = ["account", "region", "alarmEmails", "alarmTopicArn"] as const;
type SettingName = (typeof settingNames)[number];

/** `prod:alarmTopicArn` in context, `PETSTORE_PROD_ALARM_TOPIC_ARN` in the environment. */
export const contextKey = (stage: DeployedStageName, name: SettingName) => `${stage}:${name}`;
export const environmentVariable = (stage: DeployedStageName, name: SettingName) =>
  `PETSTORE_${stage.toUpperCase()}_${name.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`;

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
};

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
  return {
    alarmEmails: valid("alarmEmails"),
    ...(account === undefined ? {} : { account }),
    ...(region === undefined ? {} : { region }),
    ...(alarmTopicArn === undefined ? {} : { alarmTopicArn }),
  };
}
