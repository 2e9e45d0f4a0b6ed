/**
 * Builds the OpenAPI 3.1 document of the API from the schemas in ./schemas.ts and the route table
 * (../routes.ts), so the document cannot drift from what the handlers validate and serve.
 *
 * Only tooling imports this (the local server, `npm run docs`, the contract tests): the Lambda
 * handlers never do, so it costs nothing at cold start.
 */
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  type KeyScope,
  keyScopes,
  SYNTHETIC_KEY_LIFETIME_SECONDS,
  scopeAllows,
} from "../auth/apiKeys";
import { deprecationHeaders } from "../http/middleware/deprecation";
import { UNAUTHORIZED_CHALLENGE } from "../http/middleware/errorResponse";
import { COMMON_HEADERS } from "../http/middleware/responseEnvelope";
import { IDEMPOTENT_REPLAYED_HEADER } from "../idempotency/replayed";
import { API_BASE_PATH, type OperationId, type RouteDefinition, routes } from "../routes";
import {
  type Example,
  errorExamples,
  errorHeaderExamples,
  locationExample,
  newPetExample,
  nextPageLinkExample,
  type ParameterName,
  parameterExamples,
  petExample,
  petsExample,
  refusesSomeScope,
  requestIdExample,
} from "./examples";
import {
  cursorSchema,
  DEFAULT_PET_STATUS,
  type ErrorCode,
  type ErrorStatus,
  errorCodesByStatus,
  errorSchema,
  idempotencyKeySchema,
  listLimitSchema,
  MAX_BODY_BYTES,
  newPetSchema,
  petIdParamSchema,
  petSchema,
  petStatusSchema,
} from "./schemas";

export const OPENAPI_VERSION = "3.1.1";
export const API_VERSION = "1.0.0";
export const API_TAG = "animals";

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
export type JsonObject = { readonly [key: string]: Json };

/** The parts of the document the project's tools read; everything else is plain JSON. */
export interface OpenApiDocument extends JsonObject {
  readonly openapi: string;
  readonly info: JsonObject;
  readonly servers: readonly { readonly url: string; readonly description: string; readonly "x-internal": boolean }[];
  readonly paths: { readonly [path: string]: { readonly [method: string]: JsonObject } };
  readonly components: {
    readonly schemas: { readonly [name: string]: JsonObject };
    readonly headers: { readonly [name: string]: JsonObject };
    readonly securitySchemes: { readonly [name: string]: JsonObject };
  };
}

/** The codes `route` may answer with `status`: a 403 is `insufficient_scope` only where some key lacks the route's scope. */
export function errorCodesOf(route: Pick<RouteDefinition, "scope">, status: ErrorStatus): readonly ErrorCode[] {
  const codes: readonly ErrorCode[] = errorCodesByStatus[status];
  return codes.filter((code) => code !== "insufficient_scope" || refusesSomeScope(route));
}

const SECURITY_SCHEME = "bearerAuth";

const schemaRef = (name: string) => `#/components/schemas/${name}`;
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** A JSON Schema as schemas.ts writes it (readonly `as const` objects). */
type SchemaObject = { readonly [key: string]: unknown };

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Replaces each property schema that contains a whole named component (e.g. PetStatus, possibly
 * with a `default` added) by a `$ref` to it plus the extra keywords, so the document names the
 * shared type instead of repeating it.
 */
function referencing(schema: SchemaObject, components: Readonly<Record<string, SchemaObject>>): JsonObject {
  const properties = schema.properties as Readonly<Record<string, SchemaObject>> | undefined;
  if (!properties) return schema as JsonObject;
  const referenced: Record<string, Json> = {};
  for (const [field, property] of Object.entries(properties)) {
    const match = Object.entries(components).find(
      ([, component]) =>
        component !== schema &&
        Object.entries(component).every(([keyword, value]) => sameJson(property[keyword], value)),
    );
    if (!match) {
      referenced[field] = property as JsonObject;
      continue;
    }
    const [name, component] = match;
    const extra = Object.fromEntries(Object.entries(property).filter(([keyword]) => !(keyword in component)));
    referenced[field] = { $ref: schemaRef(name), ...(extra as JsonObject) };
  }
  return { ...(schema as JsonObject), properties: referenced };
}

function componentSchemas(): Record<string, JsonObject> {
  const named: Record<string, SchemaObject> = {
    PetStatus: petStatusSchema,
    NewPet: newPetSchema,
    Pet: petSchema,
    Error: errorSchema,
  };
  const schemas: Record<string, JsonObject> = {};
  for (const [name, schema] of Object.entries(named)) schemas[name] = referencing(schema, named);
  schemas.Pets = {
    type: "array",
    description: `A page of animals in ascending \`id\` order (oldest first), at most ${listLimitSchema.maximum} long.`,
    items: { $ref: schemaRef("Pet") },
    maxItems: listLimitSchema.maximum,
  };
  return schemas;
}

/** A header whose value never varies: its value is also its example. */
function fixedHeader(description: string, value: string, required = true): JsonObject {
  return { description, required, schema: { type: "string", const: value }, example: value };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Headers shared by several answers. The examples of Retry-After and WWW-Authenticate are those
 * the service's own 503 and 401 carry (./examples.ts); test/unit/openapiExamples.test.ts checks
 * every other answer that references them carries the same.
 */
function componentHeaders(): Record<string, JsonObject> {
  return {
    "X-Request-Id": {
      description: "Identifies this request in the service's logs; quote it when reporting a problem.",
      required: true,
      schema: { type: "string", minLength: 1 },
      example: requestIdExample,
    },
    "Cache-Control": fixedHeader("Answers are never cached.", COMMON_HEADERS["Cache-Control"]),
    "X-Content-Type-Options": fixedHeader(
      "Browsers must not guess another media type.",
      COMMON_HEADERS["X-Content-Type-Options"],
    ),
    "Retry-After": {
      description: "Seconds to wait before retrying (RFC 9110 delay-seconds).",
      required: true,
      schema: { type: "string", pattern: "^[0-9]+$" },
      example: errorHeaderExamples("listPets", 503)["Retry-After"] as string,
    },
    "WWW-Authenticate": {
      description:
        'The bearer challenge (RFC 6750): `error="invalid_token"` is added when a token was sent but is not a valid key (unknown, revoked, expired, or of another environment).',
      required: true,
      schema: {
        type: "string",
        pattern: `^${escapeRegExp(UNAUTHORIZED_CHALLENGE)}(${escapeRegExp(', error="invalid_token"')})?$`,
      },
      example: errorHeaderExamples("listPets", 401)["WWW-Authenticate"] as string,
    },
  };
}

const commonHeaders = {
  "X-Request-Id": headerRef("X-Request-Id"),
  "Cache-Control": headerRef("Cache-Control"),
  "X-Content-Type-Options": headerRef("X-Content-Type-Options"),
};

type Deprecation = NonNullable<RouteDefinition["deprecation"]>;

/** The headers the deprecation middleware adds, with the values it sends. */
function deprecationResponseHeaders(deprecation: Deprecation, required: boolean): Record<string, JsonObject> {
  const sent = deprecationHeaders(deprecation);
  return {
    Deprecation: fixedHeader(
      `This operation is deprecated since ${deprecation.deprecatedAt.toISOString().slice(0, 10)} (RFC 9745: \`@\` and seconds since the epoch).`,
      sent.Deprecation as string,
      required,
    ),
    Sunset: fixedHeader(
      "When this operation stops working and starts answering 410 (RFC 8594).",
      sent.Sunset as string,
      required,
    ),
    Link: fixedHeader("The operation to use instead (RFC 8288).", sent.Link as string, required),
  };
}

const errorDescriptions: Record<ErrorStatus, string> = {
  400: "The request is malformed or a parameter or field is not valid; `message` starts with its name (`limit: …`).",
  401: "The API key is missing, malformed, unknown, revoked, expired (the message says when) or of another environment. Checked before anything else.",
  403: "Refused by the edge firewall before reaching the API: the request matched a rule against known attack patterns, or came from an address on a threat list. Every key's scope covers this operation, so the service itself never answers it 403.",
  404: "Not found.",
  405: "Not answered by this operation: the path exists, but not with the method used.",
  409: "A request with the same `Idempotency-Key` is still in flight; retry after `Retry-After` seconds.",
  410: "The operation was removed at its sunset.",
  413: `The request body is larger than ${MAX_BODY_BYTES} bytes.`,
  415: "The request body is not declared as JSON (`Content-Type: application/json`, charset UTF-8 if given), or its bytes are not UTF-8.",
  422: "The `Idempotency-Key` was already used with a different request body.",
  429: "Too many requests (the stage's throttling, or the edge firewall's limits per API key and per client address); retry after `Retry-After` seconds.",
  500: "An unexpected error. The message reveals nothing internal; quote `X-Request-Id` when reporting it.",
  503: "The data store is throttled, unreachable or slow; safe to retry after `Retry-After` seconds.",
};

interface ErrorResponseOptions {
  /** The operation answering: its examples are its own. */
  readonly operationId: OperationId;
  /** The codes this answer may carry; by default every code of its status. */
  readonly codes?: readonly ErrorCode[];
  readonly description?: string;
  readonly headers?: Record<string, JsonObject>;
}

/**
 * Statuses the edge firewall (production) may answer before a request reaches the gateway's own
 * processing: its answers are fixed texts, so they carry no per-request X-Request-Id.
 */
const edgeStatuses: readonly ErrorStatus[] = [403, 413, 429];

/** The escaped scope names, as a regular expression's alternatives. */
const scopePattern = keyScopes.map(escapeRegExp).join("|");

/**
 * A 403 of an operation some keys may not call: the edge firewall's `forbidden`, or the API's
 * `insufficient_scope` (RFC 6750 §3.1), which carries the challenge naming the scope needed.
 */
function insufficientScopeResponse(
  route: RouteDefinition & { readonly operationId: OperationId },
  headers: Record<string, JsonObject>,
): JsonObject {
  return errorResponse(403, {
    operationId: route.operationId,
    description: [
      `The API key's scope does not cover this operation, which needs \`${route.scope}\` (\`insufficient_scope\`, answered before`,
      "the request body is read, with `WWW-Authenticate` naming the scope needed); or the edge firewall refused the",
      "request (`forbidden`, without `WWW-Authenticate` or `X-Request-Id`): it matched a rule against known attack",
      "patterns, or came from an address on a threat list.",
    ].join(" "),
    codes: errorCodesOf(route, 403),
    headers: {
      ...headers,
      "WWW-Authenticate": {
        description:
          'The bearer challenge (RFC 6750 §3.1) with `error="insufficient_scope"` and the scope the operation needs; absent when the edge firewall answered.',
        required: false,
        schema: {
          type: "string",
          pattern: `^${escapeRegExp(`${UNAUTHORIZED_CHALLENGE}, error="insufficient_scope", scope="`)}(${scopePattern})"$`,
        },
        example: errorHeaderExamples(route.operationId, 403)["WWW-Authenticate"] as string,
      },
    },
  });
}

const requestIdFromEdge: JsonObject = {
  description:
    "Identifies this request in the service's logs; quote it when reporting a problem. Absent when the edge firewall answered.",
  required: false,
  schema: { type: "string", minLength: 1 },
  example: requestIdExample,
};

/** The Error body narrowed to the code (or codes) and the status this answer carries. */
function errorResponse(status: ErrorStatus, options: ErrorResponseOptions): JsonObject {
  const codes: readonly ErrorCode[] = options.codes ?? errorCodesByStatus[status];
  const needsRetryAfter = status === 409 || status === 429 || status === 503;
  return {
    description: options.description ?? errorDescriptions[status],
    headers: {
      ...commonHeaders,
      ...(edgeStatuses.includes(status) ? { "X-Request-Id": requestIdFromEdge } : {}),
      ...(needsRetryAfter ? { "Retry-After": headerRef("Retry-After") } : {}),
      ...(status === 401 ? { "WWW-Authenticate": headerRef("WWW-Authenticate") } : {}),
      ...options.headers,
    },
    content: {
      "application/json": {
        schema: {
          allOf: [
            { $ref: schemaRef("Error") },
            {
              type: "object",
              properties: {
                code: codes.length === 1 ? { const: codes[0] as ErrorCode } : { enum: codes },
                status: { const: status },
              },
            },
          ],
        },
        examples: examplesObject(errorExamples(options.operationId, status)),
      },
    },
  };
}

function methodNotAllowed(operationId: OperationId, path: string, methods: readonly string[]): JsonObject {
  const allow = methods.join(", ");
  return errorResponse(405, {
    operationId,
    description: `Not answered by this operation: \`${path}\` with any other method than ${allow} gets this 405 from the gateway.`,
    headers: { Allow: fixedHeader("The methods this path has.", allow) },
  });
}

function operationResponses(
  route: RouteDefinition & { readonly operationId: OperationId },
  success: Record<string, JsonObject>,
  errors: readonly ErrorStatus[],
  allowedMethods: readonly string[],
): Record<string, JsonObject> {
  const responses: Record<string, JsonObject> = { ...success };
  for (const status of errors) {
    if (status === 405) {
      responses[status] = methodNotAllowed(route.operationId, route.path, allowedMethods);
      continue;
    }
    // The handler adds the deprecation headers to every answer it gives; the gateway's and the firewall's own lack them.
    const alwaysFromHandler = status !== 403 && status !== 429 && status < 500;
    const headers = route.deprecation ? deprecationResponseHeaders(route.deprecation, alwaysFromHandler) : {};
    if (status === 403 && refusesSomeScope(route)) {
      responses[status] = insufficientScopeResponse(route, headers);
      continue;
    }
    responses[status] = errorResponse(status, {
      operationId: route.operationId,
      codes: errorCodesOf(route, status),
      headers,
      ...(status === 404 && route.operationId === "getPet" ? { description: "No animal has this id." } : {}),
    });
  }
  return responses;
}

const successHeaders = (extra: Record<string, JsonObject> = {}) => ({ ...commonHeaders, ...extra });

/** An Example Object map (OpenAPI `examples`), as JSON. */
function examplesObject(examples: Record<string, Example<unknown>>): JsonObject {
  return examples as unknown as JsonObject;
}

function jsonContent(schemaName: string, examples: Record<string, Example<unknown>>): JsonObject {
  return { "application/json": { schema: { $ref: schemaRef(schemaName) }, examples: examplesObject(examples) } };
}

/** A parameter's example, from ./examples.ts. */
function example(name: ParameterName): { readonly example: Json } {
  return { example: parameterExamples[name] };
}

function listPetsOperation(allowedMethods: readonly string[]): JsonObject {
  const route = routes.listPets;
  return {
    operationId: route.operationId,
    tags: [API_TAG],
    summary: route.summary,
    description: [
      "Returns a page of animals in ascending `id` order (oldest first): exactly",
      "`min(limit, matches not yet returned)` of them, never a short page while more match.",
      "",
      `**Pagination.** While more animals match, the answer carries \`Link: <${API_BASE_PATH}${route.path}?limit=…&status=…&cursor=…>; rel="next"\``,
      "(RFC 8288); follow it to get the next page, with the same `limit` and `status`. The last page has",
      "no such link. Following the links visits every animal once. The `cursor` is opaque and",
      "tamper-evident, and bound to the `status` filter it was issued for; `limit` may change between",
      "pages. There is no total count.",
      "",
      "**Parameters.** Anything other than the values described, or a parameter given twice, is a 400",
      "naming it. Unknown query parameters are ignored.",
      "",
      "**Consistency.** An unfiltered list is strongly consistent (an animal is listed as soon as its 201",
      "is sent); a `status`-filtered list is eventually consistent, normally within a second.",
    ].join("\n"),
    security: securityOf(route),
    parameters: [
      {
        name: "limit",
        in: "query",
        required: false,
        description: listLimitSchema.description,
        schema: listLimitSchema,
        ...example("limit"),
      },
      {
        name: "status",
        in: "query",
        required: false,
        description: "Return only animals with this status. Default: no filtering.",
        schema: { $ref: schemaRef("PetStatus") },
        ...example("status"),
      },
      {
        name: "cursor",
        in: "query",
        required: false,
        description: cursorSchema.description,
        schema: cursorSchema,
        ...example("cursor"),
      },
    ],
    responses: operationResponses(
      route,
      {
        200: {
          description: "A page of animals.",
          headers: successHeaders({
            Link: {
              description: 'The next page (RFC 8288 `rel="next"`), present while more animals match.',
              required: false,
              schema: {
                type: "string",
                pattern: `^<${escapeRegExp(`${API_BASE_PATH}${route.path}?`)}[^>]*cursor=[^>]+>; rel="next"$`,
              },
              example: nextPageLinkExample,
            },
          }),
          content: jsonContent("Pets", { page: { summary: "A page of animals", value: petsExample } }),
        },
      },
      [400, 401, 403, 405, 429, 500, 503],
      allowedMethods,
    ),
  };
}

function createPetOperation(allowedMethods: readonly string[]): JsonObject {
  const route = routes.createPet;
  return {
    operationId: route.operationId,
    tags: [API_TAG],
    summary: route.summary,
    description: [
      `Adds an animal and answers it with its \`id\` and \`Location: ${API_BASE_PATH}${routes.getPet.path.replace("{petId}", "{id}")}\`.`,
      `\`status\` defaults to \`${DEFAULT_PET_STATUS}\`. Any field not in NewPet, \`id\` included, is a 400 naming it.`,
      `The body is a JSON object of at most ${MAX_BODY_BYTES} bytes.`,
      "",
      "Ids are integers from 1 to 2^53−1 (exact in every JSON client), assigned in creation order and",
      "never reused; gaps are possible.",
      "",
      "**Retrying safely.** Send an `Idempotency-Key`: a retry with the same key and the same body",
      "answers the original 201 and creates nothing; the same key with another body is a 422; a",
      "retry while the first request is still in flight is a 409. Failed creates are not remembered.",
    ].join("\n"),
    security: securityOf(route),
    parameters: [
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description: `${idempotencyKeySchema.description} The same key with the same body replays the original answer.`,
        schema: idempotencyKeySchema,
        ...example("Idempotency-Key"),
      },
    ],
    requestBody: {
      required: true,
      description: `The animal to add: a JSON object of at most ${MAX_BODY_BYTES} bytes. A member named twice takes its last value.`,
      content: jsonContent("NewPet", { rex: { summary: "An available dog", value: newPetExample } }),
    },
    responses: operationResponses(
      route,
      {
        201: {
          description: "The animal was added (or an earlier create with the same `Idempotency-Key` is replayed).",
          headers: successHeaders({
            Location: {
              description: "Where the new animal is.",
              required: true,
              schema: {
                type: "string",
                pattern: `^${escapeRegExp(`${API_BASE_PATH}${routes.getPet.path.replace("{petId}", "")}`)}[1-9][0-9]*$`,
              },
              example: locationExample,
            },
            [IDEMPOTENT_REPLAYED_HEADER]: fixedHeader(
              "`true` when this answer replays an earlier create with the same `Idempotency-Key`; absent otherwise.",
              "true",
              false,
            ),
          }),
          content: jsonContent("Pet", { created: { summary: "The animal as stored", value: petExample } }),
        },
      },
      [400, 401, 403, 405, 409, 413, 415, 422, 429, 500, 503],
      allowedMethods,
    ),
  };
}

function getPetOperation(allowedMethods: readonly string[]): JsonObject {
  const route = routes.getPet;
  const { deprecation } = route;
  const sunset = deprecation.sunsetAt.toISOString().slice(0, 10);
  return {
    operationId: route.operationId,
    tags: [API_TAG],
    summary: route.summary,
    description: [
      `**Deprecated**: removed on ${sunset}; use \`GET ${deprecation.successor}\` with the \`status\` filter instead.`,
      "Every answer of this operation carries `Deprecation`, `Sunset` and",
      `\`Link: <${deprecation.successor}>; rel="successor-version"\`; from the sunset on it answers 410 \`gone\`.`,
    ].join("\n"),
    deprecated: true,
    security: securityOf(route),
    parameters: [
      {
        name: "petId",
        in: "path",
        required: true,
        description: petIdParamSchema.description,
        schema: petIdParamSchema,
        ...example("petId"),
      },
    ],
    responses: operationResponses(
      route,
      {
        200: {
          description: "The animal.",
          headers: successHeaders(deprecationResponseHeaders(deprecation, true)),
          content: jsonContent("Pet", { found: { summary: "The animal", value: petExample } }),
        },
      },
      [400, 401, 403, 404, 405, 410, 429, 500, 503],
      allowedMethods,
    ),
  };
}

const operationBuilders: Record<keyof typeof routes, (allowedMethods: readonly string[]) => JsonObject> = {
  listPets: listPetsOperation,
  createPet: createPetOperation,
  getPet: getPetOperation,
};

function buildPaths(): Record<string, Record<string, JsonObject>> {
  const methodsByPath = new Map<string, string[]>();
  for (const route of Object.values(routes)) {
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
  }
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const [operationId, build] of Object.entries(operationBuilders)) {
    const route: RouteDefinition = routes[operationId as keyof typeof routes];
    const item = paths[route.path] ?? {};
    item[route.method.toLowerCase()] = build(methodsByPath.get(route.path) ?? []);
    paths[route.path] = item;
  }
  return paths;
}

const errorCodeTable = Object.entries(errorCodesByStatus)
  .map(([status, codes]) => `| ${status} | ${codes.map((code) => `\`${code}\``).join(", ")} |`)
  .join("\n");

/**
 * An operation's security requirement: a bearer key with the route's scope. OpenAPI 3.1 lets a
 * requirement on a non-OAuth scheme list role names ("Security Requirement Object":
 * https://spec.openapis.org/oas/v3.1.1.html#security-requirement-object); the API's are the key scopes.
 */
function securityOf(route: RouteDefinition): readonly JsonObject[] {
  return [{ [SECURITY_SCHEME]: [route.scope] }];
}

const days = (seconds: number) => `${seconds / 86_400} days`;

/** Which operations each scope may call, from the route table: "`read`: listPets, getPet". */
function scopeLines(): string[] {
  return keyScopes.map((scope: KeyScope) => {
    const allowed = Object.values(routes).filter((route) => scopeAllows(scope, route.scope));
    return `- \`${scope}\`: ${allowed.map((route) => `\`${route.operationId}\``).join(", ")}`;
  });
}

/** How keys work, for the document's introduction and its security scheme. */
function keyRules(): string[] {
  return [
    "Each key has a scope, which decides the operations it may call:",
    "",
    ...scopeLines(),
    "",
    "Keys made before scopes existed are `write` keys. A key whose scope does not cover an operation gets 403",
    '`insufficient_scope` with `WWW-Authenticate: Bearer realm="pets", error="insufficient_scope", scope="<needed>"`',
    "(RFC 6750 §3.1), before the request body is read.",
    "",
    `A key may expire (synthetic keys after ${days(SYNTHETIC_KEY_LIFETIME_SECONDS)}); from its expiry on it gets 401 \`unauthorized\``,
    'with `error="invalid_token"` and a message saying when it expired. When a key is rotated, its replacement',
    `works at once and the old key keeps working for an overlap (${days(DEFAULT_ROTATION_OVERLAP_SECONDS)} unless the operator chose`,
    "otherwise), then expires: switch to the new key within the overlap.",
  ];
}
function infoDescription(): string {
  return [
    "An HTTP and JSON interface to a store of animals: list them, add one, and fetch one by id (deprecated).",
    "",
    `Production and staging are isolated (own data, own keys). Each serves the API under \`${API_BASE_PATH}\`;`,
    "its base URL is the `BaseUrl` output of its CloudFormation stack. `npm start` serves it locally.",
    "",
    "## Authentication",
    "Every operation needs `Authorization: Bearer <API key>` (scheme case-insensitive). Authentication is",
    "checked first: an unauthenticated request is a 401 even when it is also malformed. Each key has a scope",
    `(${keyScopes.map((scope) => `\`${scope}\``).join(" or ")}; each operation's \`security\` names the one it needs), may expire, and is rotated with an`,
    "overlap: the `bearerAuth` security scheme says how.",
    "",
    "## Errors",
    "Every non-2xx answer, including those the gateway gives itself, is the `Error` object with",
    "`Content-Type: application/json`; its `status` repeats the HTTP status and `code` is one of:",
    "",
    "| Status | `code` |",
    "|---|---|",
    errorCodeTable,
    "",
    "A path not described here answers 404 `not_found`; a described path with another method answers",
    "405 `method_not_allowed` with `Allow`. A 5xx message reveals nothing internal.",
    "",
    "In production an edge firewall sits in front of the API: it answers 403 `forbidden` (a request",
    "matching known attack patterns, or from an address on a threat list), 413 `payload_too_large` (a",
    "body over the limit) and 429 `too_many_requests` (its limits per API key and per client address)",
    "itself, in the same shape but without `X-Request-Id`.",
    "",
    "## Browsers and CORS",
    "The API is for servers that hold a secret API key, not for scripts in web pages: a key sent from a",
    "browser is a key published. It sends no CORS headers (no `Access-Control-Allow-Origin`), so a",
    "browser does not let a page from another origin read any answer, and a preflight (`OPTIONS`) gets",
    "405 `method_not_allowed` with `Allow`, so the browser does not send the request itself. Call the API",
    "from your own back end.",
    "",
    "## Support",
    "Report problems to the team that issued your API key, quoting the answer's `X-Request-Id`.",
    "",
    "## Common headers",
    "Every answer carries `X-Request-Id`, `Cache-Control: no-store` and `X-Content-Type-Options: nosniff`,",
    "with `Content-Type: application/json; charset=utf-8`.",
    "",
    "## Versioning",
    `The major version is in the base path (\`${API_BASE_PATH}\`). Deprecated operations announce it with`,
    "`Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers, and answer 410 `gone` after the sunset.",
  ].join("\n");
}

/** Where `npm start` serves the API unless told otherwise. */
const DEFAULT_LOCAL_BASE_URL = `http://127.0.0.1:3000${API_BASE_PATH}`;

function servers(localBaseUrl: string): OpenApiDocument["servers"] {
  const awsServer = (stage: string) => ({
    url: `https://{apiId}.execute-api.{region}.amazonaws.com${API_BASE_PATH}`,
    description: `${stage}: the BaseUrl output of the ${stage} stack`,
    // For every client holding a key of this stage (OWASP API9: say each server's audience).
    "x-internal": false,
    variables: {
      apiId: { default: "apiId", description: `The REST API id of the ${stage} stage (first label of \`BaseUrl\`).` },
      region: { default: "us-east-1", description: "The AWS region the stage is deployed to." },
    },
  });
  return [
    awsServer("Production"),
    awsServer("Staging"),
    // For the developer running it, on this machine only.
    { url: localBaseUrl, description: "Local: npm start (port set by PORT)", "x-internal": true },
  ];
}

/**
 * The OpenAPI document of the API as built. `localBaseUrl` is the local server's entry: a running
 * `npm start` lists its own address.
 */
export function buildOpenApiDocument(options: { readonly localBaseUrl?: string } = {}): OpenApiDocument {
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: "Pet Store API",
      version: API_VERSION,
      summary: "List, add and fetch animals.",
      description: infoDescription(),
      // No address of its own: each stage's keys are issued by the team running it (info.description, "Support").
      contact: { name: "The team that issued your API key" },
    },
    servers: servers(options.localBaseUrl ?? DEFAULT_LOCAL_BASE_URL),
    tags: [{ name: API_TAG, description: "Animals in the store: list, add, fetch." }],
    security: [{ [SECURITY_SCHEME]: [] }],
    paths: buildPaths(),
    components: {
      schemas: componentSchemas(),
      headers: componentHeaders(),
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "petstore_<stage>_<43 letters and digits>",
          description: [
            "An API key as the bearer token. Keys are per environment (`local`, `staging`, `prod` in the prefix), shown once when created, and revoked keys stop working within 60 seconds.",
            "Each operation's security requirement names the scope it needs.",
            "",
            ...keyRules(),
          ].join("\n"),
        },
      },
    },
  };
}
