import { type NewPet, newPetSchema } from "../lib/contract/schemas";
import { assertMatches } from "../lib/contract/validate";
import { apiHandler, type Operation } from "../lib/http/apiHandler";
import { petLocation } from "../lib/http/resourceLinks";
import type { Dependencies } from "../lib/http/types";
import { DynamoIdempotencyStore } from "../lib/idempotency/dynamoStore";
import { parseIdempotencyKey } from "../lib/idempotency/header";
import { IDEMPOTENT_REPLAYED_HEADER } from "../lib/idempotency/replayed";
import type { IdempotencyStore } from "../lib/idempotency/store";
import { collectionOf } from "../lib/pets/collection";
import { createPetForRequest } from "../lib/pets/idempotentCreate";
import { routes } from "../lib/routes";
import { runtimeDependencies, runtimeTable } from "../lib/runtime";

export type CreatePetDependencies = Dependencies & { readonly idempotency: IdempotencyStore };

export const createPetOperation =
  (deps: CreatePetDependencies): Operation =>
  async (event) => {
    const key = parseIdempotencyKey(event.headers, event.multiValueHeaders);
    assertMatches(newPetSchema, event.body, "body");
    const { pet, replayed } = await createPetForRequest(
      deps,
      event.body as NewPet,
      { apiKeyId: event.principal?.keyId, key, collection: collectionOf(event.principal) },
      event.deadline,
    );
    return {
      statusCode: 201,
      headers: {
        Location: petLocation(pet.id),
        ...(replayed ? { [IDEMPOTENT_REPLAYED_HEADER]: "true" } : {}),
      },
      body: pet,
    };
  };

export const createHandler = (deps: CreatePetDependencies) =>
  apiHandler(routes.createPet, deps, createPetOperation(deps));

export const handler = createHandler({
  ...runtimeDependencies,
  idempotency: new DynamoIdempotencyStore(runtimeTable.client, runtimeTable.tableName),
});
