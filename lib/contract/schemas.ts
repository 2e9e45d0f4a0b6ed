/**
 * The one definition of the API's data shapes. Request validation (./validate.ts), the
 * TypeScript types below and the OpenAPI document are all derived from these objects, so a
 * constraint changed here changes everywhere at once.
 */
import type { FromSchema } from "json-schema-to-ts";

/** 2^53 − 1: the largest integer every JSON client represents exactly. */
export const MAX_SAFE_ID = Number.MAX_SAFE_INTEGER;

export const petStatusSchema = {
  type: "string",
  enum: ["available", "pending", "sold"],
  description: "Availability status of the animal.",
} as const;

const idSchema = {
  type: "integer",
  format: "int64",
  minimum: 1,
  maximum: MAX_SAFE_ID,
} as const;

const nameSchema = {
  type: "string",
  minLength: 1,
  maxLength: 100,
  // At least one character that is not white space.
  pattern: "\\S",
  description: "The animal's name: 1 to 100 characters, not only white space.",
} as const;

export const newPetSchema = {
  type: "object",
  description: "An animal to add. The service assigns `id`; sending it is an error.",
  properties: {
    name: nameSchema,
    categoryId: { ...idSchema, description: "Identifier of the category." },
    status: { ...petStatusSchema, default: "available" },
  },
  required: ["name", "categoryId"],
  additionalProperties: false,
} as const;

export const petSchema = {
  type: "object",
  description: "An animal in the store.",
  properties: {
    id: { ...idSchema, description: "Unique identifier, assigned by the service." },
    name: nameSchema,
    categoryId: { ...idSchema, description: "Identifier of the category." },
    status: petStatusSchema,
  },
  // The service always stores a status (default `available`), so it always returns one.
  required: ["id", "name", "categoryId", "status"],
  additionalProperties: false,
} as const;

export const errorCodes = [
  "invalid_request",
  "unauthorized",
  "forbidden",
  "insufficient_scope",
  "not_found",
  "method_not_allowed",
  "gone",
  "payload_too_large",
  "unsupported_media_type",
  "idempotency_key_reused",
  "idempotency_key_in_progress",
  "too_many_requests",
  "internal_error",
  "service_unavailable",
] as const;

export const errorSchema = {
  type: "object",
  description: "The body of every non-2xx response.",
  properties: {
    code: { type: "string", enum: errorCodes, description: "Machine-readable error code." },
    message: { type: "string", description: "Human-readable description." },
    status: {
      type: "integer",
      format: "int32",
      minimum: 400,
      maximum: 599,
      description: "The HTTP status code of the response.",
    },
  },
  required: ["code", "message", "status"],
  additionalProperties: false,
} as const;

/** Query and path parameters, as the values they must denote once parsed. */
export const listLimitSchema = {
  type: "integer",
  format: "int32",
  minimum: 1,
  maximum: 100,
  default: 20,
  description: "Maximum number of animals returned (a decimal integer, without leading zeros).",
} as const;

export const petIdParamSchema = {
  ...idSchema,
  description: "Identifier of the animal (a decimal integer, without leading zeros).",
} as const;

export const cursorSchema = {
  type: "string",
  minLength: 1,
  maxLength: 512,
  description:
    'Opaque position from a previous page\'s `Link: rel="next"`. Bound to the `status` filter it was issued for.',
} as const;

/** Body size limit of POST /pets, in bytes. */
export const MAX_BODY_BYTES = 16 * 1024;

/** Length limits of the Idempotency-Key header. */
export const idempotencyKeySchema = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  description: "Client-chosen key that makes a retried create safe; scoped to the API key, kept at least 24 hours.",
} as const;

export type PetStatus = FromSchema<typeof petStatusSchema>;
export type NewPet = FromSchema<typeof newPetSchema>;
export type Pet = FromSchema<typeof petSchema>;
export type ErrorBody = FromSchema<typeof errorSchema>;
export type ErrorCode = (typeof errorCodes)[number];

/**
 * The codes each status answers with (docs/api.md, "Errors"): one each, except 403, which is
 * `forbidden` from the edge firewall or `insufficient_scope` from the API (a key whose scope does not
 * cover the operation). Each code has exactly one status.
 */
export const errorCodesByStatus = {
  400: ["invalid_request"],
  401: ["unauthorized"],
  403: ["forbidden", "insufficient_scope"],
  404: ["not_found"],
  405: ["method_not_allowed"],
  409: ["idempotency_key_in_progress"],
  410: ["gone"],
  413: ["payload_too_large"],
  415: ["unsupported_media_type"],
  422: ["idempotency_key_reused"],
  429: ["too_many_requests"],
  500: ["internal_error"],
  503: ["service_unavailable"],
} as const satisfies Record<number, readonly [ErrorCode, ...ErrorCode[]]>;
export type ErrorStatus = keyof typeof errorCodesByStatus;

export const petStatuses: readonly PetStatus[] = petStatusSchema.enum;
export const DEFAULT_PET_STATUS: PetStatus = newPetSchema.properties.status.default;
