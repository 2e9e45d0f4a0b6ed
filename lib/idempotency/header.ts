import { idempotencyKeySchema } from "../contract/schemas";
import { ValidationError } from "../errors";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
const { minLength, maxLength } = idempotencyKeySchema;

/**
 * The optional Idempotency-Key of a request, from headers already lower-cased by the header
 * normaliser. Length is counted in Unicode code points, as JSON Schema's maxLength (and `name`) are.
 */
export function parseIdempotencyKey(
  headers: Record<string, string | undefined> | null | undefined,
  multiValueHeaders?: Record<string, string[] | undefined> | null,
): string | undefined {
  const name = IDEMPOTENCY_KEY_HEADER.toLowerCase();
  const values = multiValueHeaders?.[name];
  if (values && values.length > 1) throw new ValidationError(IDEMPOTENCY_KEY_HEADER, "must be given at most once");
  const value = headers?.[name];
  if (value === undefined) return undefined;
  const length = [...value].length;
  if (length < minLength || length > maxLength) {
    throw new ValidationError(IDEMPOTENCY_KEY_HEADER, `must be ${minLength} to ${maxLength} characters long`);
  }
  return value;
}
