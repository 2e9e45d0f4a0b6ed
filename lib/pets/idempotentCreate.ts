/**
 * `POST /pets` with an Idempotency-Key, without transactions (dynalite has none).
 *
 * Writes, in order, each a single conditional DynamoDB write:
 *   W1 begin       put the record {in_progress, requestHash, lockToken, lockedUntil}
 *                  if absent or expired
 *   W2 allocate    ADD 1 to the id counter
 *   W3 reserve     SET petId on the record, if we hold the lock and no id is there yet
 *   W4 insert      put the pet, if no item has its id
 *   W5 complete    SET state = completed and the pet, if we hold the lock
 *
 * A crash (process gone, no clean-up) after any of them, then a retry with the same key and body:
 *   - after W1:      the record is in_progress without an id; once the lock lapses the retry takes
 *                    it over and continues from W2. Until then it answers 409.
 *   - after W2:      the allocated id is simply lost (a gap, which the contract allows); the retry
 *                    takes over and allocates another. No pet has the lost id, so nothing duplicates.
 *   - after W3:      the retry takes over and reads the reserved id in the same conditional
 *                    write, so it inserts under that id instead of allocating a new one.
 *   - after W4:      as after W3; its insert finds the pet already there, checks it is this request's,
 *                    and completes.
 *   - after W5:      the retry replays the stored 201.
 * The id is fixed in the record before the pet exists (W3 before W4), and W4 is conditional on
 * the id, so however many processes work on one key, at most one pet is written for it.
 *
 * A failure that we catch (throttling, timeout, a bug) cleans up, but only what this request
 * holds (every clean-up write is conditional on its lock token, and W1 may have been applied
 * even when its answer was lost):
 *   - no pet id reserved yet: forget the record, so the key is usable again at once, with any body;
 *   - otherwise the pet may exist (a timed-out write can still have been applied), so the
 *     record and its reserved id are kept and only the lock is released; a retry with the same
 *     body resumes at once and converges on that id. A different body is then a 422.
 *
 * Two holders at once (a lock lapsed while its holder was merely slow, or a frozen Lambda that
 * resumes later): the later one's takeover changed the token, so the earlier one's W3 and W5 fail
 * their conditions. If the earlier one had already reserved an id, the later one read it at
 * takeover and both insert the same pet. Lock length therefore affects only how soon a retry may
 * take over, never correctness.
 */
import { randomUUID } from "node:crypto";
import type { NewPet, Pet } from "../contract/schemas";
import type { Deadline } from "../db/deadline";
import { IdempotencyKeyInProgressError, IdempotencyKeyReusedError } from "../errors";
import { requestHash as hashRequest } from "../idempotency/requestHash";
import { epochSeconds, type IdempotencyScope, type IdempotencyStore, isExpired } from "../idempotency/store";
import type { PetCollection } from "./collection";
import type { PetRepository } from "./repository";
import { createPet, insertPet, petFromRequest } from "./service";

/** Records are kept at least this long after the 201 (API-DECISIONS: "kept at least 24 hours"). */
export const IDEMPOTENCY_RETENTION_SECONDS = 24 * 60 * 60;
/**
 * How long a holder may work before a retry may take over: longer than the Lambda timeout
 * (10 s), so a live holder normally finishes first.
 */
export const IDEMPOTENCY_LOCK_MS = 15_000;
/** A create takes milliseconds; a client told to wait a second usually gets the replay. */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;
const MAX_ACQUIRE_ROUNDS = 3;

export interface IdempotentCreateDependencies {
  readonly pets: PetRepository;
  readonly idempotency: IdempotencyStore;
  readonly clock: () => Date;
}

export interface CreateOutcome {
  readonly pet: Pet;
  /** True when this answer is the stored answer of an earlier request. */
  readonly replayed: boolean;
}

type Lease = { readonly kind: "replay"; readonly pet: Pet } | { readonly kind: "held"; readonly petId?: number };

/**
 * Creates a pet for a `POST /pets` in the caller's collection: exactly once per (API key,
 * Idempotency-Key) when the client sent a key, plainly otherwise.
 */
export async function createPetForRequest(
  deps: IdempotentCreateDependencies,
  newPet: NewPet,
  request: {
    readonly apiKeyId: string | undefined;
    readonly key: string | undefined;
    readonly collection: PetCollection;
  },
  deadline?: Deadline,
): Promise<CreateOutcome> {
  if (request.key === undefined)
    return { pet: await createPet(deps.pets, newPet, request.collection, deadline), replayed: false };
  // Keys are scoped to the API key; without one the scope would be shared, so refuse to guess.
  if (request.apiKeyId === undefined) throw new Error("Idempotency-Key used on a request without a principal.");
  return createPetIdempotently(
    deps,
    { apiKeyId: request.apiKeyId, key: request.key },
    newPet,
    request.collection,
    deadline,
  );
}

export async function createPetIdempotently(
  deps: IdempotentCreateDependencies,
  scope: IdempotencyScope,
  newPet: NewPet,
  collection: PetCollection,
  deadline?: Deadline,
): Promise<CreateOutcome> {
  // Hashed once, before anything runs, so the record's identity cannot drift with the request.
  const requestHash = hashRequest(newPet);
  // One token for every round: a write of ours whose answer was lost is recognised as ours.
  const lockToken = randomUUID();
  let insertTried = false;
  try {
    const lease = await acquire(deps, scope, requestHash, lockToken, deadline);
    if (lease.kind === "replay") return { pet: lease.pet, replayed: true };
    let petId = lease.petId;
    if (petId === undefined) {
      const allocated = await deps.pets.allocateId(deadline);
      // Lost only if another request took the key over; it will answer the client's retry.
      if (!(await deps.idempotency.reservePetId(scope, lockToken, allocated, deadline))) {
        throw new IdempotencyKeyInProgressError(IN_PROGRESS_RETRY_AFTER_SECONDS);
      }
      petId = allocated;
    }
    const pet = petFromRequest(petId, newPet);
    insertTried = true;
    await insertPet(deps.pets, pet, collection, deadline);
    // If the lock was taken over meanwhile, the new holder has the same id and records the same pet.
    await deps.idempotency.complete(
      scope,
      lockToken,
      pet,
      epochSeconds(deps.clock()) + IDEMPOTENCY_RETENTION_SECONDS,
      deadline,
    );
    return { pet, replayed: false };
  } catch (error) {
    // These mean another request holds the key: there is nothing of ours to clean up.
    if (!(error instanceof IdempotencyKeyInProgressError || error instanceof IdempotencyKeyReusedError)) {
      // Past the deadline this fails at once: the lock lapses by itself, as after a crash.
      await cleanUp(deps.idempotency, scope, lockToken, insertTried, deadline).catch(() => {
        // The store is failing too; our lock lapses by itself and the client sees the original error.
      });
    }
    throw error;
  }
}

/**
 * After a failure, forget the record if no pet can exist for it, so the key is free at once;
 * otherwise keep the reserved id and only release the lock, so a retry resumes with that id.
 * Both writes are conditional on our token: a record we never acquired is left alone, even when
 * the failure happened while acquiring it (a write whose answer was lost may still be ours).
 */
async function cleanUp(
  store: IdempotencyStore,
  scope: IdempotencyScope,
  lockToken: string,
  insertTried: boolean,
  deadline: Deadline | undefined,
): Promise<void> {
  if (!insertTried && (await store.forget(scope, lockToken, deadline))) return;
  await store.releaseLock(scope, lockToken, deadline);
}

async function acquire(
  deps: IdempotentCreateDependencies,
  scope: IdempotencyScope,
  requestHash: string,
  lockToken: string,
  deadline: Deadline | undefined,
): Promise<Lease> {
  for (let round = 0; round < MAX_ACQUIRE_ROUNDS; round += 1) {
    const now = deps.clock();
    const lockedUntilMs = now.getTime() + IDEMPOTENCY_LOCK_MS;
    const begun = await deps.idempotency.begin(
      scope,
      { requestHash, lockToken, lockedUntilMs, expiresAtSeconds: epochSeconds(now) + IDEMPOTENCY_RETENTION_SECONDS },
      now,
      deadline,
    );
    if (begun.acquired) return { kind: "held" };
    const current = begun.current;
    if (!current || isExpired(current, now)) continue;
    if (current.requestHash !== requestHash) throw new IdempotencyKeyReusedError();
    if (current.state === "completed") return { kind: "replay", pet: current.pet };
    if (current.lockToken === lockToken) return { kind: "held", ...optionalPetId(current.petId) };
    if (current.lockedUntilMs > now.getTime()) throw new IdempotencyKeyInProgressError(IN_PROGRESS_RETRY_AFTER_SECONDS);
    // The holder crashed, or failed after trying its insert and released the lock.
    const taken = await deps.idempotency.takeOver(
      scope,
      current.lockToken,
      { lockToken, lockedUntilMs },
      now,
      deadline,
    );
    if (taken.acquired) return { kind: "held", ...optionalPetId(taken.petId) };
  }
  throw new IdempotencyKeyInProgressError(IN_PROGRESS_RETRY_AFTER_SECONDS);
}

function optionalPetId(petId: number | undefined): { petId?: number } {
  return petId === undefined ? {} : { petId };
}
