/**
 * Idempotency records of `POST /pets`, one per (API key, Idempotency-Key). The store only
 * performs conditional writes; the protocol that uses them is in lib/pets/idempotentCreate.ts.
 *
 * Every write after `begin` is conditional on the caller's `lockToken`, so a request can only
 * change or delete a record it acquired (unlike the Powertools Middy middleware before
 * aws-powertools/powertools-lambda-typescript#5676, which deleted records it never acquired).
 */
import type { Pet } from "../contract/schemas";
import type { Deadline } from "../db/deadline";
import { epochSeconds } from "../db/table";

export interface IdempotencyScope {
  /** The public id of the API key that sent the request: keys are never shared across clients. */
  readonly apiKeyId: string;
  /** The client's Idempotency-Key header. */
  readonly key: string;
}

interface RecordBase {
  /** SHA-256 of the canonical request body; the record answers only this body. */
  readonly requestHash: string;
  /** Epoch seconds after which the record counts as absent (and DynamoDB's TTL may delete it). */
  readonly expiresAtSeconds: number;
}

export interface InProgressRecord extends RecordBase {
  readonly state: "in_progress";
  readonly lockToken: string;
  /** Epoch milliseconds; 0 once the holder released the lock after a failure. */
  readonly lockedUntilMs: number;
  /** The id reserved for this request's pet, once allocated. */
  readonly petId?: number | undefined;
}

export interface CompletedRecord extends RecordBase {
  readonly state: "completed";
  readonly pet: Pet;
}

export type IdempotencyRecord = InProgressRecord | CompletedRecord;

export interface NewLock {
  readonly lockToken: string;
  readonly lockedUntilMs: number;
}

export type BeginResult =
  | { readonly acquired: true }
  /** `current` is undefined when the record vanished between the write and the read. */
  | { readonly acquired: false; readonly current: IdempotencyRecord | undefined };

export type TakeOverResult =
  | { readonly acquired: true; readonly petId: number | undefined }
  | { readonly acquired: false };

/** Every call takes the request's deadline, past which it gives up (see lib/db/deadline.ts). */
export interface IdempotencyStore {
  /** Writes a new in-progress record unless an unexpired one exists; then returns that one. */
  begin(
    scope: IdempotencyScope,
    record: { readonly requestHash: string; readonly expiresAtSeconds: number } & NewLock,
    now: Date,
    deadline?: Deadline,
  ): Promise<BeginResult>;
  /**
   * Takes over an in-progress record whose lock has lapsed, if it is still held by
   * `previousToken`. Answers the reserved pet id as stored at that moment.
   */
  takeOver(
    scope: IdempotencyScope,
    previousToken: string,
    lock: NewLock,
    now: Date,
    deadline?: Deadline,
  ): Promise<TakeOverResult>;
  /** Stores the reserved pet id; false when the lock is no longer `lockToken`'s or an id is already there. */
  reservePetId(scope: IdempotencyScope, lockToken: string, petId: number, deadline?: Deadline): Promise<boolean>;
  /** Records the answer; false when the lock is no longer `lockToken`'s. */
  complete(
    scope: IdempotencyScope,
    lockToken: string,
    pet: Pet,
    expiresAtSeconds: number,
    deadline?: Deadline,
  ): Promise<boolean>;
  /** Lets the next retry take over at once, keeping the reserved id. No-op unless `lockToken` holds it. */
  releaseLock(scope: IdempotencyScope, lockToken: string, deadline?: Deadline): Promise<void>;
  /**
   * Deletes the record, so the key can be used afresh, if `lockToken` holds it and no pet id is
   * reserved in it (that pet may exist). Says whether it did.
   */
  forget(scope: IdempotencyScope, lockToken: string, deadline?: Deadline): Promise<boolean>;
}

export function isExpired(record: IdempotencyRecord, now: Date): boolean {
  return record.expiresAtSeconds <= epochSeconds(now);
}

export { epochSeconds };
