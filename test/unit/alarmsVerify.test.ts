/**
 * `npm run alarms:verify`: the delivery test against mocked CloudWatch, SNS, CloudFormation and STS
 * answers, on a fake clock (no real waiting), and the command's lines and exit codes. Each false
 * pass a review found has its own test: a paging topic that refuses CloudWatch, an existing topic
 * not published to, only pending subscriptions, another run's success, the OK action's success.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import {
  type AlarmHistoryItem,
  CloudWatchClient,
  DescribeAlarmHistoryCommand,
  SetAlarmStateCommand,
} from "@aws-sdk/client-cloudwatch";
import {
  GetSubscriptionAttributesCommand,
  ListSubscriptionsByTopicCommand,
  SNSClient,
  type Subscription,
} from "@aws-sdk/client-sns";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { alarmDeliveryTestFilterPolicy } from "../../infra/deployment";
import { main, parseAlarmsVerifyArguments, runName } from "../../scripts/alarmsVerify/main";
import {
  type AlarmsVerifyClients,
  actionOutcome,
  DEFAULT_TIMEOUT_MS,
  verifyAlarmDelivery,
} from "../../scripts/alarmsVerify/verify";
import { captureOutput } from "../support/consoleOutput";
import { projectRoot } from "../support/processes";
import { refusedStageArguments, runStageScript, runWithoutCredentials, usageRefusal } from "../support/stageCommand";

const cloudWatch = mockClient(CloudWatchClient);
const sts = mockClient(STSClient);
const sns = mockClient(SNSClient);
const cloudFormation = mockClient(CloudFormationClient);

const ACCOUNT = "222222222222";
const REGION = "eu-west-1";
const ALARM = "petstore-prod-alarm-delivery-test";
const STACK = "Production-PetStore";
const TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:Production-PetStore-MonitoringAlarmTopic1A2B3C4D-abcdef`;
const PAGER = `arn:aws:sns:${REGION}:333333333333:pager`;
const EVENTS_TOPIC = `arn:aws:sns:${REGION}:${ACCOUNT}:Production-PetStore-MonitoringDeploymentEventsTopic5E6F-ghijkl`;
const RUN = "0b6d1c3e-run-of-this-test";
/** The filter policy the stack gives its subscriptions (infra/deployment.ts), written out. */
const FILTER = { FilterPolicyScope: "MessageBody", FilterPolicy: `{"AlarmName":[{"anything-but":["${ALARM}"]}]}` };
const clients: AlarmsVerifyClients = {
  cloudWatch: new CloudWatchClient({ region: REGION }),
  sts: new STSClient({ region: REGION }),
  sns: new SNSClient({ region: REGION }),
  cloudFormation: new CloudFormationClient({ region: REGION }),
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
/** What DescribeAlarmHistory answers for Action items at each read, in turn; the last answer repeats. */
let histories: AlarmHistoryItem[][];
/** What it answers for StateUpdate items. */
let stateUpdates: AlarmHistoryItem[];
/** Each topic's subscriptions, and each subscription's attributes. */
let subscriptions: Record<string, Subscription[]>;
let attributes: Record<string, Record<string, string>>;

/** The notification CloudWatch published, as an Action item's data carries it. */
const publishedMessage = (state: string, runId: string) =>
  JSON.stringify({
    default: JSON.stringify({
      AlarmName: ALARM,
      NewStateValue: state,
      NewStateReason: `npm run alarms:verify (GitHub Actions run 42, run ${runId}): …`,
      StateChangeTime: "2026-05-04T10:00:01.000+0000",
    }),
  });

interface Of {
  readonly topic?: string;
  readonly runId?: string;
  readonly state?: string;
}
const succeeded = (at: number, { topic = TOPIC, runId = RUN, state = "ALARM" }: Of = {}): AlarmHistoryItem => ({
  AlarmName: ALARM,
  HistoryItemType: "Action",
  Timestamp: new Date(at),
  HistorySummary: `Successfully executed action ${topic}`,
  HistoryData: JSON.stringify({
    actionState: "Succeeded",
    notificationResource: topic,
    stateUpdateTimestamp: at - 500,
    publishedMessage: publishedMessage(state, runId),
  }),
});
const failed = (at: number, error: string, { topic = TOPIC, runId = RUN }: Of = {}): AlarmHistoryItem => ({
  AlarmName: ALARM,
  HistoryItemType: "Action",
  Timestamp: new Date(at),
  HistorySummary: `Failed to execute action ${topic}. Received error: "${error}"`,
  HistoryData: JSON.stringify({
    actionState: "Failed",
    notificationResource: topic,
    error,
    publishedMessage: publishedMessage("ALARM", runId),
  }),
});
const confirmed = (topic: string, id: string, protocol = "email"): Subscription => ({
  TopicArn: topic,
  SubscriptionArn: `${topic}:${id}`,
  Protocol: protocol,
  Endpoint: "oncall@example.com",
});
const pending = (topic: string): Subscription => ({
  TopicArn: topic,
  SubscriptionArn: "PendingConfirmation",
  Protocol: "email",
  Endpoint: "oncall@example.com",
});

beforeEach(() => {
  cloudWatch.reset();
  sts.reset();
  sns.reset();
  cloudFormation.reset();
  sleep.mockClear();
  now = Date.parse("2026-05-04T10:00:00Z");
  histories = [[]];
  stateUpdates = [];
  subscriptions = { [TOPIC]: [confirmed(TOPIC, "s1")], [PAGER]: [confirmed(PAGER, "p1", "https")] };
  attributes = { [`${TOPIC}:s1`]: FILTER, [`${PAGER}:p1`]: FILTER };
  sts.on(GetCallerIdentityCommand).resolves({ Account: ACCOUNT, Arn: `arn:aws:iam::${ACCOUNT}:role/deploy` });
  cloudFormation.on(DescribeStacksCommand).resolves({
    Stacks: [
      {
        StackName: STACK,
        StackStatus: "UPDATE_COMPLETE",
        CreationTime: new Date(0),
        Outputs: [{ OutputKey: "AlarmTopicArn", OutputValue: TOPIC }],
      },
    ],
  });
  sns.on(ListSubscriptionsByTopicCommand).callsFake(async ({ TopicArn }: { TopicArn: string }) => ({
    Subscriptions: subscriptions[TopicArn] ?? [],
  }));
  sns.on(GetSubscriptionAttributesCommand).callsFake(async ({ SubscriptionArn }: { SubscriptionArn: string }) => ({
    Attributes: attributes[SubscriptionArn] ?? {},
  }));
  cloudWatch.on(SetAlarmStateCommand).resolves({});
  let reads = 0;
  cloudWatch.on(DescribeAlarmHistoryCommand).callsFake(async ({ HistoryItemType }: { HistoryItemType: string }) => {
    if (HistoryItemType === "StateUpdate") return { AlarmHistoryItems: stateUpdates };
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
    stackName: STACK,
    alarmName: ALARM,
    runName: "GitHub Actions run 42",
    runId: RUN,
    clients,
    clock,
    sleep,
    ...overrides,
  });

/** The states the command set the alarm to, in order. */
const statesSet = () =>
  cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input.StateValue as string);

const timedOut = (missing: string) =>
  `prod: no notification of this run of alarm ${ALARM} (${ACCOUNT}/${REGION}) to ${missing} appeared in its history within ${DEFAULT_TIMEOUT_MS / 1000} s of setting it to ALARM: ` +
  `check that its actions are enabled and its ALARM actions name every paging topic (aws cloudwatch describe-alarms --alarm-names ${ALARM}; deploy prod again after changing prod:alarmTopicArn), then run npm run alarms:verify -- --stage prod again (docs/alarms.md).`;

describe("a notification that reaches every paging topic", () => {
  it("reads the stage's alarm topic from its stack, sets the alarm to ALARM with a reason naming the run and its id, and succeeds once this run's notification was published there", async () => {
    const start = now;
    histories = [[], [succeeded(start + 6_000)]];

    const result = await verify();

    expect(result).toEqual({
      ok: true,
      line: `prod: alarm notifications reach every paging topic, and their confirmed subscriptions filter the test out: ${ALARM} published to ${TOPIC} (${ACCOUNT}/${REGION}, 5 s).`,
    });
    expect(cloudFormation.commandCalls(DescribeStacksCommand)[0]?.args[0].input).toEqual({ StackName: STACK });
    const [alarm] = cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input);
    expect(alarm).toMatchObject({ AlarmName: ALARM, StateValue: "ALARM" });
    expect(alarm?.StateReason).toContain("GitHub Actions run 42");
    expect(alarm?.StateReason).toContain(RUN);
    const [read] = cloudWatch.commandCalls(DescribeAlarmHistoryCommand).map((call) => call.args[0].input);
    expect(read).toMatchObject({ AlarmName: ALARM, HistoryItemType: "Action" });
    const since = (read?.StartDate as Date | undefined)?.getTime() ?? Number.NaN;
    expect(since).toBeLessThanOrEqual(start);
    expect(since).toBeGreaterThan(start - 60_000);
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("with an existing topic configured, succeeds only once both topics have this run's notification", async () => {
    histories = [[succeeded(now + 1_000)], [succeeded(now + 1_000), succeeded(now + 2_000, { topic: PAGER })]];

    const result = await verify({ externalTopicArn: PAGER });

    expect(result.ok).toBe(true);
    expect(result.line).toContain(`published to ${TOPIC} and ${PAGER}`);
    expect(sleep).toHaveBeenCalledTimes(1);
  });

  it("picks a random run id by itself, and counts only notifications that carry it", async () => {
    cloudWatch.on(SetAlarmStateCommand, { StateValue: "ALARM" }).callsFake(async ({ StateReason }) => {
      const runId = /run ([0-9a-f-]{36})\)/.exec(String(StateReason))?.[1] ?? "none";
      histories = [[succeeded(now + 1_000, { runId })]];
      return {};
    });

    const result = await verify({ runId: undefined });

    expect(result.ok).toBe(true);
  });

  it("matches an Action item without its published message through this run's StateUpdate item", async () => {
    const changedAt = now + 1_000;
    const { publishedMessage: _, ...data } = JSON.parse(succeeded(changedAt).HistoryData as string) as Record<
      string,
      unknown
    >;
    histories = [
      [{ ...succeeded(changedAt), HistoryData: JSON.stringify({ ...data, stateUpdateTimestamp: changedAt }) }],
    ];
    stateUpdates = [
      {
        HistoryItemType: "StateUpdate",
        Timestamp: new Date(changedAt),
        HistoryData: JSON.stringify({
          oldState: { stateValue: "OK" },
          newState: { stateValue: "ALARM", stateReason: `npm run alarms:verify (x, run ${RUN}): …` },
        }),
      },
    ];

    expect((await verify()).ok).toBe(true);

    stateUpdates = [];
    expect((await verify()).ok).toBe(false);
  });
});

describe("false passes it refuses", () => {
  it("a paging topic whose key refuses CloudWatch: one line with AWS's reason and the key policy to check", async () => {
    histories = [
      [failed(now + 2_000, "CloudWatch Alarms does not have authorization to access the SNS topic encryption key.")],
    ];

    const result = await verify();

    expect(result).toEqual({
      ok: false,
      line:
        `prod: CloudWatch could not publish alarm ${ALARM}'s notification to paging topic ${TOPIC} (${ACCOUNT}/${REGION}): ` +
        "CloudWatch Alarms does not have authorization to access the SNS topic encryption key. Alarms sent to it reach nobody: " +
        "check the key policy of the topic's KMS key (AlarmTopicKey): it must allow cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey* (docs/alarms.md).",
    });
    expect(result.line).not.toContain("\n");
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("a paging topic whose policy refuses CloudWatch, even when the other topic accepted", async () => {
    histories = [
      [
        succeeded(now + 1_000),
        failed(
          now + 2_000,
          `Resource: arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:${ALARM} is not authorized to perform: SNS:Publish on resource: ${PAGER}`,
          { topic: PAGER },
        ),
      ],
    ];

    const result = await verify({ externalTopicArn: PAGER });

    expect(result.ok).toBe(false);
    expect(result.line).toContain(`notification to paging topic ${PAGER}`);
    expect(result.line).toMatch(
      /check the existing topic's access policy \(an Allow of sns:Publish for cloudwatch\.amazonaws\.com/,
    );
  });

  it("points at the own topic's policy when SNS refused the publish", async () => {
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

  it("an existing topic configured but not published to: only the stage's topic has the notification", async () => {
    histories = [[succeeded(now + 1_000)]];

    const result = await verify({ externalTopicArn: PAGER });

    expect(result).toEqual({ ok: false, line: timedOut(PAGER) });
    expect(statesSet()).toEqual(["ALARM", "OK"]);
  });

  it("a notification to a topic that does not page (the deployment events topic) does not count", async () => {
    histories = [[succeeded(now + 1_000, { topic: EVENTS_TOPIC })]];

    expect(await verify()).toEqual({ ok: false, line: timedOut(TOPIC) });
  });

  it("a success from an earlier run (another run id) does not count", async () => {
    histories = [[succeeded(now + 1_000, { runId: "an-earlier-run" })]];

    expect(await verify()).toEqual({ ok: false, line: timedOut(TOPIC) });
  });

  it("the OK action's success does not count, though its reason names this run", async () => {
    histories = [[succeeded(now + 1_000, { state: "OK" })]];

    expect(await verify()).toEqual({ ok: false, line: timedOut(TOPIC) });
  });

  it("an earlier run's failure does not fail this one", async () => {
    histories = [[failed(now - 1_000, "an old failure", { runId: "an-earlier-run" }), succeeded(now + 1_000)]];

    expect((await verify()).ok).toBe(true);
  });

  it("only pending subscriptions: one line naming the topic and to confirm the e-mail, before the alarm is touched", async () => {
    subscriptions[TOPIC] = [pending(TOPIC), pending(TOPIC)];

    const result = await verify();

    expect(result).toEqual({
      ok: false,
      line: `prod: paging topic ${TOPIC} has no confirmed subscription (2 pending confirmation), so its alarms reach nobody: confirm the subscription: follow the link in the e-mail AWS sent to each address, then run npm run alarms:verify -- --stage prod again (docs/alarms.md).`,
    });
    expect(cloudWatch.calls()).toEqual([]);
  });

  it("an existing topic without any subscription", async () => {
    subscriptions[PAGER] = [];

    const result = await verify({ externalTopicArn: PAGER });

    expect(result.ok).toBe(false);
    expect(result.line).toMatch(
      new RegExp(`^prod: paging topic ${PAGER} has no subscription, so its alarms reach nobody: subscribe someone`),
    );
    expect(cloudWatch.calls()).toEqual([]);
  });

  it("a confirmed subscription the test would reach: one line with the filter policy to add, before the alarm is touched", async () => {
    subscriptions[PAGER] = [confirmed(PAGER, "p1", "https"), pending(PAGER)];
    attributes[`${PAGER}:p1`] = { FilterPolicyScope: "MessageAttributes", FilterPolicy: FILTER.FilterPolicy };

    const result = await verify({ externalTopicArn: PAGER });

    expect(result).toEqual({
      ok: false,
      line: `prod: subscription ${PAGER}:p1 (https) of paging topic ${PAGER} would receive the delivery test, which must page nobody: give it the filter policy {"AlarmName":[{"anything-but":["${ALARM}"]}]} with FilterPolicyScope MessageBody, then run npm run alarms:verify -- --stage prod again (docs/alarms.md).`,
    });
    expect(cloudWatch.calls()).toEqual([]);
  });

  it("accepts a filter policy that adds conditions on other keys, or names the alarm alone", async () => {
    attributes[`${TOPIC}:s1`] = {
      FilterPolicyScope: "MessageBody",
      FilterPolicy: JSON.stringify({ AlarmName: [{ "anything-but": ALARM }], NewStateValue: ["ALARM", "OK"] }),
    };
    histories = [[succeeded(now + 1_000)]];

    expect((await verify()).ok).toBe(true);
  });
});

describe("the filter policy", () => {
  it("is the one the stack sets, the command asks for, and docs/alarms.md shows", () => {
    const docs = readFileSync(join(projectRoot, "docs/alarms.md"), "utf8");

    expect(JSON.stringify(alarmDeliveryTestFilterPolicy("prod"))).toBe(FILTER.FilterPolicy);
    expect(docs).toContain(
      JSON.stringify(alarmDeliveryTestFilterPolicy("staging"))
        .replace("petstore-staging-", "petstore-<stage>-")
        .replaceAll(":", ": "),
    );
  });
});

describe("other outcomes", () => {
  it("reads the reason from the summary when the history data has none", () => {
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

  it("a failure it cannot place in a run fails (the safe side)", async () => {
    histories = [
      [
        {
          HistoryItemType: "Action",
          Timestamp: new Date(now + 1_000),
          HistorySummary: `Failed to execute action ${TOPIC}. Received error: "Topic does not exist"`,
        },
      ],
    ];

    const result = await verify();

    expect(result.ok).toBe(false);
    expect(result.line).toContain("check that the topic exists");
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

  it("a topic that refuses listing its subscriptions: one line naming the permission, before the alarm is touched", async () => {
    sns
      .on(ListSubscriptionsByTopicCommand, { TopicArn: PAGER })
      .rejects(
        awsError(
          "AuthorizationErrorException",
          "User: deploy is not authorized to perform: SNS:ListSubscriptionsByTopic",
        ),
      );

    await expect(verify({ externalTopicArn: PAGER })).rejects.toThrow(
      /^sns:ListSubscriptionsByTopic failed: AuthorizationErrorException: .* The credentials need sns:ListSubscriptionsByTopic on the paging topics .* must allow it in its topic policy\)\.$/,
    );
    expect(cloudWatch.calls()).toEqual([]);
  });
});

describe("what stops the test before it starts", () => {
  it("a stage not deployed: no stack, one line, no alarm touched", async () => {
    cloudFormation
      .on(DescribeStacksCommand)
      .rejects(awsError("ValidationError", `Stack with id ${STACK} does not exist`));

    await expect(verify()).rejects.toThrow(
      `stack ${STACK} does not exist in ${ACCOUNT}/${REGION}: deploy prod first, or sign in to the account and region it is deployed to.`,
    );
    expect(cloudWatch.calls()).toEqual([]);
  });

  it("a stack without the alarm: one line, nothing to set back", async () => {
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
    main(argv, { env, context: () => settings, clients: () => clients, clock, sleep, runId: RUN });

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
        /^alarms:verify: prod: alarm notifications reach every paging topic, .*: petstore-prod-alarm-delivery-test published to /,
      ),
    ]);
    expect(out[0]).toContain(`(${ACCOUNT}/${REGION},`);
    const [alarm] = cloudWatch.commandCalls(SetAlarmStateCommand).map((call) => call.args[0].input);
    expect(alarm?.StateReason).toContain("GitHub Actions run 77 attempt 2");
  });

  it("takes the existing paging topic from the stage's settings: not published to, it exits 1 naming it", async () => {
    const { out, err } = captureOutput();
    histories = [[succeeded(now + 1_000)]];

    const code = await run(["--stage", "prod"], {}, { ...context, "prod:alarmTopicArn": PAGER });

    expect({ code, out }).toEqual({ code: 1, out: [] });
    expect(err).toEqual([`alarms:verify: ${timedOut(PAGER)}`]);
    expect(sns.commandCalls(ListSubscriptionsByTopicCommand).map((call) => call.args[0].input.TopicArn)).toEqual([
      TOPIC,
      PAGER,
    ]);
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
      `alarms:verify: No AWS region: pin staging:region in cdk.json's "context", or set AWS_REGION to the region staging is deployed to.`,
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
