/**
 * Proves that a stage's alarm notifications reach every paging topic (docs/alarms.md) without paging anyone: each
 * topic (the stack's AlarmTopicArn output, and `<stage>:alarmTopicArn`) must have a confirmed subscription, each
 * filtering out the delivery test (infra/deployment.ts); then the delivery test alarm is set to ALARM with a run id in
 * its reason, its history read until each topic has this run's Action item, and the alarm set back to OK whatever
 * happened. An Action item is this run's when its published message is this run's ALARM, else when its
 * stateUpdateTimestamp matches this run's StateUpdate item (a real item: https://github.com/aws/aws-sdk-java/issues/1723;
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarmHistory.html).
 */

import { randomUUID } from "node:crypto";
import { setTimeout as sleepFor } from "node:timers/promises";
import type { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import {
  type AlarmHistoryItem,
  type CloudWatchClient,
  type HistoryItemType,
  paginateDescribeAlarmHistory,
  SetAlarmStateCommand,
} from "@aws-sdk/client-cloudwatch";
import {
  GetSubscriptionAttributesCommand,
  paginateListSubscriptionsByTopic,
  type SNSClient,
  type Subscription,
} from "@aws-sdk/client-sns";
import type { STSClient } from "@aws-sdk/client-sts";
import { alarmDeliveryTestFilterPolicy, type DeployedStageName, STACK_OUTPUTS } from "../../infra/deployment";
import { contextKey } from "../../infra/settings";
import { awsCall, type CallFailures, callError, callerAccount, errorParts } from "../awsErrors";
import { readStackOutput } from "../stackOutputs";

export interface AlarmsVerifyClients {
  readonly cloudWatch: CloudWatchClient;
  readonly sts: STSClient;
  readonly sns: SNSClient;
  readonly cloudFormation: CloudFormationClient;
}

export interface AlarmsVerifyInput {
  readonly stage: DeployedStageName;
  /** The account the stage is pinned to, if any (cdk.json, `<stage>:account`). */
  readonly pinnedAccount?: string;
  readonly region: string;
  /** The stage's service stack, whose AlarmTopicArn output is the stage's own paging topic. */
  readonly stackName: string;
  /** The existing topic the stage's settings send alarms to too (`<stage>:alarmTopicArn`), if any. */
  readonly externalTopicArn?: string;
  readonly alarmName: string;
  /** Names the run in the alarm's state reason, and so in the notification (a CI run, a person). */
  readonly runName: string;
  readonly clients: AlarmsVerifyClients;
  /** Injectable for tests: this run's id (default a random UUID), the time now, and a pause between two reads. */
  readonly runId?: string;
  readonly clock?: () => Date;
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** How long to wait for CloudWatch to run the actions (default 2 minutes). */
  readonly timeoutMs?: number;
  readonly pollIntervalMs?: number;
}

export interface AlarmsVerifyResult {
  readonly ok: boolean;
  /** One line: what was proven, or what failed and what to check. */
  readonly line: string;
}

/** Something that stops the command before it can decide, e.g. no credentials; its message is one line. */
export class AlarmsVerifyError extends Error {
  override readonly name = "AlarmsVerifyError";
}

export const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_POLL_INTERVAL_MS = 5_000;
/**
 * History items a little older than the moment the alarm was set are still read (the run id decides whether they
 * count): the laptop's or runner's clock and CloudWatch's may differ by a few seconds.
 */
const CLOCK_SKEW_MS = 5_000;
/** How close an Action item's stateUpdateTimestamp must be to this run's StateUpdate item. */
const SAME_STATE_UPDATE_MS = 1_000;

const WHERE_IT_IS_BUILT = "infra/stacks/monitoring.ts";

// AWS errors

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** What to do about an AWS error of each kind, for a call. */
const FAILURES: CallFailures = {
  error: (line) => new AlarmsVerifyError(line),
  advice: (kind, call) => {
    if (kind === "transient") return " Run npm run alarms:verify again in a minute.";
    return call.startsWith("sns:")
      ? ` The credentials need ${call} on the paging topics (the deploy role has it: infra/stacks/deliveryAccessStack.ts; an existing topic of another account must allow it in its topic policy).`
      : ` The credentials need ${call} on the delivery test alarm (the deploy role has it: infra/stacks/deliveryAccessStack.ts).`;
  },
};

// The alarm's history

export type ActionOutcome =
  | { readonly kind: "succeeded"; readonly topicArn?: string }
  | { readonly kind: "failed"; readonly topicArn?: string; readonly reason?: string };

/** Which run an Action item belongs to: this one, another, or it cannot say. */
export type RunMatch = "this run" | "another run" | "unknown";

const TOPIC_ARN = /arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?/;

/** A JSON object from a string, when it is one. */
function jsonObject(text: unknown): Record<string, unknown> | undefined {
  if (typeof text !== "string") return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The history item's data as JSON, when it is. */
const historyData = (item: AlarmHistoryItem) => jsonObject(item.HistoryData);

/**
 * AWS's reason for a failed action: the error in the item's data when it has one, else what the summary quotes after
 * "Received error:".
 */
function failureReason(item: AlarmHistoryItem, data: Record<string, unknown> | undefined): string | undefined {
  for (const key of ["error", "errorMessage", "message", "failureReason"]) {
    const value = data?.[key];
    if (typeof value === "string" && value.trim()) return oneLine(value);
  }
  const quoted = /Received error:\s*(.+)$/s.exec(item.HistorySummary ?? "")?.[1];
  return quoted ? oneLine(quoted).replace(/^"+|"+$/g, "") : undefined;
}

/** What one Action history item says happened, or undefined when it is no SNS notification attempt. */
export function actionOutcome(item: AlarmHistoryItem): ActionOutcome | undefined {
  const summary = item.HistorySummary ?? "";
  const data = historyData(item);
  const state = typeof data?.actionState === "string" ? data.actionState : undefined;
  const topicArn =
    TOPIC_ARN.exec(summary)?.[0] ??
    (typeof data?.notificationResource === "string" ? TOPIC_ARN.exec(data.notificationResource)?.[0] : undefined);
  const where = topicArn === undefined ? {} : { topicArn };
  if (/^Failed to execute action/i.test(summary) || state === "Failed") {
    const reason = failureReason(item, data);
    return { kind: "failed", ...where, ...(reason === undefined ? {} : { reason }) };
  }
  if (/^Successfully executed action/i.test(summary) || state === "Succeeded") return { kind: "succeeded", ...where };
  return undefined;
}

/**
 * The alarm notification an Action item published, when its data carries it: CloudWatch publishes with a "default"
 * message holding the notification JSON (AlarmName, NewStateValue, NewStateReason).
 */
function publishedNotification(item: AlarmHistoryItem): Record<string, unknown> | undefined {
  const published = jsonObject(historyData(item)?.publishedMessage);
  if (published === undefined) return undefined;
  return typeof published.default === "string" ? jsonObject(published.default) : published;
}

/**
 * Whether an Action item is this run's ALARM notification: by the message it published, else by the state update it
 * acted on (`runStateUpdateAt`, the time of this run's StateUpdate item, if known).
 */
export function runOfAction(item: AlarmHistoryItem, runId: string, runStateUpdateAt?: number): RunMatch {
  const notification = publishedNotification(item);
  if (notification !== undefined) {
    const reason = typeof notification.NewStateReason === "string" ? notification.NewStateReason : "";
    return notification.NewStateValue === "ALARM" && reason.includes(runId) ? "this run" : "another run";
  }
  const at = historyData(item)?.stateUpdateTimestamp;
  if (typeof at !== "number" || runStateUpdateAt === undefined) return "unknown";
  return Math.abs(at - runStateUpdateAt) <= SAME_STATE_UPDATE_MS ? "this run" : "another run";
}

/** The time of this run's change to ALARM, from a StateUpdate history item whose new state's reason holds the run id. */
export function runStateUpdateTime(items: readonly AlarmHistoryItem[], runId: string): number | undefined {
  for (const item of items) {
    const newState = historyData(item)?.newState as Record<string, unknown> | undefined;
    const reason = typeof newState?.stateReason === "string" ? newState.stateReason : "";
    if (newState?.stateValue === "ALARM" && reason.includes(runId) && item.Timestamp) return item.Timestamp.getTime();
  }
  return undefined;
}

/** What to look at first, from AWS's reason; all of it when the reason says nothing specific. */
function whatToCheck(reason: string | undefined, ownTopic: boolean): string {
  if (!ownTopic) {
    return "check the existing topic's access policy (an Allow of sns:Publish for cloudwatch.amazonaws.com with aws:SourceAccount = this account) and, if it is encrypted, its KMS key's policy (kms:Decrypt and kms:GenerateDataKey* for cloudwatch.amazonaws.com), and that it still exists";
  }
  const key =
    "the key policy of the topic's KMS key (AlarmTopicKey): it must allow cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey*";
  const policy =
    "the topic policy: it must allow cloudwatch.amazonaws.com sns:Publish for this account's alarms (aws:SourceAccount, aws:SourceArn)";
  const missing = "that the topic exists: deploy the stage again if it was deleted";
  const text = reason ?? "";
  if (/KMS|encryption key|kms:/i.test(text)) return `check ${key}`;
  if (/SNS:Publish|not authorized|authorization/i.test(text)) return `check ${policy}`;
  if (/not ?found|does not exist|NotFound/i.test(text)) return `check ${missing}`;
  return `check ${key}; ${policy}; and ${missing}`;
}

// The paging topics' subscriptions

/**
 * Whether a subscription's filter policy drops the delivery test: a MessageBody policy whose top-level AlarmName is an
 * `anything-but` naming the test alarm (other keys are ANDed, so can only drop more:
 * https://docs.aws.amazon.com/sns/latest/dg/subscription-filter-policy-constraints.html). Any other form is not recognised.
 */
export function filtersOutDeliveryTest(attributes: Record<string, string> | undefined, alarmName: string): boolean {
  if (attributes?.FilterPolicyScope !== "MessageBody") return false;
  const conditions = jsonObject(attributes.FilterPolicy)?.AlarmName;
  if (!Array.isArray(conditions)) return false;
  return conditions.some((condition: unknown) => {
    const denied = (condition as Record<string, unknown> | null)?.["anything-but"];
    return denied === alarmName || (Array.isArray(denied) && denied.includes(alarmName));
  });
}

/** The stage's own alarm topic, from its stack's output. */
async function ownTopicArn(input: AlarmsVerifyInput, where: string): Promise<string> {
  const { stage, stackName } = input;
  const outputKey = STACK_OUTPUTS.alarmTopicArn;
  const output = await awsCall(FAILURES, "cloudformation:DescribeStacks", () =>
    readStackOutput(input.clients.cloudFormation, stackName, outputKey),
  );
  if (output.found === "no stack") {
    throw new AlarmsVerifyError(
      `stack ${stackName} does not exist in ${where}: deploy ${stage} first, or sign in to the account and region it is deployed to.`,
    );
  }
  if (output.found === "no output") {
    throw new AlarmsVerifyError(
      `stack ${stackName} in ${where} has no ${outputKey} output (stack status ${output.stackStatus}): wait for its deploy to finish, or deploy ${stage} again.`,
    );
  }
  return output.value;
}

/** Every subscription of a topic, every page. */
async function subscriptionsOf(sns: SNSClient, topicArn: string): Promise<Subscription[]> {
  const subscriptions: Subscription[] = [];
  try {
    for await (const page of paginateListSubscriptionsByTopic({ client: sns }, { TopicArn: topicArn })) {
      subscriptions.push(...(page.Subscriptions ?? []));
    }
  } catch (error) {
    if (errorParts(error).name.startsWith("NotFound")) {
      throw new AlarmsVerifyError(
        `paging topic ${topicArn} does not exist: deploy the stage again, or correct the setting that names it (docs/alarms.md).`,
      );
    }
    throw callError(FAILURES, "sns:ListSubscriptionsByTopic", error);
  }
  return subscriptions;
}

/**
 * Why the test must not run against a paging topic, if it must not: no confirmed subscription (its alarms reach
 * nobody), or a confirmed one the test would reach (it would page someone).
 */
async function subscriptionProblem(input: AlarmsVerifyInput, topicArn: string): Promise<string | undefined> {
  const { stage, alarmName, clients } = input;
  const subscriptions = await subscriptionsOf(clients.sns, topicArn);
  // A subscription not yet confirmed has no ARN of its own: ListSubscriptionsByTopic answers "PendingConfirmation" in
  // its place (https://docs.aws.amazon.com/sns/latest/api/API_Subscription.html).
  const confirmed = subscriptions.filter((subscription) => subscription.SubscriptionArn?.startsWith("arn:"));
  if (confirmed.length === 0) {
    const pending = subscriptions.length;
    const state = pending === 0 ? "no subscription" : `no confirmed subscription (${pending} pending confirmation)`;
    const todo =
      pending === 0
        ? `subscribe someone (${contextKey(stage, "alarmEmails")} in cdk.json, or the topic owner's pager)`
        : "confirm the subscription: follow the link in the e-mail AWS sent to each address";
    return `${stage}: paging topic ${topicArn} has ${state}, so its alarms reach nobody: ${todo}, then run npm run alarms:verify -- --stage ${stage} again (docs/alarms.md).`;
  }
  for (const subscription of confirmed) {
    const subscriptionArn = subscription.SubscriptionArn as string;
    const { Attributes: attributes } = await awsCall(FAILURES, "sns:GetSubscriptionAttributes", () =>
      clients.sns.send(new GetSubscriptionAttributesCommand({ SubscriptionArn: subscriptionArn })),
    );
    if (!filtersOutDeliveryTest(attributes, alarmName)) {
      return `${stage}: subscription ${subscriptionArn} (${subscription.Protocol ?? "unknown protocol"}) of paging topic ${topicArn} would receive the delivery test, which must page nobody: give it the filter policy ${JSON.stringify(alarmDeliveryTestFilterPolicy(stage))} with FilterPolicyScope MessageBody, then run npm run alarms:verify -- --stage ${stage} again (docs/alarms.md).`;
    }
  }
  return undefined;
}

/**
 * Runs the test (see the top of this file). Throws AlarmsVerifyError for what stops it before deciding; answers ok
 * false, with one line saying what to do, for a topic not ready or a notification that failed or never ran.
 */
export async function verifyAlarmDelivery(input: AlarmsVerifyInput): Promise<AlarmsVerifyResult> {
  const { stage, region, alarmName, runName, clients } = input;
  const clock = input.clock ?? (() => new Date());
  const sleep = input.sleep ?? sleepFor;
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pollIntervalMs = input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const runId = input.runId ?? randomUUID();

  const account = await callerAccount(clients.sts, FAILURES, { stage, account: input.pinnedAccount });
  const where = `${account}/${region}`;
  const ownTopic = await ownTopicArn(input, where);
  const pagingTopics = [ownTopic, ...(input.externalTopicArn ? [input.externalTopicArn] : [])];
  for (const topicArn of pagingTopics) {
    const problem = await subscriptionProblem(input, topicArn);
    if (problem !== undefined) return { ok: false, line: problem };
  }

  const startedAt = clock();
  try {
    await clients.cloudWatch.send(
      new SetAlarmStateCommand({
        AlarmName: alarmName,
        StateValue: "ALARM",
        StateReason: `npm run alarms:verify (${runName}, run ${runId}): testing that this alarm's notification reaches the paging topics. Not a page: their subscriptions filter it out, and it is set back to OK.`,
      }),
    );
  } catch (error) {
    if (errorParts(error).name === "ResourceNotFound") {
      throw new AlarmsVerifyError(
        `alarm ${alarmName} does not exist in ${where}: deploy ${stage} first (its stack creates the alarm, ${WHERE_IT_IS_BUILT}), or sign in to the account and region it is deployed to.`,
      );
    }
    throw callError(FAILURES, "cloudwatch:SetAlarmState", error);
  }

  let outcome: { readonly result: AlarmsVerifyResult } | { readonly error: unknown };
  try {
    outcome = { result: await awaitActions() };
  } catch (error) {
    outcome = { error };
  }
  // After a failure too. The alarm would return to OK at its next evaluation anyway (nothing publishes its metric);
  // setting it back at once keeps its ALARM to the test.
  const resetProblem = await clients.cloudWatch
    .send(
      new SetAlarmStateCommand({
        AlarmName: alarmName,
        StateValue: "OK",
        StateReason: `npm run alarms:verify (${runName}, run ${runId}): test over.`,
      }),
    )
    .then(
      () => undefined,
      (error: unknown) => callError(FAILURES, "cloudwatch:SetAlarmState (back to OK)", error).message,
    );
  if ("error" in outcome) throw outcome.error;
  const { result } = outcome;
  // Worth a mention on the line, never a second line or another exit code.
  if (resetProblem === undefined) return result;
  return { ...result, line: `${result.line} (${resetProblem} It returns to OK by itself within minutes.)` };

  async function awaitActions(): Promise<AlarmsVerifyResult> {
    const since = new Date(startedAt.getTime() - CLOCK_SKEW_MS);
    for (;;) {
      const items = await historySince(since, "Action");
      // This run's StateUpdate is read only for items that do not carry their published message.
      const runStateUpdateAt = items.some((item) => publishedNotification(item) === undefined)
        ? runStateUpdateTime(await historySince(since, "StateUpdate"), runId)
        : undefined;
      const outcomes = items.flatMap((item) => {
        const found = actionOutcome(item);
        if (found?.topicArn === undefined || !pagingTopics.includes(found.topicArn)) return [];
        return [{ ...found, run: runOfAction(item, runId, runStateUpdateAt) }];
      });
      // A success counts only when it is this run's; a failure that cannot be placed fails too (the safe side).
      const failed = outcomes.find((candidate) => candidate.kind === "failed" && candidate.run !== "another run");
      if (failed?.kind === "failed") {
        const topic = failed.topicArn as string;
        const reason = failed.reason === undefined ? "" : `: ${failed.reason.replace(/\.$/, "")}`;
        return {
          ok: false,
          line: `${stage}: CloudWatch could not publish alarm ${alarmName}'s notification to paging topic ${topic} (${where})${reason}. Alarms sent to it reach nobody: ${whatToCheck(failed.reason, topic === ownTopic)} (docs/alarms.md).`,
        };
      }
      const published = new Set(
        outcomes
          .filter((candidate) => candidate.kind === "succeeded" && candidate.run === "this run")
          .map((o) => o.topicArn),
      );
      const missing = pagingTopics.filter((topicArn) => !published.has(topicArn));
      if (missing.length === 0) {
        const seconds = Math.max(0, Math.round((clock().getTime() - startedAt.getTime()) / 1000));
        return {
          ok: true,
          line: `${stage}: alarm notifications reach every paging topic, and their confirmed subscriptions filter the test out: ${alarmName} published to ${pagingTopics.join(" and ")} (${where}, ${seconds} s).`,
        };
      }
      if (clock().getTime() - startedAt.getTime() >= timeoutMs) {
        return {
          ok: false,
          line: `${stage}: no notification of this run of alarm ${alarmName} (${where}) to ${missing.join(" and ")} appeared in its history within ${Math.round(timeoutMs / 1000)} s of setting it to ALARM: check that its actions are enabled and its ALARM actions name every paging topic (aws cloudwatch describe-alarms --alarm-names ${alarmName}; deploy ${stage} again after changing ${contextKey(stage, "alarmTopicArn")}), then run npm run alarms:verify -- --stage ${stage} again (docs/alarms.md).`,
        };
      }
      await sleep(pollIntervalMs);
    }
  }

  /** The alarm's history items of one type from `since` on, every page. */
  async function historySince(since: Date, type: HistoryItemType): Promise<AlarmHistoryItem[]> {
    const items: AlarmHistoryItem[] = [];
    const pages = paginateDescribeAlarmHistory(
      { client: clients.cloudWatch },
      { AlarmName: alarmName, HistoryItemType: type, StartDate: since, ScanBy: "TimestampDescending" },
    );
    await awsCall(FAILURES, "cloudwatch:DescribeAlarmHistory", async () => {
      for await (const page of pages) {
        items.push(
          ...(page.AlarmHistoryItems ?? []).filter(
            (item) => item.Timestamp === undefined || item.Timestamp.getTime() >= since.getTime(),
          ),
        );
      }
    });
    return items;
  }
}
