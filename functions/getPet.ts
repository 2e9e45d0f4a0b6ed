import { apiHandler, type Operation } from "../lib/http/apiHandler";
import { parsePetId } from "../lib/http/parameters";
import type { Dependencies } from "../lib/http/types";
import { collectionOf } from "../lib/pets/collection";
import { getPet } from "../lib/pets/service";
import { routes } from "../lib/routes";
import { runtimeDependencies } from "../lib/runtime";

export const getPetOperation =
  (deps: Dependencies): Operation =>
  async (event) => ({
    statusCode: 200,
    body: await getPet(deps.pets, parsePetId(event), collectionOf(event.principal), event.deadline),
  });

export const createHandler = (deps: Dependencies) => apiHandler(routes.getPet, deps, getPetOperation(deps));

export const handler = createHandler(runtimeDependencies);
