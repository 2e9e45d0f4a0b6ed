import { type NewPet, newPetSchema } from "../lib/contract/schemas";
import { assertMatches } from "../lib/contract/validate";
import { apiHandler } from "../lib/http/apiHandler";
import type { Dependencies } from "../lib/http/types";
import { createPet } from "../lib/pets/service";
import { API_BASE_PATH, routes } from "../lib/routes";
import { runtimeDependencies } from "../lib/runtime";

export const createHandler = (deps: Dependencies) =>
  apiHandler(routes.createPet, deps, async (event) => {
    assertMatches(newPetSchema, event.body, "body");
    const pet = await createPet(deps.pets, event.body as NewPet);
    return { statusCode: 201, headers: { Location: `${API_BASE_PATH}/pets/${pet.id}` }, body: pet };
  });

export const handler = createHandler(runtimeDependencies);
