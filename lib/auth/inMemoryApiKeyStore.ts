import type { Deadline } from "../db/deadline";
import { storeCall } from "../db/storeErrors";
import type { ApiKeyRecord, ApiKeyStore } from "./apiKeys";

/**
 * Key records in a Map, for unit tests and the bench: a lookup heeds the request's deadline as the
 * DynamoDB store's does (storeCall). Behaviour against a real table is DynamoApiKeyStore's, tested
 * on dynalite.
 */
export class InMemoryApiKeyStore implements ApiKeyStore {
  readonly records = new Map<string, ApiKeyRecord>();
  /** How many lookups reached the store (the verifier's cache answers the rest). */
  lookups = 0;

  findByHash(keyHash: string, deadline?: Deadline): Promise<ApiKeyRecord | undefined> {
    this.lookups += 1;
    return storeCall(async () => this.records.get(keyHash), deadline);
  }

  async save(record: ApiKeyRecord): Promise<void> {
    this.records.set(record.keyHash, record);
  }

  async list(): Promise<ApiKeyRecord[]> {
    return [...this.records.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revoke(keyId: string, at: Date, note?: string): Promise<boolean> {
    return this.#update(keyId, (record) => ({
      ...record,
      revokedAt: record.revokedAt ?? at.toISOString(),
      ...(note === undefined ? {} : { revocationNote: record.revocationNote ?? note }),
    }));
  }

  async markReplaced(record: ApiKeyRecord, replacement: string, expiresAt: Date): Promise<boolean> {
    return this.#update(record.keyId, (stored) => ({
      ...stored,
      replacedBy: replacement,
      expiresAt: expiresAt.toISOString(),
    }));
  }

  #update(keyId: string, change: (record: ApiKeyRecord) => ApiKeyRecord): boolean {
    for (const [hash, record] of this.records) {
      if (record.keyId === keyId) {
        this.records.set(hash, change(record));
        return true;
      }
    }
    return false;
  }
}
