/**
 * Examples for every parameter, request body and response of the OpenAPI document, so tools that
 * send or mock requests from it (Postman, Prism, Redoc's samples) use real values.
 *
 * Error examples are not written out: each is what the API's own code answers (the error classes
 * through the one error mapping, the edge answers from lib/http/edgeErrors.ts), so an example cannot
 * show a message the API does not send. The ids are those a new, empty store hands out: creating the
 * example pet there makes the example `petId` real, and the example cursor is one the API issues
 * (cursors carry a fixed integrity key, see lib/pets/cursor.ts).
 */
import {
  GoneError,
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  MethodNotAllowedError,
  PayloadTooLargeError,
  PetNotFoundError,
  ServiceUnavailableError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
} from "../errors";
import { type EdgeError, edgeErrors } from "../http/edgeErrors";
import { toErrorResult } from "../http/middleware/errorResponse";
import { encodeCursor } from "../pets/cursor";
import { type OperationId, routes } from "../routes";
import type { ErrorStatus } from "./openapi";
import {
  type ErrorBody,
  listLimitSchema,
  MAX_BODY_BYTES,
  type NewPet,
  newPetSchema,
  type Pet,
  petIdParamSchema,
} from "./schemas";
import { assertMatches, parseIntegerParameter } from "./validate";

/** An OpenAPI Example Object. */
export interface Example<T> {
  readonly summary: string;
  readonly value: T;
}

export const newPetExample: NewPet = { name: "Rex", categoryId: 1, status: "available" };
/** The pet a new store answers to creating `newPetExample`: ids start at 1. */
export const petExample: Pet = { id: 1, ...newPetExample, status: "available" };
export const petsExample: readonly Pet[] = [
  petExample,
  { id: 2, name: "Bella", categoryId: 2, status: "available" },
  { id: 3, name: "Tom", categoryId: 1, status: "pending" },
];

/** One value per parameter of the document, by parameter name. */
export const parameterExamples = {
  limit: listLimitSchema.default,
  status: "available",
  /** The cursor of the page after the example pet, for `status=available`. */
  cursor: encodeCursor({ afterId: petExample.id, status: "available" }),
  "Idempotency-Key": "5f0c6b52-3d0e-4a8b-9c61-2b7e4d1a9f03",
  petId: petExample.id,
} as const;
export type ParameterName = keyof typeof parameterExamples;

/** An edge answer's body, in the order the API writes its own. */
function edgeAnswer(error: EdgeError): ErrorBody {
  return { code: error.code, message: error.message, status: error.status };
}

/** What the API answers to `error`: the body of its one error mapping. */
function answerTo(error: unknown): ErrorBody {
  return toErrorResult(error).body as ErrorBody;
}

/** The error `action` throws, answered as the API answers it. */
function answerWhen(action: () => unknown): ErrorBody {
  try {
    action();
  } catch (error) {
    return answerTo(error);
  }
  throw new Error("an error example's action did not fail");
}

const allowedMethods = (operationId: OperationId) =>
  Object.values(routes)
    .filter((route) => route.path === routes[operationId].path)
    .map((route) => route.method);

/** Every error answer an operation documents, with one or more real examples of its body. */
export function errorExamples(operationId: OperationId, status: ErrorStatus): Record<string, Example<ErrorBody>> {
  switch (status) {
    case 400:
      if (operationId === "listPets")
        return {
          badLimit: {
            summary: "`limit` out of range",
            value: answerWhen(() => parseIntegerParameter(listLimitSchema, "0", "limit")),
          },
        };
      if (operationId === "getPet")
        return {
          badPetId: {
            summary: "`petId` not a number",
            value: answerWhen(() => parseIntegerParameter(petIdParamSchema, "rex", "petId")),
          },
        };
      return {
        missingField: {
          summary: "A required field is missing",
          value: answerWhen(() => assertMatches(newPetSchema, { name: newPetExample.name }, "body")),
        },
      };
    case 401:
      return {
        missingKey: { summary: "No `Authorization` header", value: answerTo(new UnauthorizedError(false)) },
        invalidKey: { summary: "A key that is unknown or revoked", value: answerTo(new UnauthorizedError(true)) },
      };
    case 403:
      return { firewall: { summary: "Refused by the edge firewall", value: edgeAnswer(edgeErrors.forbidden) } };
    case 404:
      return { noSuchPet: { summary: "No animal has this id", value: answerTo(new PetNotFoundError(42)) } };
    case 405:
      return {
        otherMethod: {
          summary: "A method the path does not have",
          value: answerTo(new MethodNotAllowedError("DELETE", allowedMethods(operationId))),
        },
      };
    case 409:
      return {
        inFlight: {
          summary: "The first request with this key is still running",
          value: answerTo(new IdempotencyKeyInProgressError(1)),
        },
      };
    case 410:
      return {
        sunset: {
          summary: "Called after its sunset",
          value: answerTo(new GoneError(routes.getPet.deprecation.successor)),
        },
      };
    case 413:
      return {
        service: { summary: "Refused by the service", value: answerTo(new PayloadTooLargeError(MAX_BODY_BYTES)) },
        firewall: { summary: "Refused by the edge firewall", value: edgeAnswer(edgeErrors.payloadTooLarge) },
      };
    case 415:
      return {
        notJson: { summary: "A body that is not JSON", value: answerTo(new UnsupportedMediaTypeError("text/plain")) },
      };
    case 422:
      return {
        otherBody: { summary: "The key was used with another body", value: answerTo(new IdempotencyKeyReusedError()) },
      };
    case 429:
      return { firewall: { summary: "The edge firewall's rate limit", value: edgeAnswer(edgeErrors.tooManyRequests) } };
    case 500:
      return { unexpected: { summary: "An unexpected fault", value: answerTo(new Error("an unexpected fault")) } };
    case 503:
      return {
        storeUnavailable: { summary: "The data store is unavailable", value: answerTo(new ServiceUnavailableError(1)) },
      };
  }
}
