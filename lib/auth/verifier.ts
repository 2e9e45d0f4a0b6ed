import type { StageName } from "../config";
import type { Deadline } from "../db/deadline";
import { type ApiKeyStore, hasApiKeyShape, hashApiKey, isExpired, isSyntheticApiKey, type Principal } from "./apiKeys";

/** How long a lookup is reused. Half the promised 60 s for revocation to take effect. */
export const KEY_CACHE_TTL_MS = 30_000;
const MAX_CACHED_KEYS = 10_000;

export interface ApiKeyVerifier {
  /**
   * The environment whose keys it accepts, so that a refusal can name it. Optional: a verifier
   * without one (a test's fake) gets the plain "not valid" message for another stage's key.
   */
  readonly stage?: StageName;
  /**
   * The key's principal, or undefined when the key is unknown, revoked, expired or malformed, or
   * claims in its text to be synthetic while its record is not: at once when
   * it needs no lookup (a malformed token, a cached key: most warm requests), else once the store
   * has answered.
   */
  verify(token: string, deadline?: Deadline): Principal | undefined | Promise<Principal | undefined>;
}

/**
 * Looks keys up by hash, caching answers (valid and invalid) per container so that a warm
 * request usually costs no DynamoDB read.
 */
export function createApiKeyVerifier(
  store: ApiKeyStore,
  stage: StageName,
  now: () => number = Date.now,
): ApiKeyVerifier {
  const cache = new Map<string, { principal: Principal | undefined; expiresAt: number }>();
  return {
    stage,
    verify(token, deadline) {
      if (!hasApiKeyShape(token, stage)) return undefined;
      const keyHash = hashApiKey(token);
      const cached = cache.get(keyHash);
      if (cached && cached.expiresAt > now()) return cached.principal;
      return lookUp(keyHash, isSyntheticApiKey(token), deadline);
    },
  };

  async function lookUp(
    keyHash: string,
    claimsSynthetic: boolean,
    deadline: Deadline | undefined,
  ): Promise<Principal | undefined> {
    const record = await store.findByHash(keyHash, deadline);
    const at = now();
    // A key whose text says synthetic must have a synthetic record: commands trust the text
    // (npm run smoke writes only with a synthetic key), so a record that disagrees is refused.
    // Keys without the mark keep every answer they had, synthetic records made before it included.
    const principal =
      record && !record.revokedAt && !isExpired(record, at) && (!claimsSynthetic || record.synthetic)
        ? { keyId: record.keyId, ...(record.synthetic ? { synthetic: true } : {}) }
        : undefined;
    // A cached answer never outlives the key: an expiring key's entry ends when the key does.
    const keyExpiry = principal && record?.expiresAt !== undefined ? Date.parse(record.expiresAt) : Infinity;
    cache.delete(keyHash);
    if (cache.size >= MAX_CACHED_KEYS) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(keyHash, { principal, expiresAt: Math.min(at + KEY_CACHE_TTL_MS, keyExpiry) });
    return principal;
  }
}
