/**
 * The deployments the rehearsal synthesizes, as a platform engineer would configure them (CDK context,
 * infra/settings.ts): both stages pinned to example accounts and one region, once in two accounts and once in one;
 * production with alarm e-mails and a custom domain in a Route 53 zone. The accounts are the documentation range AWS
 * never issues, so nothing here points at a real one.
 */
export interface RehearsalConfiguration {
  /** Short name, in the report's headings. */
  readonly name: string;
  readonly description: string;
  /** CDK context on top of cdk.json's, as `-c key=value` would give it. */
  readonly context: Readonly<Record<string, string>>;
}

export const REHEARSAL_REGION = "eu-west-1";
export const STAGING_ACCOUNT = "111111111111";
export const PRODUCTION_ACCOUNT = "222222222222";
/** A third account: the same calls from it must be denied. */
export const OTHER_ACCOUNT = "333333333333";

const production = (account: string): Record<string, string> => ({
  "prod:account": account,
  "prod:region": REHEARSAL_REGION,
  "prod:alarmEmails": "oncall@example.com,platform@example.com",
  "prod:domainName": "api.example.com",
  "prod:certificateArn": `arn:aws:acm:${REHEARSAL_REGION}:${account}:certificate/0f2c6c1e-2d3b-4c1a-9a57-0d7c1f1f2b11`,
  "prod:hostedZoneId": "Z0123456789ABCDEFGHIJ",
  "prod:hostedZoneName": "example.com",
});

export const rehearsalConfigurations: readonly RehearsalConfiguration[] = [
  {
    name: "two-accounts",
    description: `staging in ${STAGING_ACCOUNT}, production in ${PRODUCTION_ACCOUNT}, both in ${REHEARSAL_REGION}`,
    context: {
      "staging:account": STAGING_ACCOUNT,
      "staging:region": REHEARSAL_REGION,
      ...production(PRODUCTION_ACCOUNT),
    },
  },
  {
    name: "one-account",
    description: `staging and production both in ${STAGING_ACCOUNT}, ${REHEARSAL_REGION}`,
    context: {
      "staging:account": STAGING_ACCOUNT,
      "staging:region": REHEARSAL_REGION,
      ...production(STAGING_ACCOUNT),
    },
  },
];
