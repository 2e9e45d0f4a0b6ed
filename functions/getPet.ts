import { apiHandler } from "../lib/http/apiHandler";
import { parsePetId } from "../lib/http/parameters";
import type { Dependencies } from "../lib/http/types";
import { getPet } from "../lib/pets/service";
import { routes } from "../lib/routes";
import { runtimeDependencies } from "../lib/runtime";

export const createHandler = (deps: Dependencies) =>
  apiHandler(routes.getPet, deps, async (event) => {
    const pet = await getPet(deps.pets, parsePetId(event));
    return { statusCode: 200, body: pet };
  });

export const handler = createHandler(runtimeDependencies);
