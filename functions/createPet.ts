import { type NewPet, newPetSchema } from "../lib/contract/schemas";
import { assertMatches } from "../lib/contract/validate";
import { apiHandler } from "../lib/http/apiHandler";
import type { Dependencies } from "../lib/http/types";
import { parseIdempotencyKey } from "../lib/idempotency/header";
import { InMemoryIdempotencyStore } from "../lib/idempotency/inMemoryStore";
import { createPetForRequest } from "../lib/pets/idempotentCreate";
import { API_BASE_PATH, routes } from "../lib/routes";
import { runtimeDependencies } from "../lib/runtime";

export const createHandler = (deps: Dependencies) => {
  const createDeps = { ...deps, idempotency: deps.idempotency ?? new InMemoryIdempotencyStore() };
  return apiHandler(routes.createPet, deps, async (event) => {
    const key = parseIdempotencyKey(event.headers, event.multiValueHeaders);
    assertMatches(newPetSchema, event.body, "body");
    const { pet, replayed } = await createPetForRequest(createDeps, event.body as NewPet, {
      apiKeyId: event.principal?.keyId,
      key,
    });
    return {
      statusCode: 201,
      headers: {
        Location: `${API_BASE_PATH}/pets/${pet.id}`,
        ...(replayed ? { "Idempotent-Replayed": "true" } : {}),
      },
      body: pet,
    };
  });
};

export const handler = createHandler(runtimeDependencies);
