import type { StageName } from "../config";
import type { Deadline } from "../db/deadline";
import { type ApiKeyStore, hasApiKeyShape, hashApiKey, type Principal } from "./apiKeys";

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
   * The key's principal, or undefined when the key is unknown, revoked or malformed: at once when
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
      return lookUp(keyHash, deadline);
    },
  };

  async function lookUp(keyHash: string, deadline: Deadline | undefined): Promise<Principal | undefined> {
    const record = await store.findByHash(keyHash, deadline);
    const principal =
      record && !record.revokedAt
        ? { keyId: record.keyId, ...(record.synthetic ? { synthetic: true } : {}) }
        : undefined;
    cache.delete(keyHash);
    if (cache.size >= MAX_CACHED_KEYS) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(keyHash, { principal, expiresAt: now() + KEY_CACHE_TTL_MS });
    return principal;
  }
}
