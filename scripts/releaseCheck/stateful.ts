/**
 * Which resources of a CloudFormation template hold state that a replacement or a removal would lose: the release check
 * (./compare.ts) refuses to replace or remove them unless acknowledged, and test/infra/statefulResources.test.ts pins
 * their logical ids. Judged from the template alone, so that a resource added later is covered without anyone listing
 * it: its type holds data, or its template says to keep it (DeletionPolicy) when the stack lets go of it.
 */

/** The parts of a CloudFormation template the release check reads. */
export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
}

export interface CfnTemplate {
  readonly Resources?: Record<string, CfnResource>;
  readonly [section: string]: unknown;
}

/**
 * Types whose resources hold data or identity that a new, empty resource cannot give back: items, objects, messages,
 * log events, key material (what it encrypted stays readable only with it), secret values, user directories.
 */
export const STATEFUL_TYPES: ReadonlySet<string> = new Set([
  "AWS::DynamoDB::Table",
  "AWS::DynamoDB::GlobalTable",
  "AWS::KMS::Key",
  "AWS::SecretsManager::Secret",
  "AWS::Logs::LogGroup",
  "AWS::S3::Bucket",
  "AWS::SQS::Queue",
  "AWS::Kinesis::Stream",
  "AWS::RDS::DBInstance",
  "AWS::RDS::DBCluster",
  "AWS::EFS::FileSystem",
  "AWS::Cognito::UserPool",
  "AWS::Backup::BackupVault",
]);

/**
 * Types replaced by design that keep nothing, even retained: a Lambda version (immutable, one per code change), an API
 * Gateway deployment (a snapshot). Pinning their ids would fail every code change.
 */
const REPLACED_BY_DESIGN: ReadonlySet<string> = new Set(["AWS::Lambda::Version", "AWS::ApiGateway::Deployment"]);

/**
 * Policies under which CloudFormation leaves the resource, or a snapshot of it, behind when it deletes it
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html).
 * RetainExceptOnCreate deletes only what a failed first create made, which held nothing yet.
 */
const KEEPING_POLICIES: ReadonlySet<string> = new Set(["Retain", "RetainExceptOnCreate", "Snapshot"]);

/** Whether a DeletionPolicy or UpdateReplacePolicy keeps the resource's data (absent means Delete). */
export const keepsData = (policy: string | undefined): boolean => policy !== undefined && KEEPING_POLICIES.has(policy);

export function isStateful(resource: CfnResource): boolean {
  if (REPLACED_BY_DESIGN.has(resource.Type)) return false;
  return STATEFUL_TYPES.has(resource.Type) || keepsData(resource.DeletionPolicy);
}

export interface StatefulResource {
  readonly logicalId: string;
  readonly type: string;
  /** The DeletionPolicy, `Delete` when the template gives none (CloudFormation's default). */
  readonly deletionPolicy: string;
}

/** A template's stateful resources, sorted by logical id. */
export function statefulResources(template: CfnTemplate): StatefulResource[] {
  return Object.entries(template.Resources ?? {})
    .filter(([, resource]) => isStateful(resource))
    .map(([logicalId, resource]) => ({
      logicalId,
      type: resource.Type,
      deletionPolicy: resource.DeletionPolicy ?? "Delete",
    }))
    .sort((a, b) => a.logicalId.localeCompare(b.logicalId));
}
