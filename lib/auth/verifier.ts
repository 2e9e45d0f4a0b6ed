import type { StageName } from "../config";
import type { Deadline } from "../db/deadline";
import {
  type ApiKeyRecord,
  type ApiKeyStore,
  hasApiKeyShape,
  hashApiKey,
  isExpired,
  isSyntheticApiKey,
  KEY_CACHE_TTL_MS,
  type Principal,
  scopeOf,
} from "./apiKeys";

const MAX_CACHED_KEYS = 10_000;

/**
 * Why a token was refused, as far as its holder may be told: only about this key, never about
 * another (not even that it was replaced, or by which).
 */
export type KeyRefusal =
  /** Not a key of this stage, unknown, or a record that contradicts the key's text. */
  | { readonly refused: "invalid" }
  /** Revoked; `note` says why when its holder could not know (ApiKeyRecord.revocationNote). */
  | { readonly refused: "revoked"; readonly note?: string }
  /** Past its expiry (ISO 8601). */
  | { readonly refused: "expired"; readonly expiredAt: string };

/** The verifier's answer: who sent the request, or why the token was refused. */
export type KeyVerdict = Principal | KeyRefusal;

export const isRefusal = (verdict: KeyVerdict): verdict is KeyRefusal => "refused" in verdict;

const INVALID: KeyRefusal = { refused: "invalid" };

export interface ApiKeyVerifier {
  /**
   * The environment whose keys it accepts, so that a refusal can name it. Optional: a verifier
   * without one (a test's fake) gets the plain "not valid" message for another stage's key.
   */
  readonly stage?: StageName;
  /**
   * The key's principal, or why it was refused: at once when it needs no lookup (a malformed
   * token, a cached key: most warm requests), else once the store has answered.
   */
  verify(token: string, deadline?: Deadline): KeyVerdict | Promise<KeyVerdict>;
}

/** The verdict on a stored record at `at`; `claimsSynthetic`: the key's text has the synthetic mark. */
function judge(record: ApiKeyRecord | undefined, claimsSynthetic: boolean, at: number): KeyVerdict {
  // A key whose text says synthetic must have a synthetic record: commands trust the text
  // (npm run smoke writes only with a synthetic key), so a record that disagrees is refused.
  // Keys without the mark keep every answer they had, synthetic records made before it included.
  if (!record || (claimsSynthetic && !record.synthetic)) return INVALID;
  if (record.revokedAt)
    return record.revocationNote === undefined
      ? { refused: "revoked" }
      : { refused: "revoked", note: record.revocationNote };
  if (isExpired(record, at)) return { refused: "expired", expiredAt: record.expiresAt as string };
  return { keyId: record.keyId, scope: scopeOf(record), ...(record.synthetic ? { synthetic: true } : {}) };
}

/**
 * Looks keys up by hash, caching verdicts (admissions and refusals) per container so that a warm
 * request usually costs no DynamoDB read.
 */
export function createApiKeyVerifier(
  store: ApiKeyStore,
  stage: StageName,
  now: () => number = Date.now,
): ApiKeyVerifier {
  const cache = new Map<string, { verdict: KeyVerdict; until: number }>();
  return {
    stage,
    verify(token, deadline) {
      if (!hasApiKeyShape(token, stage)) return INVALID;
      const keyHash = hashApiKey(token);
      const cached = cache.get(keyHash);
      if (cached && cached.until > now()) return cached.verdict;
      return lookUp(keyHash, isSyntheticApiKey(token), deadline);
    },
  };

  async function lookUp(
    keyHash: string,
    claimsSynthetic: boolean,
    deadline: Deadline | undefined,
  ): Promise<KeyVerdict> {
    const record = await store.findByHash(keyHash, deadline);
    const at = now();
    const verdict = judge(record, claimsSynthetic, at);
    // A cached admission never outlives the key: an expiring key's entry ends when the key does,
    // after which the next request looks it up again and is told it expired.
    const keyExpiry = !isRefusal(verdict) && record?.expiresAt !== undefined ? Date.parse(record.expiresAt) : Infinity;
    cache.delete(keyHash);
    if (cache.size >= MAX_CACHED_KEYS) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(keyHash, { verdict, until: Math.min(at + KEY_CACHE_TTL_MS, keyExpiry) });
    return verdict;
  }
}
