/** The OpenAPI document against the route table and the schemas, and the validator the HTTP tests rely on. */

import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020";
import { build } from "esbuild";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lambdaEsbuildOptions } from "../../infra/bundling";
import { buildOpenApiDocument, errorCodesOf, type JsonObject } from "../../lib/contract/openapi";
import {
  type ErrorStatus,
  errorCodes,
  errorCodesByStatus,
  errorSchema,
  newPetSchema,
  type Pet,
  petSchema,
  petStatuses,
  petStatusSchema,
} from "../../lib/contract/schemas";
import { assertMatches } from "../../lib/contract/validate";
import { COMMON_HEADERS } from "../../lib/http/middleware/responseEnvelope";
import { API_BASE_PATH, routeList, routes } from "../../lib/routes";
import { addOpenApiFormats, ContractViolation, contractValidator, type ObservedResponse } from "../support/contract";

const document = buildOpenApiDocument();
const validator = contractValidator(document);
const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

function documentedOperations(): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`),
  );
}

function operation(operationId: keyof typeof routes): JsonObject {
  const route = routes[operationId];
  const found = document.paths[route.path]?.[route.method.toLowerCase()];
  if (!found) throw new Error(`${operationId} is not in the document`);
  return found;
}

const commonHeaders = {
  "content-type": COMMON_HEADERS["Content-Type"],
  "cache-control": COMMON_HEADERS["Cache-Control"],
  "x-content-type-options": COMMON_HEADERS["X-Content-Type-Options"],
  "x-request-id": "5f0c7e0e-0000-4000-8000-000000000000",
};
const rex: Pet = { id: 7, name: "Rex", categoryId: 1, status: "available" };
const listOk: ObservedResponse = { status: 200, headers: commonHeaders, json: [rex] };
const notFoundAnswer: ObservedResponse = {
  status: 404,
  headers: commonHeaders,
  json: { code: "not_found", message: "No route matches /v1/owners.", status: 404 },
};
const listPets = { method: "GET", url: `${API_BASE_PATH}/pets` };

describe("the OpenAPI document", () => {
  it("describes exactly the operations of the route table", () => {
    const fromRoutes = routeList.map((route) => `${route.method} ${route.path} ${route.operationId}`);

    expect(documentedOperations().sort()).toEqual(fromRoutes.sort());
  });

  it("is OpenAPI 3.1, version 1.0.0, with production, staging and local servers under /v1", () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info.version).toBe("1.0.0");
    expect(document.servers.map((server) => server.description.split(":")[0])).toEqual([
      "Production",
      "Staging",
      "Local",
    ]);
    for (const server of document.servers) expect(server.url).toMatch(new RegExp(`${API_BASE_PATH}$`));
  });

  it("tags every operation animals, requires the bearer key with the route's scope on each, and deprecates only getPet", () => {
    const scheme = document.components.securitySchemes.bearerAuth;

    expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
    for (const route of routeList) {
      const described = operation(route.operationId as keyof typeof routes);
      expect(described.tags).toEqual(["animals"]);
      expect(described.security).toEqual([{ bearerAuth: [route.scope] }]);
      expect(described.deprecated === true, route.operationId).toBe(route.deprecation !== undefined);
    }
  });

  it("takes Pet, NewPet, PetStatus and Error from the contract schemas, naming PetStatus by reference", () => {
    const { schemas } = document.components;
    const petStatus = { $ref: "#/components/schemas/PetStatus" };

    expect(schemas.PetStatus).toEqual(petStatusSchema);
    expect(schemas.Error).toEqual(errorSchema);
    expect(schemas.Pet).toEqual({ ...petSchema, properties: { ...petSchema.properties, status: petStatus } });
    expect(schemas.NewPet).toEqual({
      ...newPetSchema,
      properties: {
        ...newPetSchema.properties,
        status: { ...petStatus, default: newPetSchema.properties.status.default },
      },
    });
    expect(schemas.Pets).toMatchObject({ type: "array", items: { $ref: "#/components/schemas/Pet" } });
  });

  it("gives every error code one status, and each error answer the codes of its status the operation can answer", () => {
    expect(Object.values(errorCodesByStatus).flat().sort()).toEqual([...errorCodes].sort());
    for (const route of routeList) {
      const described = operation(route.operationId as keyof typeof routes);
      for (const [status, response] of Object.entries(described.responses as Record<string, JsonObject>)) {
        if (Number(status) < 400) continue;
        const codes = errorCodesOf(route, Number(status) as ErrorStatus);
        const code = codes.length === 1 ? { const: codes[0] } : { enum: codes };
        expect(JSON.stringify(response), `${described.operationId} ${status}`).toContain(
          `"properties":{"code":${JSON.stringify(code)},"status":{"const":${status}}}`,
        );
      }
    }
  });

  it("documents 403 insufficient_scope, with its challenge, exactly on the operations a read key may not call", () => {
    const forbidden = (operationId: keyof typeof routes) =>
      (operation(operationId).responses as Record<string, JsonObject>)[403] as JsonObject;
    const answersInsufficientScope = (operationId: keyof typeof routes) =>
      JSON.stringify(forbidden(operationId)).includes('"insufficient_scope"');

    expect(routeList.filter((route) => route.scope === "write").map((route) => route.operationId)).toEqual([
      "createPet",
    ]);
    expect({
      listPets: answersInsufficientScope("listPets"),
      createPet: answersInsufficientScope("createPet"),
      getPet: answersInsufficientScope("getPet"),
    }).toEqual({
      listPets: false,
      createPet: true,
      getPet: false,
    });
    expect((forbidden("createPet").headers as JsonObject)["WWW-Authenticate"]).toMatchObject({
      required: false,
      example: 'Bearer realm="pets", error="insufficient_scope", scope="write"',
    });
    expect((forbidden("listPets").headers as JsonObject)["WWW-Authenticate"]).toBeUndefined();
  });

  it("lists the statuses each operation can answer, the gateway's included", () => {
    const statuses = (operationId: keyof typeof routes) =>
      Object.keys(operation(operationId).responses as JsonObject).map(Number);

    expect(statuses("listPets")).toEqual([200, 400, 401, 403, 405, 429, 500, 503]);
    expect(statuses("createPet")).toEqual([201, 400, 401, 403, 405, 409, 413, 415, 422, 429, 500, 503]);
    expect(statuses("getPet")).toEqual([200, 400, 401, 403, 404, 405, 410, 429, 500, 503]);
  });

  it("documents the Idempotency-Key request header on createPet only", () => {
    const headerParameters = (operationId: keyof typeof routes) =>
      ((operation(operationId).parameters ?? []) as JsonObject[]).filter((p) => p.in === "header").map((p) => p.name);

    expect(headerParameters("createPet")).toEqual(["Idempotency-Key"]);
    expect(headerParameters("listPets")).toEqual([]);
    expect(headerParameters("getPet")).toEqual([]);
  });
});

describe("request validation agrees with the document", () => {
  const ajv = new Ajv2020({ strict: false });
  addOpenApiFormats(ajv);
  ajv.addSchema(document, "openapi.json");
  const documented = ajv.compile({ $ref: "openapi.json#/components/schemas/NewPet" });
  const accepts = (value: unknown) => {
    try {
      assertMatches(newPetSchema, value, "body");
      return true;
    } catch {
      return false;
    }
  };
  // Well-formed text only: lone surrogates are refused by the handler on purpose (they cannot be stored).
  const text = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 100 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 110 }) },
    { weight: 1, arbitrary: fc.constantFrom("", " ", "\t\n", "x".repeat(101)) },
  );
  const anyValue = fc.oneof(text, fc.integer(), fc.double(), fc.constantFrom(null, true, [], {}));
  // Each field is usually plausible, so valid bodies and near misses are both common.
  const field = <T>(plausible: fc.Arbitrary<T>) =>
    fc.oneof({ weight: 4, arbitrary: plausible }, { weight: 1, arbitrary: anyValue });
  const ids = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) },
    { weight: 1, arbitrary: fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER + 1, 1.5, -0) },
  );
  const statuses = fc.constantFrom(...petStatuses, "lost", "Sold");
  const fields = { name: field(text), categoryId: field(ids), status: field(statuses) };
  const body = fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.record(fields, { requiredKeys: ["name", "categoryId"] }) },
        { weight: 1, arbitrary: fc.record(fields, { requiredKeys: [] }) },
      ),
      fc.constantFrom(null, null, null, null, "id", "tags"),
      anyValue,
    )
    .map(([fields, extraKey, extraValue]) => (extraKey ? { ...fields, [extraKey]: extraValue } : fields));
  const candidate = fc.oneof({ weight: 5, arbitrary: body }, { weight: 1, arbitrary: anyValue });

  it("accepts and rejects exactly the bodies the NewPet schema does", () => {
    const samples = fc.sample(candidate, { numRuns: 500, seed: 1 });
    expect(samples.filter(accepts).length, "the generator must produce valid bodies too").toBeGreaterThan(50);

    fc.assert(
      fc.property(candidate, (sent) => {
        expect(accepts(sent), JSON.stringify(sent)).toBe(documented(sent));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("the contract validator", () => {
  it("accepts a response the document describes", () => {
    expect(() => validator.check(listPets, listOk)).not.toThrow();
    expect(() =>
      validator.check({ method: "GET", url: "http://127.0.0.1:3000/v1/owners" }, notFoundAnswer),
    ).not.toThrow();
  });

  it.each<[string, ObservedResponse]>([
    ["an extra field in a Pet", { ...listOk, json: [{ ...rex, colour: "brown" }] }],
    ["a Pet without status", { ...listOk, json: [{ id: 7, name: "Rex", categoryId: 1 }] }],
    ["an id of 0", { ...listOk, json: [{ ...rex, id: 0 }] }],
    ["a status the operation does not answer", { ...listOk, status: 418 }],
    ["a 201 where the operation answers 200", { ...listOk, status: 201 }],
    ["a missing X-Request-Id", { ...listOk, headers: { ...commonHeaders, "x-request-id": undefined as never } }],
    ["another Cache-Control", { ...listOk, headers: { ...commonHeaders, "cache-control": "max-age=60" } }],
    ["a body that is not JSON", { ...listOk, headers: { ...commonHeaders, "content-type": "text/html" } }],
    ["a Link that is not a next page", { ...listOk, headers: { ...commonHeaders, link: "</v1/pets>; rel=prev" } }],
    [
      "an error code that is not its status's",
      { status: 400, headers: commonHeaders, json: { code: "not_found", message: "x", status: 400 } },
    ],
    [
      "an error whose status field differs from the HTTP status",
      { status: 400, headers: commonHeaders, json: { code: "invalid_request", message: "x", status: 422 } },
    ],
    [
      "a 401 without WWW-Authenticate",
      { status: 401, headers: commonHeaders, json: { code: "unauthorized", message: "x", status: 401 } },
    ],
    [
      "a 503 without Retry-After",
      { status: 503, headers: commonHeaders, json: { code: "service_unavailable", message: "x", status: 503 } },
    ],
  ])("rejects %s", (_, response) => {
    expect(() => validator.check(listPets, response)).toThrow(ContractViolation);
  });

  it("rejects a 201 without Location, and getPet answers without the deprecation headers", () => {
    const created = { status: 201, headers: commonHeaders, json: rex };
    const found = { status: 200, headers: commonHeaders, json: rex };

    expect(() => validator.check({ method: "POST", url: `${API_BASE_PATH}/pets` }, created)).toThrow(/Location/);
    expect(() => validator.check({ method: "GET", url: `${API_BASE_PATH}/pets/7` }, found)).toThrow(/Sunset/);
  });

  it("holds a path outside the document to 404 not_found, and another method to 405 with the path's Allow", () => {
    const outside = { method: "GET", url: "/v2/pets" };
    const deletePets = { method: "DELETE", url: `${API_BASE_PATH}/pets` };
    const notAllowed = (allow: string): ObservedResponse => ({
      status: 405,
      headers: { ...commonHeaders, allow },
      json: { code: "method_not_allowed", message: "x", status: 405 },
    });

    expect(() => validator.check(outside, { ...notFoundAnswer, status: 200 })).toThrow(ContractViolation);
    expect(() =>
      validator.check(outside, { ...notFoundAnswer, json: { code: "invalid_request", message: "x", status: 404 } }),
    ).toThrow(ContractViolation);
    expect(() => validator.check(deletePets, notAllowed("GET, POST"))).not.toThrow();
    expect(() => validator.check(deletePets, notAllowed("GET"))).toThrow(/Allow/);
    expect(() => validator.check(deletePets, notFoundAnswer)).toThrow(ContractViolation);
  });
});

describe("cold start", () => {
  it.each(routeList.map((route) => [route.operationId, route.handlerFile]))(
    "keeps the OpenAPI builder out of the %s function's bundle",
    async (_, handlerFile) => {
      const { metafile } = await build({
        ...lambdaEsbuildOptions,
        entryPoints: [handlerFile],
        absWorkingDir: fileURLToPath(new URL("../../", import.meta.url)),
        write: false,
        metafile: true,
        logLevel: "silent",
      });

      const inputs = Object.keys(metafile.inputs);
      expect(inputs).toContain("lib/contract/validate.ts");
      expect(inputs.filter((input) => input.includes("openapi"))).toEqual([]);
    },
  );
});
