import { apiHandler, type Operation } from "../lib/http/apiHandler";
import { parseListPetsQuery } from "../lib/http/parameters";
import type { Dependencies } from "../lib/http/types";
import { collectionOf } from "../lib/pets/collection";
import { listPets } from "../lib/pets/service";
import { API_BASE_PATH, routes } from "../lib/routes";
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
    if (nextCursor) {
      const next = new URLSearchParams({ limit: String(query.limit) });
      if (query.status) next.set("status", query.status);
      next.set("cursor", nextCursor);
      headers.Link = `<${API_BASE_PATH}${routes.listPets.path}?${next}>; rel="next"`;
    }
    return { statusCode: 200, headers, body: pets };
  };

export const createHandler = (deps: Dependencies) => apiHandler(routes.listPets, deps, listPetsOperation(deps));

export const handler = createHandler(runtimeDependencies);
