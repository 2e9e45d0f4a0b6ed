/**
 * The URLs the API writes into its answers' headers, in one place: the handlers write them and the
 * OpenAPI document's examples (lib/contract/examples.ts) show them, so they cannot drift apart.
 * Paths, not absolute URLs: the same answer is right behind API Gateway's own host, a custom domain
 * and `npm start`.
 */
import { API_BASE_PATH, routes } from "../routes";

/** The `Location` of a created pet: `/v1/pets/{id}`. */
export function petLocation(petId: number): string {
  return `${API_BASE_PATH}${routes.getPet.path.replace("{petId}", String(petId))}`;
}

/** The `Link` to the page after this one (RFC 8288): same `limit` and `status`, the new `cursor`. */
export function nextPageLink(page: { limit: number; status?: string | null | undefined; cursor: string }): string {
  const query = new URLSearchParams({ limit: String(page.limit) });
  if (page.status) query.set("status", page.status);
  query.set("cursor", page.cursor);
  return `<${API_BASE_PATH}${routes.listPets.path}?${query}>; rel="next"`;
}
