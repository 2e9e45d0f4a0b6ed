/**
 * In-place updates that still lose data or the means to restore it, each a finding of ./compare.ts:
 * `backup-weakened` (PITR off or its period shortened; 35 days when unset:
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-dynamodb-table-pointintimerecoveryspecification.html),
 * `index-removed`, `encryption-changed` and `ttl-changed` (old items stop expiring, or new ones are deleted at once).
 */
import type { CfnResource } from "./stateful";

export type DataSettingKind = "backup-weakened" | "index-removed" | "encryption-changed" | "ttl-changed";

export interface DataSettingChange {
  readonly kind: DataSettingKind;
  readonly detail: string;
}

type Properties = Record<string, unknown>;

const record = (value: unknown): Properties =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Properties) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/**
 * Where a table's per-replica settings live: the table itself, or each replica of a global table, by region (`replica
 * eu-west-1`; named only when there are several, a one-region table is just the table).
 */
function settingHolders(resource: CfnResource): Map<string, Properties> {
  const properties = resource.Properties ?? {};
  if (resource.Type !== "AWS::DynamoDB::GlobalTable") return new Map([["", properties]]);
  const replicas = list(properties.Replicas).map(record);
  if (replicas.length === 1) return new Map([["", replicas[0] as Properties]]);
  return new Map(
    replicas.map((replica) => [
      `replica ${typeof replica.Region === "string" ? replica.Region : JSON.stringify(replica.Region)}`,
      replica,
    ]),
  );
}

const DYNAMODB_TABLES = new Set(["AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable"]);

/** Days of continuous backups, 0 when point-in-time recovery is off. */
function recoveryDays(holder: Properties): number {
  const specification = record(holder.PointInTimeRecoverySpecification);
  if (specification.PointInTimeRecoveryEnabled !== true) return 0;
  return typeof specification.RecoveryPeriodInDays === "number" ? specification.RecoveryPeriodInDays : 35;
}

function backupChanges(before: CfnResource, after: CfnResource): DataSettingChange[] {
  if (!DYNAMODB_TABLES.has(before.Type) || before.Type !== after.Type) return [];
  const afterHolders = settingHolders(after);
  const changes: DataSettingChange[] = [];
  for (const [where, holder] of settingHolders(before)) {
    const was = recoveryDays(holder);
    const becomes = recoveryDays(afterHolders.get(where) ?? {});
    const on = where ? ` (${where})` : "";
    if (was > 0 && becomes === 0) {
      changes.push({
        kind: "backup-weakened",
        detail: `point-in-time recovery is switched off${on}: its ${was} days of continuous backups are deleted, and nothing is left to restore from`,
      });
    } else if (becomes < was) {
      changes.push({
        kind: "backup-weakened",
        detail: `point-in-time recovery keeps ${becomes} instead of ${was} days${on}: the table can no longer be restored to a time more than ${becomes} ${becomes === 1 ? "day" : "days"} back`,
      });
    }
  }
  return changes;
}

const indexNames = (value: unknown) =>
  list(value)
    .map((index) => record(index).IndexName)
    .filter((name): name is string => typeof name === "string");

function indexChanges(before: CfnResource, after: CfnResource): DataSettingChange[] {
  if (!DYNAMODB_TABLES.has(before.Type)) return [];
  const changes: DataSettingChange[] = [];
  for (const [property, what] of [
    ["GlobalSecondaryIndexes", "global"],
    ["LocalSecondaryIndexes", "local"],
  ] as const) {
    const kept = new Set(indexNames(after.Properties?.[property]));
    for (const name of indexNames(before.Properties?.[property]).filter((index) => !kept.has(index))) {
      changes.push({
        kind: "index-removed",
        detail: `${what} secondary index ${name} is deleted: queries on it fail at once, and adding it back builds it again from the whole table`,
      });
    }
  }
  return changes;
}

/**
 * The properties that say how each stateful type is encrypted (which key, or whether at all). A change some of them can
 * only make by replacing the resource is reported as `replace` as well.
 */
const ENCRYPTION_PROPERTIES: Readonly<Record<string, readonly string[]>> = {
  "AWS::DynamoDB::Table": ["SSESpecification"],
  "AWS::DynamoDB::GlobalTable": ["SSESpecification"],
  "AWS::S3::Bucket": ["BucketEncryption"],
  "AWS::SQS::Queue": ["KmsMasterKeyId", "SqsManagedSseEnabled"],
  "AWS::Logs::LogGroup": ["KmsKeyId"],
  "AWS::SecretsManager::Secret": ["KmsKeyId"],
  "AWS::Kinesis::Stream": ["StreamEncryption"],
  "AWS::RDS::DBInstance": ["StorageEncrypted", "KmsKeyId"],
  "AWS::RDS::DBCluster": ["StorageEncrypted", "KmsKeyId"],
  "AWS::EFS::FileSystem": ["Encrypted", "KmsKeyId"],
  "AWS::Backup::BackupVault": ["EncryptionKeyArn"],
};

const shown = (value: unknown) => {
  if (value === undefined) return "(none)";
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
};

function encryptionChanges(before: CfnResource, after: CfnResource): DataSettingChange[] {
  const properties = ENCRYPTION_PROPERTIES[before.Type];
  if (!properties || before.Type !== after.Type) return [];
  const changed: string[] = [];
  for (const property of properties) {
    const was = before.Properties?.[property];
    const becomes = after.Properties?.[property];
    if (JSON.stringify(was) !== JSON.stringify(becomes))
      changed.push(`${property} ${shown(was)} becomes ${shown(becomes)}`);
  }
  // A global table names its customer managed key per replica.
  if (before.Type === "AWS::DynamoDB::GlobalTable") {
    const afterHolders = settingHolders(after);
    for (const [where, holder] of settingHolders(before)) {
      const was = holder.SSESpecification;
      const becomes = afterHolders.get(where)?.SSESpecification;
      if (afterHolders.has(where) && JSON.stringify(was) !== JSON.stringify(becomes)) {
        changed.push(`${where ? `${where} ` : "replica "}SSESpecification ${shown(was)} becomes ${shown(becomes)}`);
      }
    }
  }
  if (changed.length === 0) return [];
  return [
    {
      kind: "encryption-changed",
      detail: `encryption changes (${changed.join("; ")}): whatever reads it must be able to use the new key, and what the old key encrypted (backups, exports, old versions) still needs the old one`,
    },
  ];
}

/** The attribute whose time expires items, or undefined when TTL is off. */
function ttlAttribute(resource: CfnResource): string | undefined {
  const specification = record(resource.Properties?.TimeToLiveSpecification);
  return specification.Enabled === true && typeof specification.AttributeName === "string"
    ? specification.AttributeName
    : undefined;
}

function ttlChanges(before: CfnResource, after: CfnResource): DataSettingChange[] {
  if (!DYNAMODB_TABLES.has(before.Type)) return [];
  const was = ttlAttribute(before);
  const becomes = ttlAttribute(after);
  if (was === becomes) return [];
  const detail =
    was === undefined
      ? `time to live is switched on for attribute ${becomes}: items whose ${becomes} holds a past time are deleted`
      : becomes === undefined
        ? `time to live on attribute ${was} is switched off: items stop expiring and stay readable past their expiry`
        : `the time-to-live attribute ${was} becomes ${becomes}: items that carry only ${was} stop expiring, and items whose ${becomes} holds a past time are deleted`;
  return [{ kind: "ttl-changed", detail }];
}

/** What an in-place update of a stateful resource would do to its data or its backups. */
export function dataSettingChanges(before: CfnResource, after: CfnResource): DataSettingChange[] {
  return [
    ...backupChanges(before, after),
    ...indexChanges(before, after),
    ...encryptionChanges(before, after),
    ...ttlChanges(before, after),
  ];
}
