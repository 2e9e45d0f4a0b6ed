/**
 * Restores a stage's table to a point in time into a new table (DynamoDB restores only into a new one:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-pitr-recovery-table-restore.html), then sets what
 * a restore leaves out, tags, TTL and PITR
 * (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_RestoreTableToPointInTime.html), and deletion
 * protection. Run again with the same time and name, it continues where it stopped.
 */
import { setTimeout as sleepFor } from "node:timers/promises";
import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  RestoreTableToPointInTimeCommand,
  type TableDescription,
  TagResourceCommand,
  UpdateContinuousBackupsCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import type { STSClient } from "@aws-sdk/client-sts";
import type { DeployedStageName } from "../../infra/deployment";
import { contextKey } from "../../infra/settings";
import { createTableInput, isPetTable } from "../../lib/db/table";
import { awsCall, type CallFailures, callError, callerAccount, errorParts } from "../awsErrors";

export interface RestoreClients {
  readonly dynamo: DynamoDBClient;
  readonly sts: STSClient;
}

/** What the restored table must have beyond its items (infra/stacks/dataStack.ts, stageTableSettings). */
export interface TableSettings {
  readonly timeToLiveAttribute: string;
  readonly pointInTimeRecoveryDays: number;
  readonly deletionProtection: boolean;
  readonly tags: Readonly<Record<string, string>>;
}

export interface RestoreInput {
  readonly stage: DeployedStageName;
  /** The account the stage is pinned to, if any (cdk.json, `<stage>:account`). */
  readonly pinnedAccount?: string;
  /** The table the stage uses now. */
  readonly sourceTableName: string;
  readonly targetTableName: string;
  readonly restoreTo: Date;
  readonly settings: TableSettings;
  readonly clients: RestoreClients;
  /** Progress, one line each (stderr). */
  readonly say?: (line: string) => void;
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** How often to look whether the restored table is ACTIVE, and for how long in all. */
  readonly pollIntervalMs?: number;
  readonly timeoutMs?: number;
}

export interface RestoreResult {
  readonly account: string;
  readonly tableName: string;
  readonly tableArn: string;
  /** The restored table's KMS key, when the source uses one (else DynamoDB's own key, as the source). */
  readonly kmsKeyArn?: string;
  /** Whether this run started the restore (false: it continued one an earlier run started). */
  readonly started: boolean;
}

/** What stops the restore, in one line: exit 1. */
export class RestoreError extends Error {
  override readonly name = "RestoreError";
}

/** A restore takes "several hours" at worst (the best-practices page above); a run waits that long. */
export const DEFAULT_TIMEOUT_MS = 12 * 60 * 60 * 1000;
const DEFAULT_POLL_INTERVAL_MS = 30_000;
/** UpdateContinuousBackups answers ContinuousBackupsUnavailableException until backups are on for a new table. */
const BACKUPS_ATTEMPTS = 10;

const FAILURES: CallFailures = {
  error: (line) => new RestoreError(line),
  advice: (kind, call) =>
    kind === "denied"
      ? ` The credentials need ${call}: restore with an administrator's role of the stage's account (the deploy role cannot).`
      : " Run the same command again: it continues where it stopped.",
};

const call = <T>(name: string, send: () => Promise<T>): Promise<T> => awsCall(FAILURES, name, send);

/** The table, or undefined when there is none of that name. */
async function describeTable(clients: RestoreClients, tableName: string): Promise<TableDescription | undefined> {
  try {
    return (await clients.dynamo.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (error) {
    if (errorParts(error).name === "ResourceNotFoundException") return undefined;
    throw callError(FAILURES, "dynamodb:DescribeTable", error);
  }
}

/** Refuses a time outside the source's recovery window, in one line. */
async function checkWindow(input: RestoreInput): Promise<void> {
  const { sourceTableName, restoreTo } = input;
  const answer = await call("dynamodb:DescribeContinuousBackups", () =>
    input.clients.dynamo.send(new DescribeContinuousBackupsCommand({ TableName: sourceTableName })),
  );
  const recovery = answer.ContinuousBackupsDescription?.PointInTimeRecoveryDescription;
  const earliest = recovery?.EarliestRestorableDateTime;
  const latest = recovery?.LatestRestorableDateTime;
  if (recovery?.PointInTimeRecoveryStatus !== "ENABLED" || !earliest || !latest) {
    throw new RestoreError(`${sourceTableName} has no point-in-time recovery: there is nothing to restore from.`);
  }
  // LatestRestorableDateTime is typically 5 minutes before now
  // (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateContinuousBackups.html).
  if (restoreTo < earliest || restoreTo > latest) {
    throw new RestoreError(
      `${restoreTo.toISOString()} is outside ${sourceTableName}'s recovery window, ${earliest.toISOString()} to ${latest.toISOString()}: pass a --to inside it.`,
    );
  }
}

/** The source's KMS key, when it is encrypted with one rather than with DynamoDB's own key. */
const kmsKeyOf = (table: TableDescription): string | undefined =>
  table.SSEDescription?.SSEType === "KMS" ? table.SSEDescription.KMSMasterKeyArn : undefined;

/** Whether `target` is what DynamoDB restored from `source` at `restoreTo` (an earlier run's). */
function isRestoreOf(target: TableDescription, source: TableDescription, restoreTo: Date): boolean {
  const summary = target.RestoreSummary;
  return summary?.SourceTableArn === source.TableArn && summary?.RestoreDateTime?.getTime() === restoreTo.getTime();
}

async function waitUntilActive(input: RestoreInput, say: (line: string) => void): Promise<TableDescription> {
  const sleep = input.sleep ?? sleepFor;
  const pollIntervalMs = input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  say(`waiting for ${input.targetTableName} to be ACTIVE (minutes to hours; interrupted, the same command continues).`);
  for (let waited = 0; ; waited += pollIntervalMs) {
    const table = await describeTable(input.clients, input.targetTableName);
    if (table?.TableStatus === "ACTIVE") return table;
    if (waited >= timeoutMs) {
      throw new RestoreError(
        `${input.targetTableName} is still ${table?.TableStatus ?? "not there"} after ${Math.round(timeoutMs / 60_000)} minutes: run the same command again later to continue.`,
      );
    }
    await sleep(pollIntervalMs);
  }
}

/** Point-in-time recovery with the stage's recovery period, once DynamoDB has backups on for the new table. */
async function enableRecovery(input: RestoreInput): Promise<void> {
  const sleep = input.sleep ?? sleepFor;
  for (let attempt = 1; ; attempt += 1) {
    try {
      await input.clients.dynamo.send(
        new UpdateContinuousBackupsCommand({
          TableName: input.targetTableName,
          PointInTimeRecoverySpecification: {
            PointInTimeRecoveryEnabled: true,
            RecoveryPeriodInDays: input.settings.pointInTimeRecoveryDays,
          },
        }),
      );
      return;
    } catch (error) {
      // "Backups have not yet been enabled for this table": a table this new has them shortly.
      // https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateContinuousBackups.html
      if (errorParts(error).name !== "ContinuousBackupsUnavailableException" || attempt >= BACKUPS_ATTEMPTS) {
        throw callError(FAILURES, "dynamodb:UpdateContinuousBackups", error);
      }
      await sleep(input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
    }
  }
}

/** Gives the restored table the stage's settings that a restore leaves out; each only when it lacks it. */
async function applyStageSettings(input: RestoreInput, table: TableDescription): Promise<void> {
  const { clients, targetTableName: TableName, settings } = input;
  const ttl = await call("dynamodb:DescribeTimeToLive", () =>
    clients.dynamo.send(new DescribeTimeToLiveCommand({ TableName })),
  );
  const { TimeToLiveStatus, AttributeName } = ttl.TimeToLiveDescription ?? {};
  // Enabling TTL again fails ("TimeToLive is already enabled"), so a continued run skips it.
  if (!(TimeToLiveStatus === "ENABLED" && AttributeName === settings.timeToLiveAttribute)) {
    await call("dynamodb:UpdateTimeToLive", () =>
      clients.dynamo.send(
        new UpdateTimeToLiveCommand({
          TableName,
          TimeToLiveSpecification: { Enabled: true, AttributeName: settings.timeToLiveAttribute },
        }),
      ),
    );
  }
  await enableRecovery(input);
  if ((table.DeletionProtectionEnabled ?? false) !== settings.deletionProtection) {
    await call("dynamodb:UpdateTable", () =>
      clients.dynamo.send(
        new UpdateTableCommand({ TableName, DeletionProtectionEnabled: settings.deletionProtection }),
      ),
    );
  }
  await call("dynamodb:TagResource", () =>
    clients.dynamo.send(
      new TagResourceCommand({
        ResourceArn: table.TableArn,
        Tags: Object.entries(settings.tags).map(([Key, Value]) => ({ Key, Value })),
      }),
    ),
  );
}

/**
 * Restores the source table at `restoreTo` into the target, waits until it is ACTIVE and gives it the stage's settings.
 * Throws a RestoreError, one line, for anything that stops it.
 */
export async function restoreTable(input: RestoreInput): Promise<RestoreResult> {
  const { clients, sourceTableName, targetTableName, restoreTo } = input;
  const say = input.say ?? (() => {});
  const account = await callerAccount(input.clients.sts, FAILURES, {
    stage: input.stage,
    account: input.pinnedAccount,
  });

  const source = await describeTable(clients, sourceTableName);
  if (!source) {
    throw new RestoreError(
      `no table ${sourceTableName} in account ${account} and this region: check the stage's region (cdk.json ${contextKey(input.stage, "region")} or AWS_REGION).`,
    );
  }
  if (!isPetTable(source)) {
    throw new RestoreError(`${sourceTableName} does not have the Pet Store table's keys and index (lib/db/table.ts).`);
  }
  const kmsKeyArn = kmsKeyOf(source);

  const existing = await describeTable(clients, targetTableName);
  let started = false;
  if (existing) {
    if (!isRestoreOf(existing, source, restoreTo)) {
      throw new RestoreError(
        `table ${targetTableName} exists already and is no restore of ${sourceTableName} at ${restoreTo.toISOString()}: pass --table-name with a new name.`,
      );
    }
    say(`${targetTableName} is being or was restored by an earlier run: continuing it.`);
  } else {
    await checkWindow(input);
    const { BillingMode, GlobalSecondaryIndexes } = createTableInput(targetTableName);
    await call("dynamodb:RestoreTableToPointInTime", () =>
      clients.dynamo.send(
        new RestoreTableToPointInTimeCommand({
          SourceTableName: sourceTableName,
          TargetTableName: targetTableName,
          RestoreDateTime: restoreTo,
          // As lib/db/table.ts defines the table, rather than whatever the source has drifted to.
          BillingModeOverride: BillingMode,
          GlobalSecondaryIndexOverride: GlobalSecondaryIndexes,
          // Encryption comes from the source anyway; named here so that a KMS-encrypted source can never come back
          // under DynamoDB's own key.
          ...(kmsKeyArn === undefined
            ? {}
            : { SSESpecificationOverride: { Enabled: true, SSEType: "KMS" as const, KMSMasterKeyId: kmsKeyArn } }),
        }),
      ),
    );
    started = true;
  }

  const table = await waitUntilActive(input, say);
  if (kmsKeyOf(table) !== kmsKeyArn) {
    throw new RestoreError(
      `${targetTableName} is encrypted with ${kmsKeyOf(table) ?? "DynamoDB's own key"}, not ${kmsKeyArn ?? "DynamoDB's own key"} as ${sourceTableName}: do not switch to it.`,
    );
  }
  await applyStageSettings(input, table);
  return {
    account,
    tableName: targetTableName,
    tableArn: table.TableArn ?? "",
    ...(kmsKeyArn === undefined ? {} : { kmsKeyArn }),
    started,
  };
}
