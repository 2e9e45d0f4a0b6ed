/**
 * Whose pets a request sees. Every client key shares one collection: the pet store. A synthetic
 * key (the project's own checks: the deployed synthetic check, the pipeline's smoke runs, any key
 * made with `npm run keys -- create --synthetic`) has a collection of its own: its requests go
 * through everything a client's do (authentication, validation, id allocation from the one
 * counter, the conditional write, get, the listing with its filter and paging), but what it
 * creates is never read by another key's request, and expires by itself (the table's TTL).
 *
 * A synthetic key sees only its own pets, not the clients': what a check creates it must find
 * again, and a key that lives in CI secrets has no business reading clients' data. How the
 * collections are stored: lib/db/table.ts.
 */
import type { Principal } from "../auth/apiKeys";

export type PetCollection = { readonly kind: "shared" } | { readonly kind: "synthetic"; readonly keyId: string };

export const SHARED_PETS: PetCollection = { kind: "shared" };

/**
 * How long a synthetic key's pet is kept: long enough for any check to find its pets again, short
 * enough that a check's own listing stays small. From then on no answer shows it; DynamoDB's TTL
 * "typically deletes expired items within two days of expiration"
 * (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html).
 */
export const SYNTHETIC_PET_RETENTION_SECONDS = 60 * 60;

/** The collection of the key that made a request; every pet operation runs behind bearerAuth. */
export function collectionOf(principal: Principal | undefined): PetCollection {
  if (principal === undefined) throw new Error("A pet operation ran without a principal: is bearerAuth in the chain?");
  return principal.synthetic ? { kind: "synthetic", keyId: principal.keyId } : SHARED_PETS;
}
