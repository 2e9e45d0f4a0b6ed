/**
 * The one route table. The CDK stack creates one API Gateway method and one Lambda function per
 * entry (allowed exactly the DynamoDB actions listed, on exactly the parts of the table listed), the
 * local server routes requests with it, and the OpenAPI document lists the same operations.
 */
import type { KeyScope } from "./auth/apiKeys";
import type { TableArea } from "./db/table";

export const API_BASE_PATH = "/v1";

export type HttpMethod = "GET" | "POST";
export type DynamoAction =
  | "dynamodb:GetItem"
  | "dynamodb:PutItem"
  | "dynamodb:UpdateItem"
  | "dynamodb:DeleteItem"
  | "dynamodb:Query";

export interface RouteDefinition {
  readonly operationId: string;
  readonly method: HttpMethod;
  /** API Gateway resource path, relative to the base path. */
  readonly path: string;
  /** Source file (from the project root) whose `handler` export serves the route. */
  readonly handlerFile: string;
  readonly summary: string;
  /**
   * DynamoDB actions the handler needs, by the part of the table they touch (lib/db/table.ts),
   * besides reading API keys, which every handler does.
   */
  readonly dynamoAccess: Partial<Record<TableArea, readonly DynamoAction[]>>;
  /** True when the route takes a JSON request body. */
  readonly jsonBody: boolean;
  /**
   * The scope a key needs (lib/auth/apiKeys.ts, KeyScope): `read` keys may call only `read` routes,
   * `write` keys every route. A key without it gets 403 `insufficient_scope` before its body is read.
   */
  readonly scope: KeyScope;
  readonly deprecation?: {
    /** When it was deprecated (RFC 9745 `Deprecation`). */
    readonly deprecatedAt: Date;
    /** When it stops working and answers 410 (RFC 8594 `Sunset`). */
    readonly sunsetAt: Date;
    /** Where clients should go instead, relative to the host. */
    readonly successor: string;
  };
}

export const routes = {
  listPets: {
    operationId: "listPets",
    method: "GET",
    path: "/pets",
    handlerFile: "functions/listPets.ts",
    summary: "List animals, optionally filtered by status, oldest first.",
    dynamoAccess: {
      pets: ["dynamodb:Query"],
      syntheticPets: ["dynamodb:Query"],
      petsByStatus: ["dynamodb:Query"],
    },
    jsonBody: false,
    scope: "read",
  },
  createPet: {
    operationId: "createPet",
    method: "POST",
    path: "/pets",
    handlerFile: "functions/createPet.ts",
    summary: "Add an animal.",
    dynamoAccess: {
      // Insert, then read back a pet a retried create may have inserted already.
      pets: ["dynamodb:PutItem", "dynamodb:GetItem"],
      syntheticPets: ["dynamodb:PutItem", "dynamodb:GetItem"],
      petIdCounter: ["dynamodb:UpdateItem"],
      idempotencyRecords: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:DeleteItem"],
    },
    jsonBody: true,
    scope: "write",
  },
  getPet: {
    operationId: "getPet",
    method: "GET",
    path: "/pets/{petId}",
    handlerFile: "functions/getPet.ts",
    summary: "Get an animal by id (deprecated: use GET /pets with the status filter).",
    dynamoAccess: { pets: ["dynamodb:GetItem"], syntheticPets: ["dynamodb:GetItem"] },
    jsonBody: false,
    scope: "read",
    deprecation: {
      deprecatedAt: new Date("2026-11-23T00:00:00Z"),
      sunsetAt: new Date("2030-12-05T00:00:00Z"),
      successor: `${API_BASE_PATH}/pets`,
    },
  },
} as const satisfies Record<string, RouteDefinition>;

export type OperationId = keyof typeof routes;
export const routeList: readonly RouteDefinition[] = Object.values(routes);
