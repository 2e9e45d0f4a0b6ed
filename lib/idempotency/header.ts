import { idempotencyKeySchema } from "../contract/schemas";
import { ValidationError } from "../errors";
import type { ChainHeader, ChainHeaders, ChainMultiValueHeaders } from "../http/types";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const headerName = "idempotency-key" satisfies ChainHeader;
const { minLength, maxLength } = idempotencyKeySchema;

/**
 * The optional Idempotency-Key of a request, from the headers the chain picked (lower-cased).
 * Length is counted in Unicode code points, as JSON Schema's maxLength (and `name`) are.
 */
export function parseIdempotencyKey(
  headers: ChainHeaders | null | undefined,
  multiValueHeaders?: ChainMultiValueHeaders | null,
): string | undefined {
  const values = multiValueHeaders?.[headerName];
  if (values && values.length > 1) throw new ValidationError(IDEMPOTENCY_KEY_HEADER, "must be given at most once");
  const value = headers?.[headerName];
  if (value === undefined) return undefined;
  const length = [...value].length;
  if (length < minLength || length > maxLength) {
    throw new ValidationError(IDEMPOTENCY_KEY_HEADER, `must be ${minLength} to ${maxLength} characters long`);
  }
  return value;
}
