import { describe, expect, it } from "vitest";
import type { NewPet } from "../../lib/contract/schemas";
import { IdempotencyKeyInProgressError } from "../../lib/errors";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { canonicalJson, requestHash } from "../../lib/idempotency/requestHash";
import { SHARED_PETS } from "../../lib/pets/collection";
import { createPetIdempotently, IDEMPOTENCY_LOCK_MS } from "../../lib/pets/idempotentCreate";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";

describe("the request hash", () => {
  it("ignores key order at every level", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 0, y: 1 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":1,"z":0}]},"b":1}',
    );
    expect(requestHash({ name: "Rex", categoryId: 1 })).toBe(requestHash({ categoryId: 1, name: "Rex" }));
  });

  it("tells apart bodies that differ in any value", () => {
    const hashes = [
      { name: "Rex", categoryId: 1 },
      { name: "Rex", categoryId: 2 },
      { name: "Rex ", categoryId: 1 },
      { name: "Rex", categoryId: 1, status: "available" },
    ].map(requestHash);

    expect(new Set(hashes).size).toBe(hashes.length);
  });
});

describe("the idempotent create protocol on the in-memory store", () => {
  const scope = { apiKeyId: "key_a", key: "k" };
  // As parsed from a body without status, which the type (built with the default) does not model.
  const newPet = { name: "Rex", categoryId: 1 } as NewPet;

  function setup(startMs = Date.parse("2027-01-01T00:00:00Z")) {
    let now = startMs;
    const deps = {
      pets: new InMemoryPetRepository(),
      idempotency: new InMemoryIdempotencyStore(),
      clock: () => new Date(now),
    };
    return { deps, advance: (ms: number) => (now += ms) };
  }

  it("resumes with the reserved id after its holder failed after inserting", async () => {
    const { deps } = setup();
    const insert = deps.pets.insert.bind(deps.pets);
    deps.pets.insert = async (pet, collection) => {
      await insert(pet, collection);
      throw new Error("answer lost");
    };
    await expect(createPetIdempotently(deps, scope, newPet, SHARED_PETS)).rejects.toThrow("answer lost");
    deps.pets.insert = insert;

    const retried = await createPetIdempotently(deps, scope, newPet, SHARED_PETS);

    expect(retried.pet.id).toBe(1);
    expect([...deps.pets.pets.keys()]).toEqual([1]);
  });

  it("answers in progress while a crashed holder's lock is live, and takes over once it lapses", async () => {
    const { deps, advance } = setup();
    await deps.idempotency.begin(
      scope,
      {
        requestHash: requestHash(newPet),
        lockToken: "crashed",
        lockedUntilMs: deps.clock().getTime() + 1000,
        expiresAtSeconds: 2e9,
      },
      deps.clock(),
    );

    await expect(createPetIdempotently(deps, scope, newPet, SHARED_PETS)).rejects.toBeInstanceOf(
      IdempotencyKeyInProgressError,
    );
    advance(IDEMPOTENCY_LOCK_MS);
    const taken = await createPetIdempotently(deps, scope, newPet, SHARED_PETS);

    expect(taken.replayed).toBe(false);
    expect(deps.pets.pets.size).toBe(1);
  });

  it("never deletes a record another request holds", async () => {
    const { deps } = setup();
    await deps.idempotency.begin(
      scope,
      {
        requestHash: requestHash(newPet),
        lockToken: "holder",
        lockedUntilMs: Number.MAX_SAFE_INTEGER,
        expiresAtSeconds: 2e9,
      },
      deps.clock(),
    );

    const forgotten = await deps.idempotency.forget(scope, "someone else");
    await deps.idempotency.releaseLock(scope, "someone else");

    expect(forgotten).toBe(false);
    expect(deps.idempotency.records.size).toBe(1);
    await expect(createPetIdempotently(deps, scope, newPet, SHARED_PETS)).rejects.toBeInstanceOf(
      IdempotencyKeyInProgressError,
    );
  });
});
