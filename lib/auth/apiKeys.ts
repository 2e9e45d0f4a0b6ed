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
 * How long a synthetic key works: its record carries the expiry in the table's TTL attribute and
 * the verifier refuses it from then on. Short, because such keys sit in CI secrets and on testers'
 * machines; the stack renews its own check's key before then (lib/synthetic/keyProvisioner.ts).
 * Ordinary keys never expire.
 */
export const SYNTHETIC_KEY_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

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
   * When the key stops working (ISO 8601, whole seconds): synthetic keys only. Stored in the table's
   * TTL attribute, so DynamoDB deletes the record some time after; the verifier refuses the key
   * from this instant on, since that deletion may take days. Unset: the key never expires.
   */
  readonly expiresAt?: string | undefined;
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
  /** Marks the key revoked; returns false when no key has that id. */
  revoke(keyId: string, at: Date): Promise<boolean>;
}

/** Who made a request: what handlers and logs may know about the key. */
export interface Principal {
  readonly keyId: string;
  /** The key is synthetic (ApiKeyRecord.synthetic): its requests see a collection of their own. */
  readonly synthetic?: boolean;
}

export interface IssueOptions {
  readonly now?: Date;
  /** The key to store, when it was chosen elsewhere (a pinned local key); generated otherwise. */
  readonly key?: string;
  /** A key of the project's own checks (ApiKeyRecord.synthetic), marked so in its text. */
  readonly synthetic?: boolean;
  /**
   * A synthetic key's lifetime: SYNTHETIC_KEY_LIFETIME_SECONDS unless given; null for none, for a
   * key whose whole life a stack manages (lib/synthetic/keyProvisioner.ts).
   */
  readonly lifetimeSeconds?: number | null;
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
    lifetimeSeconds = SYNTHETIC_KEY_LIFETIME_SECONDS,
  }: IssueOptions = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const kind: KeyKind = synthetic ? "synthetic" : "ordinary";
  if (!hasShape(key, stage, kind)) {
    const prefix = synthetic ? syntheticApiKeyPrefix(stage) : apiKeyPrefix(stage);
    throw new Error(
      `A${synthetic ? " synthetic" : "n"} API key for ${stage} must look like ${prefix}<43 letters or digits>.`,
    );
  }
  if (synthetic && lifetimeSeconds !== null && !(Number.isSafeInteger(lifetimeSeconds) && lifetimeSeconds > 0))
    throw new Error("A synthetic key's lifetime must be a whole number of seconds above 0.");
  // Whole seconds, as the TTL attribute holds it, so that the record and the stored item agree.
  const expiresAt =
    synthetic && lifetimeSeconds !== null
      ? new Date((Math.floor(now.getTime() / 1000) + lifetimeSeconds) * 1000).toISOString()
      : undefined;
  const record: ApiKeyRecord = {
    keyId: generateKeyId(),
    name,
    keyHash: hashApiKey(key),
    createdAt: now.toISOString(),
    ...(synthetic ? { synthetic: true } : {}),
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
  await store.save(record);
  return { key, record };
}
