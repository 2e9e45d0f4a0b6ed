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
