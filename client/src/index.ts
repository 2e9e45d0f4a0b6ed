/**
 * The Pet Store API client: typed calls generated from the API's OpenAPI document (./schema.ts),
 * made with openapi-fetch, plus what clients get wrong by hand: safe retries of creates
 * (Idempotency-Key), backoff that honours Retry-After, paging through Link headers, the client's
 * own errors, and a warning when a deprecated operation is used.
 */
export {
  type CallOptions,
  type CreatedPet,
  type CreateOptions,
  type CreateResponseInfo,
  createPetStoreClient,
  type DeprecationNotice,
  type ListPetsQuery,
  type NewPet,
  type Pet,
  type PetPage,
  type PetStatus,
  type PetStoreClient,
  type PetStoreClientOptions,
  type ResponseInfo,
} from "./client.js";
export {
  type ErrorCode,
  PetStoreAbortError,
  PetStoreApiError,
  PetStoreInsufficientScopeError,
  PetStoreNetworkError,
} from "./errors.js";
export type { RetryOptions } from "./retry.js";
export type { components, operations, paths } from "./schema.js";
