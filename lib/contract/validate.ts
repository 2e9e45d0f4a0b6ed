/**
 * Checks a value against one of the schemas in ./schemas.ts and throws a ValidationError naming
 * the first offending field. It interprets exactly the JSON Schema keywords those schemas use, so
 * nothing is compiled at cold start; the contract tests check it agrees with a full validator.
 */
import { ValidationError } from "../errors";

export interface Schema {
  readonly type?: "object" | "string" | "integer";
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean;
  readonly enum?: readonly string[];
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly minimum?: number;
  readonly maximum?: number;
}

const patternProblems: Readonly<Record<string, string>> = {
  "\\S": "must not be only white space",
};
const compiledPatterns = new Map<string, RegExp>();

function matches(pattern: string, value: string): boolean {
  let regex = compiledPatterns.get(pattern);
  if (!regex) {
    regex = new RegExp(pattern, "u");
    compiledPatterns.set(pattern, regex);
  }
  return regex.test(value);
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Throws ValidationError(target, problem) unless `value` satisfies `schema`. */
export function assertMatches(schema: Schema, value: unknown, target: string): void {
  if (schema.type === "object") {
    if (!isPlainObject(value)) throw new ValidationError(target, `must be a JSON object, not ${typeName(value)}`);
    const properties = schema.properties ?? {};
    if (schema.additionalProperties === false) {
      for (const field of Object.keys(value)) {
        if (!Object.hasOwn(properties, field)) throw new ValidationError(field, "is not an accepted field");
      }
    }
    for (const field of schema.required ?? []) {
      if (!Object.hasOwn(value, field)) throw new ValidationError(field, "is required");
    }
    for (const [field, fieldSchema] of Object.entries(properties)) {
      if (Object.hasOwn(value, field)) assertMatches(fieldSchema, value[field], field);
    }
    return;
  }

  if (schema.enum) {
    if (typeof value !== "string" || !schema.enum.includes(value)) {
      throw new ValidationError(target, `must be one of: ${schema.enum.join(", ")}`);
    }
    return;
  }

  if (schema.type === "string") {
    // Lone surrogates cannot be stored as UTF-8 and would not round-trip.
    if (typeof value !== "string" || !value.isWellFormed()) {
      throw new ValidationError(target, "must be a string of valid Unicode text");
    }
    const length = [...value].length; // JSON Schema counts code points, not UTF-16 units.
    const min = schema.minLength ?? 0;
    const max = schema.maxLength ?? Number.POSITIVE_INFINITY;
    if (length < min || length > max) throw new ValidationError(target, `must be ${min} to ${max} characters long`);
    if (schema.pattern !== undefined && !matches(schema.pattern, value)) {
      throw new ValidationError(target, patternProblems[schema.pattern] ?? `must match ${schema.pattern}`);
    }
    return;
  }

  if (schema.type === "integer") {
    const min = schema.minimum ?? Number.MIN_SAFE_INTEGER;
    const max = schema.maximum ?? Number.MAX_SAFE_INTEGER;
    if (typeof value !== "number" || !Number.isInteger(value) || Object.is(value, -0) || value < min || value > max) {
      throw new ValidationError(target, `must be an integer from ${min} to ${max}`);
    }
  }
}

const DECIMAL_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

/** Parses a query or path parameter that must be a decimal integer within the schema's range. */
export function parseIntegerParameter(schema: Schema, raw: string, target: string): number {
  const value = DECIMAL_INTEGER.test(raw) ? Number(raw) : Number.NaN;
  assertMatches(schema, value, target);
  return value;
}
