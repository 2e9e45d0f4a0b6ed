import type { Principal } from "../../lib/auth/apiKeys";
import type { ApiKeyVerifier } from "../../lib/auth/verifier";
import type { Dependencies } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { InMemoryPetRepository } from "../../lib/pets/inMemoryRepository";

/** A verifier that knows exactly one token, for unit tests that are not about keys. */
export function singleKeyVerifier(
  validToken: string,
  principal: Principal = { keyId: "key_test", scope: "write" },
): ApiKeyVerifier {
  return { verify: async (token) => (token === validToken ? principal : { refused: "invalid" }) };
}

export function fakeDependencies(
  validToken: string,
  overrides: Partial<Dependencies> = {},
): Dependencies & { pets: InMemoryPetRepository; idempotency: InMemoryIdempotencyStore } {
  return {
    pets: new InMemoryPetRepository(),
    idempotency: new InMemoryIdempotencyStore(),
    keys: singleKeyVerifier(validToken),
    clock: () => new Date("2027-01-01T00:00:00Z"),
    ...overrides,
  } as Dependencies & { pets: InMemoryPetRepository; idempotency: InMemoryIdempotencyStore };
}
