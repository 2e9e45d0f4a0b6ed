/**
 * API keys: `petstore_<stage>_<43 base62 characters>` (256 random bits), and synthetic keys (the
 * project's own checks) `petstore_<stage>_synthetic_<43 base62 characters>`. The prefix lets secret
 * scanners and people recognise a key and its environment; the `synthetic_` mark lets a command
 * know, offline and before any write, that a key is a synthetic one (as Stripe's `sk_test_` keys
 * say they are test keys). Only issueApiKey with `synthetic: true` makes a key with the mark, and
 * the verifier refuses one whose record is not synthetic. Only the SHA-256 of a key is stored;
 * a key has enough entropy that a fast hash is safe, and lookup by hash needs no comparison of
 * secrets in our code.
 */
import { hash, randomBytes } from "node:crypto";
import { type StageName, stages } from "../config";
import type { Deadline } from "../db/deadline";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const SECRET_LENGTH = 43;

function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 × 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export function apiKeyPrefix(stage: StageName): string {
  return `petstore_${stage}_`;
}

/** What follows the stage's prefix in a synthetic key, and only in one (base62 has no `_`). */
const SYNTHETIC_MARK = "synthetic_";

/** The prefix of a stage's synthetic keys: `petstore_<stage>_synthetic_`. */
export function syntheticApiKeyPrefix(stage: StageName): string {
  return `${apiKeyPrefix(stage)}${SYNTHETIC_MARK}`;
}

/**
 * How long a synthetic key works unless told otherwise: its record carries the expiry in the table's
 * TTL attribute and the verifier refuses it from then on. Short, because such keys sit in CI secrets
 * and on testers' machines; the stack renews its own check's key before then
 * (lib/synthetic/keyProvisioner.ts). Ordinary keys expire only when given an expiry (keys create
 * --expires-in/--expires-at, or a rotation's overlap).
 */
export const SYNTHETIC_KEY_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

/**
 * How long the verifier reuses a key's lookup (lib/auth/verifier.ts): half the promised 60 s for a
 * revocation to take effect. An expiry known at lookup bounds the reuse (the cache never serves a
 * key past its expiry), so an expiry set later must be at least this far off (rotateApiKey).
 */
export const KEY_CACHE_TTL_MS = 30_000;

/** How long a rotated key keeps working beside its replacement unless told otherwise: a week. */
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 7 * 24 * 60 * 60;
/**
 * The shortest overlap: a container may have looked the old key up just before the rotation, and
 * reuses that answer for KEY_CACHE_TTL_MS; a shorter overlap would let it serve the key past its new
 * expiry. A leaked key is revoked instead (it stops working within 60 s).
 */
export const MIN_ROTATION_OVERLAP_SECONDS = KEY_CACHE_TTL_MS / 1000;

/**
 * What a key may do: `read` keys call the read operations (listPets, getPet), `write` keys every
 * operation (lib/routes.ts, `scope`). Keys made before scopes existed have none and are `write`,
 * so nothing changed for them.
 */
export const keyScopes = ["read", "write"] as const;
export type KeyScope = (typeof keyScopes)[number];

/** The scope of a key's record: `write` for records made before scopes existed. */
export function scopeOf(record: { readonly scope?: KeyScope | undefined }): KeyScope {
  return record.scope ?? "write";
}

/** True when a key with scope `granted` may call an operation that needs `required`. */
export function scopeAllows(granted: KeyScope, required: KeyScope): boolean {
  return granted === "write" || required === "read";
}

/**
 * Every request hashes its key, even when the verifier has the answer cached: the one-shot
 * crypto.hash (Node 20.12+) does it in a fraction of createHash's time, with the same digest
 * (https://nodejs.org/api/crypto.html#cryptohashalgorithm-data-outputencoding).
 */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

type KeyKind = "ordinary" | "synthetic";

interface KeyShape {
  readonly length: number;
  readonly pattern: RegExp;
}

const shapeOf = (prefix: string): KeyShape => {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return { length: prefix.length + SECRET_LENGTH, pattern: new RegExp(`^${escaped}[0-9A-Za-z]{${SECRET_LENGTH}}$`) };
};

/**
 * Each stage's key shapes, `^petstore_<stage>_[0-9A-Za-z]{43}$` and its synthetic counterpart,
 * with their lengths, worked out on a stage's first request (not at module init, a cold start).
 */
const keyShapes = new Map<string, Readonly<Record<KeyKind, KeyShape>>>();

function keyShape(stage: StageName, kind: KeyKind): KeyShape {
  let shapes = keyShapes.get(stage);
  if (shapes === undefined) {
    shapes = { ordinary: shapeOf(apiKeyPrefix(stage)), synthetic: shapeOf(syntheticApiKeyPrefix(stage)) };
    keyShapes.set(stage, shapes);
  }
  return shapes[kind];
}

function hasShape(token: string, stage: StageName, kind: KeyKind): boolean {
  const shape = keyShape(stage, kind);
  // The length first: a token of any other length (a 100 KB header) is not scanned at all.
  return token.length === shape.length && shape.pattern.test(token);
}

/** True when `token` has the shape of a key of `stage`, ordinary or synthetic; anything else is rejected unread. */
export function hasApiKeyShape(token: string, stage: StageName): boolean {
  return hasShape(token, stage, "ordinary") || hasShape(token, stage, "synthetic");
}

/**
 * True when `token` is shaped as a synthetic key of some stage (`petstore_<stage>_synthetic_…`).
 * Only the text: the verifier checks that the record agrees.
 */
export function isSyntheticApiKey(token: string): boolean {
  return stages.some((stage) => hasShape(token, stage, "synthetic"));
}

/**
 * The stage whose key `token` has the shape of, if any: lets a refusal say that a well-formed key
 * belongs to another environment. Reads only the prefix, which names no secret.
 */
export function stageOfKey(token: string): StageName | undefined {
  return stages.find((stage) => hasApiKeyShape(token, stage));
}

/** A newline at the end: a real one, or one copied as text (`\n`, `%0A`) from JSON or a URL. */
const TRAILING_NEWLINE = /(?:[\r\n]|\\[rn]|%0[ad])$/i;
const SURROUNDING_SPACE = /^\s|\s$/;
const QUOTED = /^(["'`]).*\1$/s;

/**
 * What went wrong when a key was copied, for a token that is not a key: the end of a line taken
 * along, spaces around it, quotes ("it ends with a newline"). Undefined when it is none of these.
 * Never repeats the token, so the answer is safe to show and to log.
 */
export function describeKeySlip(token: string): string | undefined {
  if (TRAILING_NEWLINE.test(token)) return "it ends with a newline";
  if (SURROUNDING_SPACE.test(token)) return "it has a space before or after it";
  if (QUOTED.test(token)) return "it is in quotes";
  return undefined;
}

/** A new key of `stage`; `synthetic` gives it the synthetic mark (issueApiKey sets it for synthetic keys). */
export function generateApiKey(stage: StageName, { synthetic = false }: { readonly synthetic?: boolean } = {}): string {
  return (synthetic ? syntheticApiKeyPrefix(stage) : apiKeyPrefix(stage)) + randomBase62(SECRET_LENGTH);
}

export function generateKeyId(): string {
  return `key_${randomBase62(12)}`;
}

export interface ApiKeyRecord {
  /** Public identifier, safe to log and show. */
  readonly keyId: string;
  readonly name: string;
  readonly keyHash: string;
  readonly createdAt: string;
  readonly revokedAt?: string | undefined;
  /**
   * A key of the project's own checks: its pets are its own, invisible to every other key, and
   * expire by themselves (lib/pets/collection.ts). Set when the key is issued, never changed.
   */
  readonly synthetic?: boolean | undefined;
  /**
   * When the key stops working (ISO 8601, whole seconds); unset: never. A synthetic key's is in the
   * table's TTL attribute, so DynamoDB deletes the record some time after; an ordinary key's record
   * is kept (lib/auth/dynamoApiKeyStore.ts), so that `keys list` still shows it and its holder is
   * told it expired. The verifier refuses the key from this instant on.
   */
  readonly expiresAt?: string | undefined;
  /** What the key may do; unset for keys made before scopes, which are `write` (scopeOf). */
  readonly scope?: KeyScope | undefined;
  /** The key this one replaced (keys rotate), by id. */
  readonly replaces?: string | undefined;
  /** The key that replaced this one (keys rotate), by id; this one expires at the overlap's end. */
  readonly replacedBy?: string | undefined;
  /**
   * Why the key was revoked, in words for whoever holds it (the 401 says it): set only when the
   * holder could not know, as for a key npm start replaced when it restarted.
   */
  readonly revocationNote?: string | undefined;
}

/** True when `record` has an expiry and `at` is at or past it. */
export function isExpired(record: Pick<ApiKeyRecord, "expiresAt">, at: number): boolean {
  return record.expiresAt !== undefined && Date.parse(record.expiresAt) <= at;
}

export interface ApiKeyStore {
  /** `deadline`: the request's, when a request looks the key up (lib/db/deadline.ts). */
  findByHash(keyHash: string, deadline?: Deadline): Promise<ApiKeyRecord | undefined>;
  save(record: ApiKeyRecord): Promise<void>;
  list(): Promise<ApiKeyRecord[]>;
  /**
   * Marks the key revoked (with `note` for its holder, ApiKeyRecord.revocationNote); returns false
   * when no key has that id.
   */
  revoke(keyId: string, at: Date, note?: string): Promise<boolean>;
  /**
   * Records that the key with id `replacement` replaced `record`'s key, which now expires at
   * `expiresAt`; returns false when the record is no longer stored.
   */
  markReplaced(record: ApiKeyRecord, replacement: string, expiresAt: Date): Promise<boolean>;
}

/** Who made a request: what handlers and logs may know about the key. */
export interface Principal {
  readonly keyId: string;
  readonly scope: KeyScope;
  /** The key is synthetic (ApiKeyRecord.synthetic): its requests see a collection of their own. */
  readonly synthetic?: boolean;
}

export interface IssueOptions {
  readonly now?: Date;
  /** The key to store, when it was chosen elsewhere (a pinned local key); generated otherwise. */
  readonly key?: string;
  /** A key of the project's own checks (ApiKeyRecord.synthetic), marked so in its text. */
  readonly synthetic?: boolean;
  /** What the key may do; `write` unless given. */
  readonly scope?: KeyScope;
  /**
   * How long the key works, in seconds. Unless given: SYNTHETIC_KEY_LIFETIME_SECONDS for a synthetic
   * key, no end for an ordinary one. null: no end, for a synthetic key whose whole life a stack
   * manages (lib/synthetic/keyProvisioner.ts).
   */
  readonly lifetimeSeconds?: number | null;
  /** The key this one replaces (rotateApiKey). */
  readonly replaces?: string;
}

/** `now` plus `seconds`, in whole seconds, as the TTL attribute holds a time. */
function wholeSecondsAfter(now: Date, seconds: number): Date {
  return new Date((Math.floor(now.getTime() / 1000) + seconds) * 1000);
}

/** Issues a key: stores its hash and returns the key, which is never stored or shown again. */
export async function issueApiKey(
  store: ApiKeyStore,
  stage: StageName,
  name: string,
  {
    now = new Date(),
    synthetic = false,
    key = generateApiKey(stage, { synthetic }),
    scope = "write",
    lifetimeSeconds = synthetic ? SYNTHETIC_KEY_LIFETIME_SECONDS : null,
    replaces,
  }: IssueOptions = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const kind: KeyKind = synthetic ? "synthetic" : "ordinary";
  if (!hasShape(key, stage, kind)) {
    const prefix = synthetic ? syntheticApiKeyPrefix(stage) : apiKeyPrefix(stage);
    throw new Error(
      `A${synthetic ? " synthetic" : "n"} API key for ${stage} must look like ${prefix}<43 letters or digits>.`,
    );
  }
  if (!keyScopes.includes(scope)) throw new Error(`A key's scope is read or write, not "${scope}".`);
  if (lifetimeSeconds !== null && !(Number.isSafeInteger(lifetimeSeconds) && lifetimeSeconds > 0))
    throw new Error("A key's lifetime must be a whole number of seconds above 0.");
  const expiresAt = lifetimeSeconds === null ? undefined : wholeSecondsAfter(now, lifetimeSeconds).toISOString();
  const record: ApiKeyRecord = {
    keyId: generateKeyId(),
    name,
    keyHash: hashApiKey(key),
    createdAt: now.toISOString(),
    scope,
    ...(synthetic ? { synthetic: true } : {}),
    ...(expiresAt === undefined ? {} : { expiresAt }),
    ...(replaces === undefined ? {} : { replaces }),
  };
  await store.save(record);
  return { key, record };
}

/** Why a key cannot be rotated, in one line for the command. */
export class KeyRotationError extends Error {
  override readonly name = "KeyRotationError";
}

/**
 * Replaces a key: a new key with the same name, scope and kind (printed once by the caller), and
 * the old one expiring `overlapSeconds` from now (or at its own expiry, when sooner), so that its
 * holders have that long to switch. A synthetic key's replacement gets a synthetic key's default
 * lifetime. The new key is stored before the old one is marked: with no transactions, a failure in
 * between leaves the old key working as before and says which new key to revoke before retrying.
 */
export async function rotateApiKey(
  store: ApiKeyStore,
  stage: StageName,
  keyId: string,
  {
    now = new Date(),
    overlapSeconds = DEFAULT_ROTATION_OVERLAP_SECONDS,
    refuse,
  }: {
    now?: Date;
    overlapSeconds?: number;
    /** The caller's own reason not to rotate a key (npm start's keys, locally), in one line. */
    refuse?: (old: ApiKeyRecord) => string | undefined;
  } = {},
): Promise<{ key: string; record: ApiKeyRecord; replaced: ApiKeyRecord & { readonly expiresAt: string } }> {
  if (!(Number.isSafeInteger(overlapSeconds) && overlapSeconds >= MIN_ROTATION_OVERLAP_SECONDS))
    throw new KeyRotationError(
      `The overlap must be at least ${MIN_ROTATION_OVERLAP_SECONDS}s, the time a server may keep using its lookup of the old key; to cut a leaked key off, revoke it.`,
    );
  const old = (await store.list()).find((record) => record.keyId === keyId);
  if (!old) throw new KeyRotationError(`No key has id ${keyId}.`);
  if (old.revokedAt) throw new KeyRotationError(`${keyId} was revoked; create a new key instead.`);
  if (isExpired(old, now.getTime())) throw new KeyRotationError(`${keyId} has expired; create a new key instead.`);
  if (old.replacedBy)
    throw new KeyRotationError(`${keyId} was already replaced by ${old.replacedBy}; rotate that one.`);
  const refusal = refuse?.(old);
  if (refusal !== undefined) throw new KeyRotationError(refusal);
  const issued = await issueApiKey(store, stage, old.name, {
    now,
    scope: scopeOf(old),
    ...(old.synthetic ? { synthetic: true } : {}),
    replaces: old.keyId,
  });
  const overlapEnd = wholeSecondsAfter(now, overlapSeconds);
  const ownEnd = old.expiresAt === undefined ? undefined : new Date(old.expiresAt);
  const expiresAt = ownEnd !== undefined && ownEnd < overlapEnd ? ownEnd : overlapEnd;
  const unmarked = `${keyId} is unchanged and still works; revoke the unused ${issued.record.keyId} (keys revoke ${issued.record.keyId}) and rotate again`;
  let marked: boolean;
  try {
    marked = await store.markReplaced(old, issued.record.keyId, expiresAt);
  } catch (error) {
    throw new KeyRotationError(`Marking ${keyId} replaced failed: ${unmarked}.`, { cause: error });
  }
  if (!marked)
    throw new KeyRotationError(
      `${keyId} vanished while it was being rotated; revoke the unused ${issued.record.keyId}.`,
    );
  return { ...issued, replaced: { ...old, replacedBy: issued.record.keyId, expiresAt: expiresAt.toISOString() } };
}
