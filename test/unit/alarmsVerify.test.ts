/**
 * `npm run alarms:verify`: the delivery test against mocked CloudWatch and STS answers, on a fake
 * clock (no real waiting), and the command's lines and exit codes.
 */
import {
  type AlarmHistoryItem,
  CloudWatchClient,
  DescribeAlarmHistoryCommand,
  SetAlarmStateCommand,
} from "@aws-sdk/client-cloudwatch";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { main, parseAlarmsVerifyArguments, runName } from "../../scripts/alarmsVerify/main";
import {
  type AlarmsVerifyClients,
  actionOutcome,
  DEFAULT_TIMEOUT_MS,
  verifyAlarmDelivery,
} from "../../scripts/alarmsVerify/verify";
import { captureOutput } from "../support/consoleOutput";
import { refusedStageArguments, runStageScript, runWithoutCredentials, usageRefusal } from "../support/stageCommand";

const cloudWatch = mockClient(CloudWatchClient);
const sts = mockClient(STSClient);

const ACCOUNT = "222222222222";
const REGION = "eu-west-1";
const ALARM = "petstore-prod-alarm-delivery-test";
const TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:Production-PetStore-MonitoringDeploymentEventsTopic1A2B3C4D-abcdef`;
const clients: AlarmsVerifyClients = {
  cloudWatch: new CloudWatchClient({ region: REGION }),
  sts: new STSClient({ region: REGION }),
};

function awsError(name: string, message = `${name} (test)`): Error {
  return Object.assign(new Error(message), { name });
}

/** A clock that only moves when the command sleeps. */
let now: number;
const clock = () => new Date(now);
const sleep = vi.fn(async (milliseconds: number) => {
  now += milliseconds;
});
/** What DescribeAlarmHistory answers at each read, in turn; the last answer repeats. */
let histories: AlarmHistoryItem[][];

const succeeded = (at: number): AlarmHistoryItem => ({
  AlarmName: ALARM,
  HistoryItemType: "Action",
  Timestamp: new Date(at),
  HistorySummary: `Successfully executed action ${TOPIC}`,
  HistoryData: JSON.stringify({ actionState: "Succeeded", notificationResource: TOPIC }),
});
const failed = (at: number, error: string): AlarmHistoryItem => ({
  AlarmName: ALARM,
  HistoryItemType: "Action",
  Timestamp: new Date(at),
  HistorySummary: `Failed to execute action ${TOPIC}. Received error: "${error}"`,
  HistoryData: JSON.stringify({ actionState: "Failed", notificationResource: TOPIC, error }),
});

beforeEach(() => {
  cloudWatch.reset();
  sts.reset();
  sleep.mockClear();
  now = Date.parse("2026-05-04T10:00:00Z");
  histories = [[]];
  sts.on(GetCallerIdentityCommand).resolves({ Account: ACCOUNT, Arn: `arn:aws:iam::${ACCOUNT}:role/deploy` });
  cloudWatch.on(SetAlarmStateCommand).resolves({});
  let reads = 0;
  cloudWatch.on(DescribeAlarmHistoryCommand).callsFake(async () => {
    const answer = histories[Math.min(reads, histories.length - 1)] ?? [];
    reads += 1;
    return { AlarmHistoryItems: answer };
  });
});

const verify = (overrides: Partial<Parameters<typeof verifyAlarmDelivery>[0]> = {}) =>
  verifyAlarmDelivery({
    stage: "prod",
    pinnedAccount: ACCOUNT,
    region: REGION,
    alarmName: ALARM,
    runName: "GitHub Actions run 42",
    clients,
    clock,
    sleep,
    ...overrides,
  });

/** The states the command set the alarm to, in order. */
const statesSet = () =>
  cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input.StateValue as string);

describe("a notification that arrives", () => {
  it("sets the alarm to ALARM with a reason naming the run, reads its Action history since then, and succeeds once the action succeeded", async () => {
    const start = now;
    histories = [[], [succeeded(start + 6_000)]];

    const result = await verify();

    expect(result).toEqual({
      ok: true,
      line: `prod: alarm notifications reach their encrypted topic: ${ALARM} published to ${TOPIC} (${ACCOUNT}/${REGION}, 5 s).`,
    });
    const [alarm] = cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input);
    expect(alarm).toMatchObject({ AlarmName: ALARM, StateValue: "ALARM" });
    expect(alarm?.StateReason).toContain("GitHub Actions run 42");
    const [read] = cloudWatch.commandCalls(DescribeAlarmHistoryCommand).map((call) => call.args[0].input);
    expect(read).toMatchObject({ AlarmName: ALARM, HistoryItemType: "Action" });
    const since = (read?.StartDate as Date | undefined)?.getTime() ?? Number.NaN;
    expect(since).toBeLessThanOrEqual(start);
    expect(since).toBeGreaterThan(start - 60_000);
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("ignores history older than the run", async () => {
    histories = [
      [failed(now - 3_600_000, "an old failure")],
      [failed(now - 3_600_000, "an old failure"), succeeded(now)],
    ];

    const result = await verify();

    expect(result.ok).toBe(true);
  });
});

describe("a notification that fails", () => {
  it("answers one line with AWS's reason and what to check: the key policy when the key refused", async () => {
    histories = [
      [failed(now + 2_000, "CloudWatch Alarms does not have authorization to access the SNS topic encryption key.")],
    ];

    const result = await verify();

    expect(result).toEqual({
      ok: false,
      line:
        `prod: CloudWatch could not publish alarm ${ALARM}'s notification to ${TOPIC} (${ACCOUNT}/${REGION}): ` +
        "CloudWatch Alarms does not have authorization to access the SNS topic encryption key. Alarms of this stage may reach nobody: " +
        "check the key policy of the topic's KMS key (AlarmTopicKey): it must allow cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey* (docs/alarms.md).",
    });
    expect(result.line).not.toContain("\n");
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("points at the topic policy when SNS refused the publish", async () => {
    histories = [
      [
        failed(
          now + 2_000,
          `Resource: arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${ALARM} is not authorized to perform: SNS:Publish on resource: ${TOPIC}`,
        ),
      ],
    ];

    const result = await verify();

    expect(result.ok).toBe(false);
    expect(result.line).toMatch(
      /check the topic policy: it must allow cloudwatch\.amazonaws\.com sns:Publish for this account's alarms/,
    );
  });

  it("reads the reason from the summary when the history data has none, and names everything to check when it says nothing specific", () => {
    const item: AlarmHistoryItem = {
      HistoryItemType: "Action",
      HistorySummary: `Failed to execute action ${TOPIC}. Received error: "null (Service: Something; Status Code: 400)"`,
      HistoryData: "not json",
    };

    expect(actionOutcome(item)).toEqual({
      kind: "failed",
      topicArn: TOPIC,
      reason: "null (Service: Something; Status Code: 400)",
    });
  });

  it("says so when no action appears within the timeout, and sets the alarm back to OK", async () => {
    histories = [[]];

    const result = await verify();

    expect(result.ok).toBe(false);
    expect(result.line).toBe(
      `prod: no notification attempt of alarm ${ALARM} (${ACCOUNT}/${REGION}) appeared in its history within ${DEFAULT_TIMEOUT_MS / 1000} s of setting it to ALARM: ` +
        `check that its actions are enabled and name the deployment events topic (aws cloudwatch describe-alarms --alarm-names ${ALARM}), then run npm run alarms:verify -- --stage prod again (docs/alarms.md).`,
    );
    expect(now - Date.parse("2026-05-04T10:00:00Z")).toBe(DEFAULT_TIMEOUT_MS);
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("sets the alarm back to OK even when reading its history fails, and reports the read in one line", async () => {
    cloudWatch
      .on(DescribeAlarmHistoryCommand)
      .rejects(awsError("AccessDenied", "User: arn:aws:sts::222222222222:assumed-role/deploy is not authorized"));

    await expect(verify()).rejects.toThrow(
      /^cloudwatch:DescribeAlarmHistory failed: AccessDenied: User: .* is not authorized\. The credentials need cloudwatch:DescribeAlarmHistory on the delivery test alarm/,
    );
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("keeps its verdict and mentions it on the same line when setting the alarm back to OK fails", async () => {
    histories = [[succeeded(now + 1_000)]];
    cloudWatch.on(SetAlarmStateCommand, { StateValue: "OK" }).rejects(awsError("Throttling", "Rate exceeded"));

    const result = await verify();

    expect(result.ok).toBe(true);
    expect(result.line).toMatch(
      /\(cloudwatch:SetAlarmState \(back to OK\) failed: Throttling: Rate exceeded\. .* It returns to OK by itself within minutes\.\)$/,
    );
  });
});

describe("what stops the test before it starts", () => {
  it("a stage not deployed: the alarm does not exist, one line, nothing to set back", async () => {
    cloudWatch.on(SetAlarmStateCommand).rejects(awsError("ResourceNotFound", `Alarm ${ALARM} not found`));

    await expect(verify()).rejects.toThrow(
      `alarm ${ALARM} does not exist in ${ACCOUNT}/${REGION}: deploy prod first (its stack creates the alarm, infra/stacks/monitoring.ts), or sign in to the account and region it is deployed to.`,
    );
    expect(statesSet()).toEqual(["ALARM"]);
    expect(cloudWatch.commandCalls(DescribeAlarmHistoryCommand)).toEqual([]);
  });

  it("no credentials: one line saying to sign in, before any alarm is touched", async () => {
    sts
      .on(GetCallerIdentityCommand)
      .rejects(awsError("CredentialsProviderError", "Could not load credentials from any providers"));

    await expect(verify()).rejects.toThrow(
      "sts:GetCallerIdentity failed: CredentialsProviderError: Could not load credentials from any providers. No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).",
    );
    expect(cloudWatch.calls()).toEqual([]);
  });

  it("credentials for another account than the stage is pinned to", async () => {
    sts.on(GetCallerIdentityCommand).resolves({ Account: "333333333333" });

    await expect(verify()).rejects.toThrow(
      "credentials are for account 333333333333 but prod is pinned to 222222222222 (prod:account in cdk.json): sign in to 222222222222.",
    );
    expect(cloudWatch.calls()).toEqual([]);
  });
});

describe("the alarms:verify command", () => {
  const context = { "prod:account": ACCOUNT, "prod:region": REGION };
  const run = (argv: string[], env: NodeJS.ProcessEnv = {}, settings: Record<string, unknown> = context) =>
    main(argv, { env, context: () => settings, clients: () => clients, clock, sleep });

  it("tests the stage's fixed alarm in its pinned region, prints one line and exits 0", async () => {
    const { out, err } = captureOutput();
    histories = [[succeeded(now + 1_000)]];

    const code = await run(["--stage", "prod"], {
      GITHUB_RUN_ID: "77",
      GITHUB_RUN_ATTEMPT: "2",
      AWS_REGION: "us-east-1",
    });

    expect({ code, err }).toEqual({ code: 0, err: [] });
    expect(out).toEqual([
      expect.stringMatching(
        /^alarms:verify: prod: alarm notifications reach their encrypted topic: petstore-prod-alarm-delivery-test published to /,
      ),
    ]);
    expect(out[0]).toContain(`(${ACCOUNT}/${REGION},`);
    const [alarm] = cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input);
    expect(alarm?.StateReason).toContain("GitHub Actions run 77 attempt 2");
  });

  it("prints the failure's one line to stderr and exits 1", async () => {
    const { out, err } = captureOutput();
    histories = [
      [failed(now + 1_000, "CloudWatch Alarms does not have authorization to access the SNS topic encryption key.")],
    ];

    const code = await run(["--stage", "prod"]);

    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([
      expect.stringMatching(/^alarms:verify: prod: CloudWatch could not publish alarm .* check the key policy/),
    ]);
  });

  it("names the missing alarm of a stage that is not deployed in one line and exits 1", async () => {
    const { err } = captureOutput();
    cloudWatch.on(SetAlarmStateCommand).rejects(awsError("ResourceNotFound", "not found"));

    expect(await run(["--stage", "prod"])).toBe(1);
    expect(err).toEqual([
      expect.stringMatching(/^alarms:verify: alarm petstore-prod-alarm-delivery-test does not exist in /),
    ]);
  });

  it("asks for a region when the stage pins none and the environment has none", async () => {
    const { err } = captureOutput();

    expect(await run(["--stage", "staging"], {}, {})).toBe(1);
    expect(err).toEqual([
      `alarms:verify: no region: pin staging:region in cdk.json's "context", or set AWS_REGION to the region staging is deployed to.`,
    ]);
    expect(cloudWatch.calls()).toEqual([]);
  });

  it.each(refusedStageArguments)("refuses %j with one usage line", (argv, problem) => {
    expect(usageRefusal(() => parseAlarmsVerifyArguments(argv))).toBe(
      `${problem} Usage: npm run alarms:verify -- --stage <staging|prod>`,
    );
  });

  it("names a local run after who ran it and when", () => {
    expect(runName({}, new Date("2026-05-04T10:00:00Z"))).toMatch(/^run by .+ at 2026-05-04T10:00:00\.000Z$/);
    expect(runName({ GITHUB_RUN_ID: "9", GITHUB_REPOSITORY: "octo-org/pets" }, new Date(0))).toBe(
      "GitHub Actions run 9 of octo-org/pets",
    );
  });

  it("exits 2 with a single usage line on an unknown stage", async () => {
    const { code, stdout, stderr } = await runStageScript("scripts/alarmsVerify/main.ts", ["--stage", "qa"]);

    expect({ code, stdout, stderr }).toEqual({
      code: 2,
      stdout: "",
      stderr: `alarms:verify: unknown stage "qa". Usage: npm run alarms:verify -- --stage <staging|prod>\n`,
    });
  }, 30_000);

  it("exits 1 with one line, no stack trace, without AWS credentials", async () => {
    const { code, stdout, stderr } = await runWithoutCredentials("scripts/alarmsVerify/main.ts", ["--stage", "prod"], {
      AWS_REGION: REGION,
    });

    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^alarms:verify: [^\n]+\n$/);
    expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
  }, 30_000);
});
