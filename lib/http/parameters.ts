/** Reads query and path parameters against the contract's parameter schemas. */
import { cursorSchema, listLimitSchema, type PetStatus, petIdParamSchema, petStatusSchema } from "../contract/schemas";
import { assertMatches, parseIntegerParameter, type Schema } from "../contract/validate";
import { ValidationError } from "../errors";
import type { ListPetsQuery } from "../pets/service";
import type { ApiEvent } from "./types";

/** Digits after a leading zero (`05`, `007`): the contract refuses them, so each number has one spelling. */
const LEADING_ZERO = /^0[0-9]+$/;

/**
 * Parses an integer parameter; one written with leading zeros is refused with that reason (and the
 * way to write it, when that is in range), since the range alone would not tell the sender why.
 */
function integerParameter(schema: Schema, raw: string, target: string): number {
  if (!LEADING_ZERO.test(raw)) return parseIntegerParameter(schema, raw, target);
  const canonical = raw.replace(/^0+(?=[0-9])/, "");
  try {
    parseIntegerParameter(schema, canonical, target);
  } catch (error) {
    // Out of range even without the zeros (`00`, `0101`): both reasons, the range first.
    if (error instanceof ValidationError) {
      throw new ValidationError(target, `${error.problem}, written without leading zeros`);
    }
    throw error;
  }
  throw new ValidationError(target, `must be written without leading zeros, e.g. ${canonical}`);
}

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
  const limit = rawLimit === undefined ? listLimitSchema.default : integerParameter(listLimitSchema, rawLimit, "limit");
  if (rawStatus !== undefined) assertMatches(petStatusSchema, rawStatus, "status");
  if (rawCursor !== undefined) assertMatches(cursorSchema, rawCursor, "cursor");
  return { limit, status: (rawStatus as PetStatus | undefined) ?? null, cursor: rawCursor ?? null };
}

export function parsePetId(event: ApiEvent): number {
  const raw = event.pathParameters?.petId ?? "";
  return integerParameter(petIdParamSchema, raw, "petId");
}
