/** Reads query and path parameters against the contract's parameter schemas. */
import { cursorSchema, listLimitSchema, type PetStatus, petIdParamSchema, petStatusSchema } from "../contract/schemas";
import { assertMatches, parseIntegerParameter } from "../contract/validate";
import { ValidationError } from "../errors";
import type { ListPetsQuery } from "../pets/service";
import type { ApiEvent } from "./types";

/** A query parameter given at most once; a repeated one is ambiguous and rejected. */
function singleQueryParameter(event: ApiEvent, name: string): string | undefined {
  const values = event.multiValueQueryStringParameters?.[name];
  if (values && values.length > 1) throw new ValidationError(name, "must be given at most once");
  return values?.[0] ?? event.queryStringParameters?.[name] ?? undefined;
}

/** The listing's query parameters; whose pets it lists comes from the caller (lib/pets/collection.ts). */
export function parseListPetsQuery(event: ApiEvent): Omit<ListPetsQuery, "collection"> {
  const rawLimit = singleQueryParameter(event, "limit");
  const rawStatus = singleQueryParameter(event, "status");
  const rawCursor = singleQueryParameter(event, "cursor");
  const limit =
    rawLimit === undefined ? listLimitSchema.default : parseIntegerParameter(listLimitSchema, rawLimit, "limit");
  if (rawStatus !== undefined) assertMatches(petStatusSchema, rawStatus, "status");
  if (rawCursor !== undefined) assertMatches(cursorSchema, rawCursor, "cursor");
  return { limit, status: (rawStatus as PetStatus | undefined) ?? null, cursor: rawCursor ?? null };
}

export function parsePetId(event: ApiEvent): number {
  const raw = event.pathParameters?.petId ?? "";
  return parseIntegerParameter(petIdParamSchema, raw, "petId");
}
