/**
 * API keys: `petstore_<stage>_<43 base62 characters>` (256 random bits). The prefix lets secret
 * scanners and people recognise a key and its environment. Only the SHA-256 of a key is stored;
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

/**
 * Every request hashes its key, even when the verifier has the answer cached: the one-shot
 * crypto.hash (Node 20.12+) does it in a fraction of createHash's time, with the same digest
 * (https://nodejs.org/api/crypto.html#cryptohashalgorithm-data-outputencoding).
 */
export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex");
}

/** Each stage's key shape, `^petstore_<stage>_[0-9A-Za-z]{43}$` and its length, worked out once. */
const keyShapes = new Map<string, { readonly length: number; readonly pattern: RegExp }>();

function keyShape(stage: StageName) {
  let shape = keyShapes.get(stage);
  if (shape === undefined) {
    const prefix = apiKeyPrefix(stage);
    const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    shape = { length: prefix.length + SECRET_LENGTH, pattern: new RegExp(`^${escaped}[0-9A-Za-z]{${SECRET_LENGTH}}$`) };
    keyShapes.set(stage, shape);
  }
  return shape;
}

/** True when `token` has the shape of a key of `stage`; anything else is rejected unread. */
export function hasApiKeyShape(token: string, stage: StageName): boolean {
  const shape = keyShape(stage);
  // The length first: a token of any other length (a 100 KB header) is not scanned at all.
  return token.length === shape.length && shape.pattern.test(token);
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

export function generateApiKey(stage: StageName): string {
  return apiKeyPrefix(stage) + randomBase62(SECRET_LENGTH);
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
  /** A key of the project's own checks (ApiKeyRecord.synthetic). */
  readonly synthetic?: boolean;
}

/** Issues a key: stores its hash and returns the key, which is never stored or shown again. */
export async function issueApiKey(
  store: ApiKeyStore,
  stage: StageName,
  name: string,
  { now = new Date(), key = generateApiKey(stage), synthetic = false }: IssueOptions = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (!hasApiKeyShape(key, stage))
    throw new Error(`An API key for ${stage} must look like ${apiKeyPrefix(stage)}<43 letters or digits>.`);
  const record: ApiKeyRecord = {
    keyId: generateKeyId(),
    name,
    keyHash: hashApiKey(key),
    createdAt: now.toISOString(),
    ...(synthetic ? { synthetic: true } : {}),
  };
  await store.save(record);
  return { key, record };
}
