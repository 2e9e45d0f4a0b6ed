/**
 * The synthetic check's API key, provisioned at deploy time by a CloudFormation custom resource
 * (infra/stacks/syntheticCheck.ts). The key is generated here, in the same format and by the same
 * code as `npm run keys` (lib/auth/apiKeys.ts), and goes to one place only: the stack's secret.
 * The keys store gets the usual record holding the key's SHA-256 hash (lib/auth/dynamoApiKeyStore.ts).
 * The key is never returned to CloudFormation, logged or written anywhere else.
 *
 * - Create: a new key; the resource's physical id is the key's public id.
 * - Update (the table, secret or stage changed): a new key, hence a new physical id; CloudFormation
 *   then deletes the old resource, which revokes the old key.
 * - Delete: the key is revoked (its record stays, marked revoked, like any revoked key).
 */
import type { CloudFormationCustomResourceEvent } from "aws-lambda";
import { type ApiKeyStore, issueApiKey } from "../auth/apiKeys";
import { type StageName, stages } from "../config";

/** The record's name, what `npm run keys -- list` shows. */
export const SYNTHETIC_KEY_NAME = "synthetic check (managed by the stack)";

/** The custom resource's properties, as the stack sets them. */
export interface SyntheticKeyProperties {
  readonly TableName: string;
  readonly SecretArn: string;
  readonly Stage: StageName;
}

export interface KeyProvisionerDependencies {
  /** The keys store in the named table. */
  readonly storeFor: (tableName: string) => ApiKeyStore;
  readonly writeSecret: (secretId: string, text: string) => Promise<void>;
  readonly clock?: () => Date;
}

export interface ResourceOutcome {
  readonly physicalResourceId: string;
  readonly data?: Readonly<Record<string, string>>;
}

const KEY_ID = /^key_[0-9A-Za-z]{12}$/;

function propertiesOf(raw: Record<string, unknown>): SyntheticKeyProperties {
  const text = (name: string) => {
    const value = raw[name];
    if (typeof value !== "string" || value === "") throw new Error(`Property ${name} is missing.`);
    return value;
  };
  const stage = text("Stage");
  if (!stages.includes(stage as StageName)) throw new Error(`Property Stage must be one of ${stages.join(", ")}.`);
  return { TableName: text("TableName"), SecretArn: text("SecretArn"), Stage: stage as StageName };
}

export async function provisionSyntheticKey(
  event: CloudFormationCustomResourceEvent,
  deps: KeyProvisionerDependencies,
): Promise<ResourceOutcome> {
  const now = (deps.clock ?? (() => new Date()))();
  const properties = propertiesOf(event.ResourceProperties);
  const store = deps.storeFor(properties.TableName);

  if (event.RequestType === "Delete") {
    // A resource whose creation failed has no key to revoke.
    if (KEY_ID.test(event.PhysicalResourceId)) {
      try {
        await store.revoke(event.PhysicalResourceId, now);
      } catch (error) {
        // The table went first (a manual delete): no record is left to revoke.
        if ((error as Error).name !== "ResourceNotFoundException") throw error;
      }
    }
    return { physicalResourceId: event.PhysicalResourceId };
  }

  const { key, record } = await issueApiKey(store, properties.Stage, SYNTHETIC_KEY_NAME, now);
  try {
    await deps.writeSecret(properties.SecretArn, key);
  } catch (error) {
    // Nobody will ever hold this key: it must not stay valid.
    await store.revoke(record.keyId, now);
    throw error;
  }
  return { physicalResourceId: record.keyId, data: { KeyId: record.keyId } };
}
