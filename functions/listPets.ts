import { apiHandler, type Operation } from "../lib/http/apiHandler";
import { parseListPetsQuery } from "../lib/http/parameters";
import { nextPageLink } from "../lib/http/resourceLinks";
import type { Dependencies } from "../lib/http/types";
import { collectionOf } from "../lib/pets/collection";
import { listPets } from "../lib/pets/service";
import { routes } from "../lib/routes";
import { runtimeDependencies } from "../lib/runtime";

export const listPetsOperation =
  (deps: Dependencies): Operation =>
  async (event) => {
    const query = parseListPetsQuery(event);
    const { pets, nextCursor } = await listPets(
      deps.pets,
      { ...query, collection: collectionOf(event.principal) },
      event.deadline,
    );
    const headers: Record<string, string> = {};
    if (nextCursor) headers.Link = nextPageLink({ limit: query.limit, status: query.status, cursor: nextCursor });
    return { statusCode: 200, headers, body: pets };
  };

export const createHandler = (deps: Dependencies) => apiHandler(routes.listPets, deps, listPetsOperation(deps));

export const handler = createHandler(runtimeDependencies);
