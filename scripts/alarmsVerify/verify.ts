/**
 * Proves that a stage's alarm notifications arrive (`npm run alarms:verify`, ./main.ts): sets the
 * stage's delivery test alarm (infra/stacks/monitoring.ts) to ALARM with a reason naming the run,
 * reads in the alarm's history whether CloudWatch published the notification to its topic, and
 * sets the alarm back to OK whatever happened. The test alarm is encrypted and published exactly
 * as the paging alarms are, but notifies the deployment events topic, which pages nobody.
 *
 * CloudWatch records each alarm action it runs in the alarm's history (HistoryItemType `Action`):
 * "Successfully executed action <topic ARN>", or "Failed to execute action <topic ARN>. Received
 * error: ..." when the topic policy or the topic key's policy refuses it, or the topic is gone.
 * https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarmHistory.html
 */
import {
  type AlarmHistoryItem,
  type CloudWatchClient,
  DescribeAlarmHistoryCommand,
  type DescribeAlarmHistoryCommandOutput,
  SetAlarmStateCommand,
} from "@aws-sdk/client-cloudwatch";
import { GetCallerIdentityCommand, type STSClient } from "@aws-sdk/client-sts";
import type { DeployedStageName } from "../../infra/deployment";
import { contextKey } from "../../infra/settings";
import { type AwsErrorKind, failedCallLine as awsFailedCallLine, errorParts } from "../awsErrors";

export interface AlarmsVerifyClients {
  readonly cloudWatch: CloudWatchClient;
  readonly sts: STSClient;
}

export interface AlarmsVerifyInput {
  readonly stage: DeployedStageName;
  /** The account the stage is pinned to, if any (cdk.json, `<stage>:account`). */
  readonly pinnedAccount?: string;
  readonly region: string;
  readonly alarmName: string;
  /** Names the run in the alarm's state reason, and so in the notification (a CI run, a person). */
  readonly runName: string;
  readonly clients: AlarmsVerifyClients;
  /** Injectable for tests: the time now, and a pause between two reads of the history. */
  readonly clock?: () => Date;
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** How long to wait for CloudWatch to run the action (default 2 minutes). */
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
 * History items a little older than the moment the alarm was set still count: the laptop's or
 * runner's clock and CloudWatch's may differ by a few seconds.
 */
const CLOCK_SKEW_MS = 5_000;

const WHERE_IT_IS_BUILT = "infra/stacks/monitoring.ts";

// ---------------------------------------------------------------------------------------------
// AWS errors

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** What to do about an AWS error of each kind, for a call. */
function advice(kind: AwsErrorKind, call: string): string {
  switch (kind) {
    case "no credentials":
      return " No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).";
    case "invalid credentials":
      return " Sign in to the stage's account again: the credentials are expired or not valid.";
    case "denied":
      return ` The credentials need ${call} on the delivery test alarm (the deploy role has it: infra/stacks/deliveryAccessStack.ts).`;
    case "transient":
      return " Run npm run alarms:verify again in a minute.";
  }
}

/** The one line for an AWS call that failed in a way the command does not decide on. */
export function failedCallLine(call: string, error: unknown): string {
  return awsFailedCallLine(call, error, (kind) => advice(kind, call));
}

// ---------------------------------------------------------------------------------------------
// The alarm's history

export type ActionOutcome =
  | { readonly kind: "succeeded"; readonly topicArn?: string }
  | { readonly kind: "failed"; readonly topicArn?: string; readonly reason?: string };

const TOPIC_ARN = /arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+(\.fifo)?/;

/** The history item's data as JSON, when it is. */
function historyData(item: AlarmHistoryItem): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(item.HistoryData ?? "") as unknown;
    return parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * AWS's reason for a failed action: the error in the item's data when it has one, else what the
 * summary quotes after "Received error:".
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

/** What to look at first, from AWS's reason; all of it when the reason says nothing specific. */
function whatToCheck(reason: string | undefined): string {
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

// ---------------------------------------------------------------------------------------------

const sleepFor = (milliseconds: number) => new Promise<void>((resolve) => setTimeout(resolve, milliseconds));

/** The account the credentials are for; a problem line when the stage is pinned to another. */
async function checkAccount(input: AlarmsVerifyInput): Promise<string> {
  let account: string | undefined;
  try {
    account = (await input.clients.sts.send(new GetCallerIdentityCommand({}))).Account;
  } catch (error) {
    throw new AlarmsVerifyError(failedCallLine("sts:GetCallerIdentity", error));
  }
  if (!account) throw new AlarmsVerifyError("sts:GetCallerIdentity answered without an account.");
  if (input.pinnedAccount !== undefined && input.pinnedAccount !== account) {
    throw new AlarmsVerifyError(
      `credentials are for account ${account} but ${input.stage} is pinned to ${input.pinnedAccount} (${contextKey(input.stage, "account")} in cdk.json): sign in to ${input.pinnedAccount}.`,
    );
  }
  return account;
}

/**
 * Sets the alarm to ALARM, waits for the action it causes to appear in its history, and sets it
 * back to OK. Throws an AlarmsVerifyError for what stops it before it can decide (no credentials,
 * no such alarm); answers ok false, with what to check, when the notification failed or never ran.
 */
export async function verifyAlarmDelivery(input: AlarmsVerifyInput): Promise<AlarmsVerifyResult> {
  const { stage, region, alarmName, runName, clients } = input;
  const clock = input.clock ?? (() => new Date());
  const sleep = input.sleep ?? sleepFor;
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pollIntervalMs = input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;

  const account = await checkAccount(input);
  const where = `${account}/${region}`;
  const startedAt = clock();
  try {
    await clients.cloudWatch.send(
      new SetAlarmStateCommand({
        AlarmName: alarmName,
        StateValue: "ALARM",
        StateReason: `npm run alarms:verify (${runName}): testing that this alarm's notification reaches its topic. Not a page; it is set back to OK.`,
      }),
    );
  } catch (error) {
    if (errorParts(error).name === "ResourceNotFound") {
      throw new AlarmsVerifyError(
        `alarm ${alarmName} does not exist in ${where}: deploy ${stage} first (its stack creates the alarm, ${WHERE_IT_IS_BUILT}), or sign in to the account and region it is deployed to.`,
      );
    }
    throw new AlarmsVerifyError(failedCallLine("cloudwatch:SetAlarmState", error));
  }

  let outcome: { readonly result: AlarmsVerifyResult } | { readonly error: unknown };
  try {
    outcome = { result: await awaitAction() };
  } catch (error) {
    outcome = { error };
  }
  // After a failure too. The alarm would return to OK at its next evaluation anyway (nothing
  // publishes its metric); setting it back at once keeps its ALARM to the test.
  const resetProblem = await clients.cloudWatch
    .send(
      new SetAlarmStateCommand({
        AlarmName: alarmName,
        StateValue: "OK",
        StateReason: `npm run alarms:verify (${runName}): test over.`,
      }),
    )
    .then(
      () => undefined,
      (error: unknown) => failedCallLine("cloudwatch:SetAlarmState (back to OK)", error),
    );
  if ("error" in outcome) throw outcome.error;
  const { result } = outcome;
  // Worth a mention on the line, never a second line or another exit code.
  if (resetProblem === undefined) return result;
  return { ...result, line: `${result.line} (${resetProblem} It returns to OK by itself within minutes.)` };

  async function awaitAction(): Promise<AlarmsVerifyResult> {
    const since = new Date(startedAt.getTime() - CLOCK_SKEW_MS);
    for (;;) {
      const outcomes = (await actionsSince(since)).flatMap((item) => actionOutcome(item) ?? []);
      const failed = outcomes.find((outcome) => outcome.kind === "failed");
      if (failed?.kind === "failed") {
        const topic = failed.topicArn ?? "its topic";
        const reason = failed.reason === undefined ? "" : `: ${failed.reason.replace(/\.$/, "")}`;
        return {
          ok: false,
          line: `${stage}: CloudWatch could not publish alarm ${alarmName}'s notification to ${topic} (${where})${reason}. Alarms of this stage may reach nobody: ${whatToCheck(failed.reason)} (docs/alarms.md).`,
        };
      }
      const succeeded = outcomes.find((outcome) => outcome.kind === "succeeded");
      if (succeeded) {
        const seconds = Math.max(0, Math.round((clock().getTime() - startedAt.getTime()) / 1000));
        return {
          ok: true,
          line: `${stage}: alarm notifications reach their encrypted topic: ${alarmName} published to ${succeeded.topicArn ?? "its topic"} (${where}, ${seconds} s).`,
        };
      }
      if (clock().getTime() - startedAt.getTime() >= timeoutMs) {
        return {
          ok: false,
          line: `${stage}: no notification attempt of alarm ${alarmName} (${where}) appeared in its history within ${Math.round(timeoutMs / 1000)} s of setting it to ALARM: check that its actions are enabled and name the deployment events topic (aws cloudwatch describe-alarms --alarm-names ${alarmName}), then run npm run alarms:verify -- --stage ${stage} again (docs/alarms.md).`,
        };
      }
      await sleep(pollIntervalMs);
    }
  }

  /** The alarm's Action history items from `since` on, every page. */
  async function actionsSince(since: Date): Promise<AlarmHistoryItem[]> {
    const items: AlarmHistoryItem[] = [];
    let nextToken: string | undefined;
    do {
      let page: DescribeAlarmHistoryCommandOutput;
      try {
        page = await clients.cloudWatch.send(
          new DescribeAlarmHistoryCommand({
            AlarmName: alarmName,
            HistoryItemType: "Action",
            StartDate: since,
            ScanBy: "TimestampDescending",
            ...(nextToken === undefined ? {} : { NextToken: nextToken }),
          }),
        );
      } catch (error) {
        throw new AlarmsVerifyError(failedCallLine("cloudwatch:DescribeAlarmHistory", error));
      }
      items.push(
        ...(page.AlarmHistoryItems ?? []).filter(
          (item) => item.Timestamp === undefined || item.Timestamp.getTime() >= since.getTime(),
        ),
      );
      nextToken = page.NextToken;
    } while (nextToken);
    return items;
  }
}
