import { ValidationError } from "../errors";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * The optional Idempotency-Key of a request, from headers already lower-cased by the header
 * normaliser. Length is counted in Unicode code points, like `name`.
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
  if (length < 1 || length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new ValidationError(IDEMPOTENCY_KEY_HEADER, `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters long`);
  }
  return value;
}
