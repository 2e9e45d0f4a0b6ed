/**
 * The synthetic check's API key, provisioned at deploy time by a CloudFormation custom resource
 * (infra/stacks/syntheticCheck.ts). The key is generated here, in the same format and by the same
 * code as `npm run keys -- create --synthetic` (lib/auth/apiKeys.ts: `petstore_<stage>_synthetic_…`), and goes to one place only: the stack's secret.
 * The keys store gets the usual record holding the key's SHA-256 hash (lib/auth/dynamoApiKeyStore.ts),
 * marked synthetic: the pets the check creates are its own, never seen by clients (lib/pets/collection.ts).
 * The key is never returned to CloudFormation, logged or written anywhere else.
 *
 * - Create and Update (the table, secret or key generation changed): a new key goes to the secret,
 *   then every earlier key of the check is revoked. The secret thus always holds the one valid key,
 *   also after CloudFormation rolls a failed update back (which it does with another Update).
 * - Delete: every key of the check is revoked (records stay, marked revoked, like any revoked key).
 *
 * The check's keys are the records named SYNTHETIC_KEY_NAME; the physical id names the stage only,
 * so that an update never makes CloudFormation delete the resource behind our back.
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

/** Revokes every active key of the check in the store but `except`; a table that is gone has none. */
async function revokeSyntheticKeys(store: ApiKeyStore, at: Date, except?: string): Promise<void> {
  let records: Awaited<ReturnType<ApiKeyStore["list"]>>;
  try {
    records = await store.list();
  } catch (error) {
    if ((error as Error).name === "ResourceNotFoundException") return;
    throw error;
  }
  for (const record of records) {
    if (record.name === SYNTHETIC_KEY_NAME && record.revokedAt === undefined && record.keyId !== except) {
      await store.revoke(record.keyId, at);
    }
  }
}

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

  if (event.RequestType === "Delete") {
    await revokeSyntheticKeys(deps.storeFor(properties.TableName), now);
    return { physicalResourceId: event.PhysicalResourceId };
  }

  const store = deps.storeFor(properties.TableName);
  // No expiry, unlike the synthetic keys people make (SYNTHETIC_KEY_LIFETIME_SECONDS): this key never
  // leaves the stack's secret, the stack revokes it when it rotates (SYNTHETIC_KEY_GENERATION) or
  // goes, and one that expired between deploys would stop the check and page for nothing.
  const { key, record } = await issueApiKey(store, properties.Stage, SYNTHETIC_KEY_NAME, {
    now,
    synthetic: true,
    lifetimeSeconds: null,
  });
  try {
    await deps.writeSecret(properties.SecretArn, key);
  } catch (error) {
    // Nobody will ever hold this key: it must not stay valid.
    await store.revoke(record.keyId, now);
    throw error;
  }
  // Only now that the secret holds the new key may the earlier ones stop working.
  const earlierTable =
    event.RequestType === "Update" ? propertiesOf(event.OldResourceProperties).TableName : properties.TableName;
  if (earlierTable !== properties.TableName) await revokeSyntheticKeys(deps.storeFor(earlierTable), now);
  await revokeSyntheticKeys(store, now, record.keyId);
  return { physicalResourceId: syntheticKeyResourceId(properties.Stage), data: { KeyId: record.keyId } };
}

export const syntheticKeyResourceId = (stage: StageName) => `petstore-${stage}-synthetic-check-key`;
