/**
 * Examples for every parameter, request body and response of the OpenAPI document, so tools that
 * send or mock requests from it (Postman, Prism, Redoc's samples) use real values.
 *
 * Error examples are not written out: each is what the API's own code answers (the error classes
 * through the one error mapping, the edge answers from lib/http/edgeErrors.ts), so an example cannot
 * show a message the API does not send, and the headers of those answers (Retry-After,
 * WWW-Authenticate, Allow) are the response headers' examples. The ids are those a new, empty store
 * hands out: creating the example pet there makes the example `petId` real, and the example cursors
 * are ones the API issues (cursors carry a fixed integrity key, see lib/pets/cursor.ts).
 */

import { keyScopes, scopeAllows } from "../auth/apiKeys";
import type { ApiKeyVerifier, KeyVerdict } from "../auth/verifier";
import { RETRY_AFTER_SECONDS } from "../db/storeErrors";
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
import { bearerAuth } from "../http/middleware/bearerAuth";
import { toErrorResult } from "../http/middleware/errorResponse";
import { nextPageLink, petLocation } from "../http/resourceLinks";
import type { ApiEvent } from "../http/types";
import { encodeCursor } from "../pets/cursor";
import { IN_PROGRESS_RETRY_AFTER_SECONDS } from "../pets/idempotentCreate";
import { type OperationId, type RouteDefinition, routes } from "../routes";
import {
  type ErrorBody,
  type ErrorStatus,
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

/** A request id as API Gateway (`requestContext.requestId`) and `npm start` give them: a UUID. */
export const requestIdExample = "9b2f4c1e-6a3d-4f8e-b0c7-5d1e2a3b4c6f";

/**
 * The `Link` of `petsExample` listed as a full page (`limit` its length) with more animals after
 * it: the next page, as the list handler (functions/listPets.ts) writes it.
 */
export const nextPageLinkExample = nextPageLink({
  limit: petsExample.length,
  cursor: encodeCursor({ afterId: (petsExample[petsExample.length - 1] as Pet).id, status: null }),
});

/** The `Location` of the example pet's 201, as the create handler (functions/createPet.ts) writes it. */
export const locationExample = petLocation(petExample.id);

/** An error answer as the API sends it: the body and the headers the error adds. */
interface ErrorAnswer {
  readonly body: ErrorBody;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * An edge answer, its body in the order the API writes its own. Its headers are set where the edge
 * is built (infra/), so none is known here.
 */
function edgeAnswer(error: EdgeError): ErrorAnswer {
  return { body: { code: error.code, message: error.message, status: error.status }, headers: {} };
}

/** What the API answers to `error`: the result of its one error mapping. */
function answerTo(error: unknown): ErrorAnswer {
  const result = toErrorResult(error);
  return { body: result.body as ErrorBody, headers: result.headers ?? {} };
}

/** The error `action` throws, answered as the API answers it. */
function answerWhen(action: () => unknown): ErrorAnswer {
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

/** True when some key's scope does not cover `route`'s, so that the API may answer it 403 `insufficient_scope`. */
export function refusesSomeScope(route: Pick<RouteDefinition, "scope">): boolean {
  return keyScopes.some((granted) => !scopeAllows(granted, route.scope));
}

/** When the example expired key expired: an expiry as keys store it (whole seconds, ISO 8601). */
export const keyExpiryExample = "2026-12-01T00:00:00.000Z";

/**
 * The error the API's own authentication (lib/http/middleware/bearerAuth.ts) throws for
 * `operationId` when the key's verdict is `verdict`. The token is never in the answer.
 */
function authenticationFailure(operationId: OperationId, verdict: KeyVerdict): () => unknown {
  const verifier: ApiKeyVerifier = { stage: "local", verify: () => verdict };
  const event = { headers: { authorization: "Bearer example-token" } } as unknown as ApiEvent;
  const middleware = bearerAuth(verifier, routes[operationId].scope);
  return () => middleware.before?.({ event } as Parameters<NonNullable<typeof middleware.before>>[0]);
}

/** Every error answer an operation documents, with one or more real examples of it. */
function errorAnswers(operationId: OperationId, status: ErrorStatus): Record<string, Example<ErrorAnswer>> {
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
        expiredKey: {
          summary: "A key past its expiry (e.g. a rotated key after the overlap)",
          value: answerWhen(authenticationFailure(operationId, { refused: "expired", expiredAt: keyExpiryExample })),
        },
      };
    case 403: {
      const firewall = { summary: "Refused by the edge firewall", value: edgeAnswer(edgeErrors.forbidden) };
      // First where the API answers it: the first example's headers are the documented headers' examples.
      return !refusesSomeScope(routes[operationId])
        ? { firewall }
        : {
            insufficientScope: {
              summary: "A read key on an operation that needs write",
              value: answerWhen(authenticationFailure(operationId, { keyId: "example", scope: "read" })),
            },
            firewall,
          };
    }
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
          value: answerTo(new IdempotencyKeyInProgressError(IN_PROGRESS_RETRY_AFTER_SECONDS)),
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
        storeUnavailable: {
          summary: "The data store is unavailable",
          value: answerTo(new ServiceUnavailableError(RETRY_AFTER_SECONDS)),
        },
      };
  }
}

/** The bodies of an operation's error answers with `status`, by example name. */
export function errorExamples(operationId: OperationId, status: ErrorStatus): Record<string, Example<ErrorBody>> {
  return Object.fromEntries(
    Object.entries(errorAnswers(operationId, status)).map(([name, { summary, value }]) => [
      name,
      { summary, value: value.body },
    ]),
  );
}

/**
 * The headers the first example of an operation's error answer with `status` carries (e.g. 503's
 * `Retry-After`): the examples of those response headers.
 */
export function errorHeaderExamples(operationId: OperationId, status: ErrorStatus): Readonly<Record<string, string>> {
  const [first] = Object.values(errorAnswers(operationId, status));
  return first?.value.headers ?? {};
}
