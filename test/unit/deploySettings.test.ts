import { describe, expect, it } from "vitest";
import { environmentVariable, readStageSettings, SettingsError } from "../../infra/settings";

const noContext = () => undefined;

describe("deployment settings", () => {
  it("are empty when nothing is configured", () => {
    expect(readStageSettings("prod", noContext, {})).toEqual({ alarmEmails: [] });
  });

  it("come from CDK context, as cdk.json or -c gives them", () => {
    const context: Record<string, unknown> = {
      "prod:account": "123456789012",
      "prod:region": "eu-west-1",
      "prod:alarmEmails": ["ops@example.com", "oncall@example.com"],
      "prod:alarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:pager",
      "staging:account": "210987654321",
    };
    expect(readStageSettings("prod", (key) => context[key], {})).toEqual({
      account: "123456789012",
      region: "eu-west-1",
      alarmEmails: ["ops@example.com", "oncall@example.com"],
      alarmTopicArn: "arn:aws:sns:eu-west-1:123456789012:pager",
    });
    expect(readStageSettings("staging", (key) => context[key], {})).toEqual({
      account: "210987654321",
      alarmEmails: [],
    });
  });

  it("fall back to the environment, comma-separated lists included", () => {
    expect(environmentVariable("prod", "alarmTopicArn")).toBe("PETSTORE_PROD_ALARM_TOPIC_ARN");
    const settings = readStageSettings("prod", noContext, {
      PETSTORE_PROD_ACCOUNT: "123456789012",
      PETSTORE_PROD_ALARM_EMAILS: "ops@example.com, oncall@example.com",
      PETSTORE_STAGING_ACCOUNT: "210987654321",
    });
    expect(settings).toEqual({ account: "123456789012", alarmEmails: ["ops@example.com", "oncall@example.com"] });
  });

  it("prefer the context over the environment", () => {
    const settings = readStageSettings("prod", (key) => (key === "prod:account" ? "111111111111" : undefined), {
      PETSTORE_PROD_ACCOUNT: "222222222222",
    });
    expect(settings.account).toBe("111111111111");
  });

  it.each([
    ["prod:account", "12345", /prod:account: must be one 12-digit AWS account id/],
    ["prod:account", "123456789012,210987654321", /prod:account: must be one 12-digit/],
    ["prod:region", "Europe", /prod:region: must be one AWS region/],
    ["prod:alarmEmails", "ops@example.com;oncall", /prod:alarmEmails: must be e-mail addresses/],
    ["prod:alarmTopicArn", "arn:aws:sqs:eu-west-1:123456789012:q", /prod:alarmTopicArn: must be one SNS topic ARN/],
  ])("refuse a malformed %s with a message naming it", (key, value, message) => {
    const read = () => readStageSettings("prod", (asked) => (asked === key ? value : undefined), {});
    expect(read).toThrow(SettingsError);
    expect(read).toThrow(message);
  });

  it("name the environment variable a malformed value came from", () => {
    expect(() => readStageSettings("staging", noContext, { PETSTORE_STAGING_REGION: "nowhere" })).toThrow(
      "Invalid deployment setting PETSTORE_STAGING_REGION: must be one AWS region such as eu-west-1.",
    );
  });
});

describe("custom domain settings", () => {
  const certificate = "arn:aws:acm:eu-west-1:123456789012:certificate/0f2c6c1e-2d3b-4c1a-9a57-0d7c1f1f2b11";
  const read = (context: Record<string, unknown>, environment: Record<string, string> = {}) =>
    readStageSettings("prod", (key) => context[key], environment);

  it("are absent when no domain is configured", () => {
    expect(read({}).customDomain).toBeUndefined();
  });

  it("give the domain, its certificate and, with a zone, the Route 53 zone; the execute-api endpoint stays on by default", () => {
    expect(
      read({
        "prod:domainName": "api.example.com",
        "prod:certificateArn": certificate,
        "prod:hostedZoneId": "Z0123456789ABCDEFGHIJ",
        "prod:hostedZoneName": "example.com",
      }).customDomain,
    ).toEqual({
      domainName: "api.example.com",
      certificateArn: certificate,
      hostedZone: { id: "Z0123456789ABCDEFGHIJ", name: "example.com" },
      disableExecuteApiEndpoint: false,
    });
  });

  it("come from the environment too, the execute-api switch as true or false (cdk.json may give a boolean)", () => {
    expect(environmentVariable("prod", "disableExecuteApiEndpoint")).toBe("PETSTORE_PROD_DISABLE_EXECUTE_API_ENDPOINT");
    const fromEnvironment = read(
      {},
      {
        PETSTORE_PROD_DOMAIN_NAME: "api.example.com",
        PETSTORE_PROD_CERTIFICATE_ARN: certificate,
        PETSTORE_PROD_DISABLE_EXECUTE_API_ENDPOINT: "true",
      },
    );
    const fromCdkJson = read({
      "prod:domainName": "api.example.com",
      "prod:certificateArn": certificate,
      "prod:disableExecuteApiEndpoint": true,
    });

    expect(fromEnvironment.customDomain).toEqual({
      domainName: "api.example.com",
      certificateArn: certificate,
      disableExecuteApiEndpoint: true,
    });
    expect(fromCdkJson.customDomain?.disableExecuteApiEndpoint).toBe(true);
  });

  it.each([
    ["prod:domainName", "https://api.example.com/v1", /prod:domainName: must be one lower-case domain name/],
    ["prod:domainName", "localhost", /prod:domainName: must be one lower-case domain name/],
    ["prod:certificateArn", "arn:aws:iam::123456789012:server-certificate/x", /prod:certificateArn: must be one ACM/],
    ["prod:hostedZoneId", "example.com", /prod:hostedZoneId: must be one Route 53 hosted zone id/],
    ["prod:disableExecuteApiEndpoint", "yes", /prod:disableExecuteApiEndpoint: must be true or false/],
  ])("refuse a malformed %s with a message naming it", (key, value, message) => {
    const settings = { "prod:domainName": "api.example.com", "prod:certificateArn": certificate, [key]: value };

    expect(() => read(settings)).toThrow(SettingsError);
    expect(() => read(settings)).toThrow(message);
  });

  it.each([
    [{ "prod:certificateArn": certificate }, "prod:certificateArn is set but prod:domainName is not"],
    [{ "prod:domainName": "api.example.com" }, "prod:domainName needs prod:certificateArn"],
    [
      { "prod:disableExecuteApiEndpoint": "true" },
      "prod:disableExecuteApiEndpoint needs prod:domainName: without a custom domain the stage would have no address",
    ],
    [
      { "prod:domainName": "api.example.com", "prod:certificateArn": certificate, "prod:hostedZoneId": "Z0123ABC" },
      "prod:hostedZoneId and prod:hostedZoneName go together",
    ],
    [
      {
        "prod:domainName": "api.example.org",
        "prod:certificateArn": certificate,
        "prod:hostedZoneId": "Z0123ABC",
        "prod:hostedZoneName": "example.com",
      },
      "prod:domainName must be prod:hostedZoneName or a name under it",
    ],
    [
      {
        "prod:domainName": "api.notexample.com",
        "prod:certificateArn": certificate,
        "prod:hostedZoneId": "Z0123ABC",
        "prod:hostedZoneName": "example.com",
      },
      "prod:domainName must be prod:hostedZoneName or a name under it",
    ],
    [
      { "prod:region": "us-east-1", "prod:domainName": "api.example.com", "prod:certificateArn": certificate },
      "prod:certificateArn must be a certificate in the stage's region (prod:region)",
    ],
    [
      { "prod:account": "210987654321", "prod:domainName": "api.example.com", "prod:certificateArn": certificate },
      "prod:certificateArn must be a certificate in the stage's account (prod:account)",
    ],
  ])("refuse settings that do not fit together, in one line: %j", (context, message) => {
    expect(() => read(context)).toThrow(SettingsError);
    expect(() => read(context)).toThrow(message);
  });

  it("accept the zone's apex as the domain, and a certificate of the pinned region and account", () => {
    const settings = read({
      "prod:account": "123456789012",
      "prod:region": "eu-west-1",
      "prod:domainName": "example.com",
      "prod:certificateArn": certificate,
      "prod:hostedZoneId": "Z0123ABC",
      "prod:hostedZoneName": "example.com",
    });

    expect(settings.customDomain?.hostedZone).toEqual({ id: "Z0123ABC", name: "example.com" });
  });
});

describe("ignoring the rollback alarms for one deploy", () => {
  it("is off unless set to true, from context or the environment", () => {
    expect(readStageSettings("prod", noContext, {}).ignoreRollbackAlarms).toBeUndefined();
    expect(
      readStageSettings("prod", (key) => (key === "prod:ignoreRollbackAlarms" ? "false" : undefined), {})
        .ignoreRollbackAlarms,
    ).toBeUndefined();
    expect(
      readStageSettings("prod", noContext, { PETSTORE_PROD_IGNORE_ROLLBACK_ALARMS: "true" }).ignoreRollbackAlarms,
    ).toBe(true);
    expect(
      readStageSettings("staging", noContext, { PETSTORE_PROD_IGNORE_ROLLBACK_ALARMS: "true" }).ignoreRollbackAlarms,
    ).toBeUndefined();
  });

  it("refuses anything but true or false", () => {
    expect(() =>
      readStageSettings("prod", (key) => (key === "prod:ignoreRollbackAlarms" ? "yes" : undefined), {}),
    ).toThrow("Invalid deployment setting context prod:ignoreRollbackAlarms: must be true or false.");
  });
});
