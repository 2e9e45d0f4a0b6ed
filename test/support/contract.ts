/**
 * Checks an observed response against the OpenAPI document: the path, method and status must be
 * described, every header the document requires must be there, every header it describes must
 * match its schema, and the body must match the media type's schema. test/support/api.ts runs it
 * on every response its helpers return, so every HTTP-level test is also a contract test.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020";
import { buildOpenApiDocument, type JsonObject, type OpenApiDocument } from "../../lib/contract/openapi";
import { errorCodesByStatus } from "../../lib/contract/schemas";

export interface ObservedRequest {
  readonly method: string;
  /** The URL, or its path from the origin (`/v1/pets?limit=2`). */
  readonly url: string;
}

export interface ObservedResponse {
  readonly status: number;
  /** Names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The parsed body; undefined when there was none. */
  readonly json: unknown;
}

export class ContractViolation extends Error {
  override readonly name = "ContractViolation";
}

export interface ContractValidator {
  /** Throws ContractViolation naming every way the response departs from the document. */
  check(request: ObservedRequest, response: ObservedResponse): void;
}

const DOCUMENT_ID = "openapi.json";
/** Keywords of the OpenAPI object itself, which Ajv must not mistake for unknown schema keywords. */
const OPENAPI_ROOT_KEYWORDS = ["openapi", "info", "servers", "paths", "components", "tags", "security", "webhooks"];

const escapePointer = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1");

function basePathOf(document: OpenApiDocument): string {
  const paths = new Set(document.servers.map((server) => /^[a-z]+:\/\/[^/]+(\/.*)?$/.exec(server.url)?.[1] ?? ""));
  const [only, ...others] = paths;
  if (only === undefined || others.length > 0) throw new Error(`Servers disagree on the base path: ${[...paths]}`);
  return only;
}

interface PathMatcher {
  readonly template: string;
  readonly pattern: RegExp;
}

function pathMatchers(document: OpenApiDocument, basePath: string): PathMatcher[] {
  return Object.keys(document.paths)
    .map((template) => {
      const source = template
        .split(/(\{[^}]+\})/)
        .map((part) => (part.startsWith("{") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
        .join("");
      return { template, pattern: new RegExp(`^${basePath}${source}$`) };
    })
    .sort((a, b) => Number(a.template.includes("{")) - Number(b.template.includes("{")));
}

function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(";")[0]?.trim().toLowerCase();
}

function describeErrors(validate: ValidateFunction): string {
  return (validate.errors ?? []).map((error) => `${error.instancePath || "/"} ${error.message}`).join("; ");
}

/** The integer formats of OpenAPI's format registry that the document uses. */
export function addOpenApiFormats(ajv: Ajv2020): void {
  // Every id this API hands out is also a safe integer, which the schemas bound.
  ajv.addFormat("int64", { type: "number", validate: (value: number) => Number.isInteger(value) });
  ajv.addFormat("int32", {
    type: "number",
    validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31,
  });
}

export function contractValidator(document: OpenApiDocument = buildOpenApiDocument()): ContractValidator {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajv.addVocabulary(OPENAPI_ROOT_KEYWORDS);
  addOpenApiFormats(ajv);
  ajv.addSchema(document, DOCUMENT_ID);

  const compiled = new Map<string, ValidateFunction>();
  const validatorAt = (pointer: string): ValidateFunction => {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate;
  };

  const basePath = basePathOf(document);
  const matchers = pathMatchers(document, basePath);

  const nodeAt = (pointer: string): JsonObject => {
    let node: unknown = document;
    for (const segment of pointer.split("/").slice(1)) {
      node = (node as Record<string, unknown> | undefined)?.[segment.replaceAll("~1", "/").replaceAll("~0", "~")];
    }
    if (typeof node !== "object" || node === null) throw new Error(`Nothing at #${pointer} in the document`);
    return node as JsonObject;
  };

  /** Follows local `$ref`s to the object they name, returning it with its pointer. */
  const resolve = (value: JsonObject, pointer: string): { value: JsonObject; pointer: string } => {
    const ref = value.$ref;
    if (typeof ref !== "string") return { value, pointer };
    const target = ref.replace(/^#/, "");
    return resolve(nodeAt(target), target);
  };

  /** Headers every described response carries: what an answer outside the document must carry too. */
  const universalHeaders = (() => {
    const counts = new Map<string, { count: number; pointer: string; required: boolean }>();
    let responses = 0;
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const operationResponses = (operation.responses ?? {}) as Record<string, JsonObject>;
        for (const [status, raw] of Object.entries(operationResponses)) {
          responses++;
          const response = resolve(raw, `/paths/${escapePointer(path)}/${method}/responses/${status}`);
          for (const [name, header] of Object.entries((response.value.headers ?? {}) as Record<string, JsonObject>)) {
            const resolved = resolve(header, `${response.pointer}/headers/${escapePointer(name)}`);
            const entry = counts.get(name) ?? { count: 0, pointer: resolved.pointer, required: false };
            // Required where the service itself answers; some answers of the edge firewall may lack it.
            counts.set(name, {
              ...entry,
              count: entry.count + 1,
              required: entry.required || resolved.value.required === true,
            });
          }
        }
      }
    }
    return [...counts].filter(([, entry]) => entry.count === responses && entry.required);
  })();

  function checkHeaders(
    headers: Iterable<[name: string, spec: { required: boolean; schemaPointer: string }]>,
    response: ObservedResponse,
    problems: string[],
  ): void {
    for (const [name, spec] of headers) {
      const value = response.headers[name.toLowerCase()];
      if (value === undefined) {
        if (spec.required) problems.push(`header ${name} is required but missing`);
        continue;
      }
      const validate = validatorAt(spec.schemaPointer);
      if (!validate(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${describeErrors(validate)}`);
    }
  }

  function checkDescribedResponse(pointer: string, response: ObservedResponse, problems: string[]): void {
    const described = resolve(nodeAt(pointer), pointer);
    const headers = Object.entries((described.value.headers ?? {}) as Record<string, JsonObject>).map(
      ([name, raw]): [string, { required: boolean; schemaPointer: string }] => {
        const header = resolve(raw, `${described.pointer}/headers/${escapePointer(name)}`);
        return [name, { required: header.value.required === true, schemaPointer: `${header.pointer}/schema` }];
      },
    );
    checkHeaders(headers, response, problems);

    const content = (described.value.content ?? {}) as Record<string, JsonObject>;
    const mediaTypes = Object.keys(content);
    if (mediaTypes.length === 0) {
      if (response.json !== undefined) problems.push("has a body where the document describes none");
      return;
    }
    const mediaType = mediaTypeOf(response.headers["content-type"]);
    if (mediaType === undefined || !mediaTypes.includes(mediaType)) {
      problems.push(`Content-Type ${JSON.stringify(response.headers["content-type"])} is not one of ${mediaTypes}`);
      return;
    }
    const validate = validatorAt(`${described.pointer}/content/${escapePointer(mediaType)}/schema`);
    if (!validate(response.json)) problems.push(`body ${describeErrors(validate)}: ${JSON.stringify(response.json)}`);
  }

  /** An answer for a path the document does not describe: the generic 404 its description promises. */
  function checkOutsideDocument(response: ObservedResponse, problems: string[]): void {
    if (response.status !== 404) {
      problems.push(`status ${response.status}: a path outside the document must answer 404`);
      return;
    }
    checkHeaders(
      universalHeaders.map(([name, entry]) => [name, { required: true, schemaPointer: `${entry.pointer}/schema` }]),
      response,
      problems,
    );
    if (mediaTypeOf(response.headers["content-type"]) !== "application/json") {
      problems.push(`Content-Type ${JSON.stringify(response.headers["content-type"])} is not application/json`);
    }
    const validate = validatorAt("/components/schemas/Error");
    const body = response.json as { code?: unknown; status?: unknown } | undefined;
    if (!validate(body)) problems.push(`body ${describeErrors(validate)}: ${JSON.stringify(body)}`);
    else if (body?.code !== errorCodesByStatus[404][0] || body.status !== 404) {
      problems.push(`body must be ${errorCodesByStatus[404][0]}/404: ${JSON.stringify(body)}`);
    }
  }

  return {
    check(request, response) {
      const pathname = new URL(request.url, "http://localhost").pathname;
      const method = request.method.toLowerCase();
      const matched = matchers.find((matcher) => matcher.pattern.test(pathname));
      const problems: string[] = [];
      let where: string;

      if (!matched) {
        where = `${request.method} ${pathname} (outside the document)`;
        checkOutsideDocument(response, problems);
      } else {
        const item = document.paths[matched.template] ?? {};
        const operation = item[method];
        const itemPointer = `/paths/${escapePointer(matched.template)}`;
        if (operation) {
          where = `${operation.operationId} (${request.method} ${pathname})`;
          const responses = (operation.responses ?? {}) as Record<string, JsonObject>;
          if (responses[String(response.status)]) {
            checkDescribedResponse(`${itemPointer}/${method}/responses/${response.status}`, response, problems);
          } else {
            problems.push(`status ${response.status} is not described (described: ${Object.keys(responses)})`);
          }
        } else {
          // A described path with another method: the 405 its operations describe.
          where = `${request.method} ${pathname} (no such operation on ${matched.template})`;
          const describer = Object.entries(item).find(([, other]) => (other.responses as JsonObject)?.["405"]);
          if (!describer || response.status !== 405) {
            problems.push(`status ${response.status}: a described path with another method must answer 405`);
          } else {
            checkDescribedResponse(`${itemPointer}/${describer[0]}/responses/405`, response, problems);
          }
        }
      }

      if (problems.length > 0) {
        throw new ContractViolation(
          `${where} answered ${response.status} against the OpenAPI document:\n  ${problems.join("\n  ")}`,
        );
      }
    },
  };
}

let shared: ContractValidator | undefined;

/** The validator of the document as built, compiled once per test file (each has its own module graph). */
export function assertMatchesContract(request: ObservedRequest, response: ObservedResponse): void {
  shared ??= contractValidator();
  shared.check(request, response);
}
