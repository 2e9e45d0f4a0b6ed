/**
 * The document's examples are what tools send and mock from (Postman, Prism, Redoc): every parameter,
 * request body, response and response header has one, every example is valid against the schema
 * beside it, and the response headers' examples are what the handlers really send.
 */
import { Ajv2020 } from "ajv/dist/2020";
import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { errorHeaderExamples, newPetExample, parameterExamples, petsExample } from "../../lib/contract/examples";
import { buildOpenApiDocument, type JsonObject } from "../../lib/contract/openapi";
import type { ErrorStatus } from "../../lib/contract/schemas";
import type { OperationId } from "../../lib/routes";
import { bearer, invoke, jsonContent, type TestResponse } from "../support/api";
import { addOpenApiFormats } from "../support/contract";
import { fakeDependencies } from "../support/fakes";

const document = buildOpenApiDocument();
const ajv = new Ajv2020({ strict: false, allErrors: true });
addOpenApiFormats(ajv);
ajv.addSchema(document, "openapi.json");

/** A JSON Pointer token (RFC 6901). */
const token = (name: string | number) => String(name).replaceAll("~", "~0").replaceAll("/", "~1");

interface Sample {
  /** Where the example is, e.g. `GET /pets parameter limit`. */
  readonly where: string;
  /** JSON Pointer of the schema it must match. */
  readonly schema: string;
  readonly values: readonly unknown[];
}

/** A response header as the document gives it, a `$ref` resolved, with the pointer of its object. */
function resolvedHeader(pointer: string, header: JsonObject): { pointer: string; header: JsonObject } {
  const ref = header.$ref as string | undefined;
  if (ref === undefined) return { pointer, header };
  const name = ref.replace("#/components/headers/", "");
  return { pointer: `/components/headers/${token(name)}`, header: document.components.headers[name] as JsonObject };
}

/** Every header of every response: `{ "GET /pets 200": { Link: header object } }`. */
function responseHeaders(): Record<string, Record<string, { pointer: string; header: JsonObject }>> {
  const found: Record<string, Record<string, { pointer: string; header: JsonObject }>> = {};
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, JsonObject>)) {
        const at = `/paths/${token(path)}/${method}/responses/${status}/headers`;
        found[`${method.toUpperCase()} ${path} ${status}`] = Object.fromEntries(
          Object.entries((response.headers ?? {}) as Record<string, JsonObject>).map(([name, header]) => [
            name,
            resolvedHeader(`${at}/${token(name)}`, header),
          ]),
        );
      }
    }
  }
  return found;
}

/** The example of one response header, e.g. `headerExample("GET /pets 200", "Link")`. */
function headerExample(response: string, name: string): unknown {
  const header = responseHeaders()[response]?.[name];
  if (!header) throw new Error(`${response} has no ${name} header`);
  return header.header.example;
}

/** Every parameter, request body, response content and response header of the document, with its examples. */
function samples(): Sample[] {
  const found: Sample[] = [];
  const fromContent = (where: string, pointer: string, content: JsonObject | undefined) => {
    for (const [mediaType, media] of Object.entries(content ?? {}) as [string, JsonObject][]) {
      const examples = Object.values((media.examples ?? {}) as Record<string, { value: unknown }>).map(
        (example) => example.value,
      );
      found.push({
        where: `${where} ${mediaType}`,
        schema: `${pointer}/content/${token(mediaType)}/schema`,
        values: media.example === undefined ? examples : [media.example, ...examples],
      });
    }
  };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const at = `/paths/${token(path)}/${method}`;
      const name = `${method.toUpperCase()} ${path}`;
      ((operation.parameters ?? []) as JsonObject[]).forEach((parameter, index) => {
        found.push({
          where: `${name} parameter ${parameter.name}`,
          schema: `${at}/parameters/${index}/schema`,
          values: parameter.example === undefined ? [] : [parameter.example],
        });
      });
      const body = operation.requestBody as JsonObject | undefined;
      if (body) fromContent(`${name} request body`, `${at}/requestBody`, body.content as JsonObject);
      for (const [status, response] of Object.entries(operation.responses as Record<string, JsonObject>)) {
        fromContent(`${name} ${status}`, `${at}/responses/${status}`, response.content as JsonObject);
      }
    }
  }
  for (const [response, headers] of Object.entries(responseHeaders())) {
    for (const [name, { pointer, header }] of Object.entries(headers)) {
      found.push({
        where: `${response} header ${name}`,
        schema: `${pointer}/schema`,
        values: header.example === undefined ? [] : [header.example],
      });
    }
  }
  return found;
}

function problems(sample: Sample): string[] {
  const validate = ajv.compile({ $ref: `openapi.json#${sample.schema}` });
  return sample.values.flatMap((value) =>
    validate(value)
      ? []
      : [
          `${sample.where}: ${JSON.stringify(value)}: ${(validate.errors ?? []).map((error) => `${error.instancePath || "/"} ${error.message}`).join("; ")}`,
        ],
  );
}

describe("the OpenAPI document's examples", () => {
  const all = samples();

  it("covers every parameter, request body, response and response header of the three operations", () => {
    const where = all.map((sample) => sample.where);

    expect(where).toEqual(
      expect.arrayContaining([
        "GET /pets parameter limit",
        "GET /pets parameter status",
        "GET /pets parameter cursor",
        "POST /pets parameter Idempotency-Key",
        "POST /pets request body application/json",
        "POST /pets 201 application/json",
        "POST /pets 422 application/json",
        "GET /pets/{petId} parameter petId",
        "GET /pets/{petId} 410 application/json",
        "GET /pets 200 header Link",
        "GET /pets 200 header X-Request-Id",
        "GET /pets 503 header Retry-After",
        "GET /pets 405 header Allow",
        "POST /pets 201 header Location",
        "POST /pets 201 header Idempotent-Replayed",
        "POST /pets 401 header WWW-Authenticate",
        "POST /pets 403 header WWW-Authenticate",
        "GET /pets/{petId} 200 header Deprecation",
        "GET /pets/{petId} 200 header Sunset",
      ]),
    );
    expect(all.length).toBeGreaterThan(150);
  });

  it("gives every parameter, request body, response and response header at least one example", () => {
    expect(all.filter((sample) => sample.values.length === 0).map((sample) => sample.where)).toEqual([]);
  });

  it("has only examples valid against their schema", () => {
    expect(all.flatMap(problems)).toEqual([]);
  });

  it("would see an example that breaks its schema", () => {
    const sample = all.find((each) => each.where === "POST /pets request body application/json") as Sample;

    expect(problems({ ...sample, values: [{ name: "Rex", categoryId: 1, id: 7 }] })).toEqual([
      expect.stringContaining("must NOT have additional properties"),
    ]);
  });
});

describe("the response headers' examples", () => {
  const key = "the-one-valid-token";
  const headers = { ...bearer(key), ...jsonContent };

  /** The example pets created in a new store, then one more, so that their page has a next one. */
  async function exampleStore() {
    const deps = fakeDependencies(key);
    const createPet = createCreatePet(deps);
    const create = (body: object, extra: Record<string, string> = {}) =>
      invoke(createPet, {
        method: "POST",
        path: "/pets",
        headers: { ...headers, ...extra },
        body: JSON.stringify(body),
      });
    const idempotencyKey = { "Idempotency-Key": parameterExamples["Idempotency-Key"] };
    const created: TestResponse[] = [];
    // The first with the example key, which the replay below sends again.
    for (const [index, { id: _, ...pet }] of petsExample.entries())
      created.push(await create(pet, index === 0 ? idempotencyKey : {}));
    const replayed = await create(newPetExample, idempotencyKey);
    await create({ name: "Max", categoryId: 1 });
    return { deps, created, replayed };
  }

  it("are what the handlers send: Location, Idempotent-Replayed, the next page's Link and the deprecation headers", async () => {
    const { deps, created, replayed } = await exampleStore();
    const page = await invoke(createListPets(deps), {
      path: `/pets?limit=${petsExample.length}`,
      headers: bearer(key),
    });
    const pet = await invoke(createGetPet(deps), {
      path: "/pets/1",
      resource: "/pets/{petId}",
      pathParameters: { petId: "1" },
      headers: bearer(key),
    });

    expect(created.map((answer) => answer.json)).toEqual(petsExample);
    expect(created[0]?.headers.location).toBe(headerExample("POST /pets 201", "Location"));
    expect(replayed.headers["idempotent-replayed"]).toBe(headerExample("POST /pets 201", "Idempotent-Replayed"));
    expect(page.json).toEqual(petsExample);
    expect(page.headers.link).toBe(headerExample("GET /pets 200", "Link"));
    for (const name of ["Deprecation", "Sunset", "Link"]) {
      expect(pet.headers[name.toLowerCase()], name).toBe(headerExample("GET /pets/{petId} 200", name));
    }
  });

  it("are, for every error answer, the headers the API's own answer carries (Retry-After, WWW-Authenticate, Allow)", () => {
    const routesByOperation: Record<string, OperationId> = {};
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        routesByOperation[`${method.toUpperCase()} ${path}`] = operation.operationId as OperationId;
      }
    }
    const mismatches: string[] = [];
    let compared = 0;
    for (const [response, documented] of Object.entries(responseHeaders())) {
      const [method, path, status] = response.split(" ");
      if (Number(status) < 400) continue;
      const operationId = routesByOperation[`${method} ${path}`] as OperationId;
      for (const [name, value] of Object.entries(errorHeaderExamples(operationId, Number(status) as ErrorStatus))) {
        compared += 1;
        if (documented[name]?.header.example !== value)
          mismatches.push(`${response} ${name}: ${JSON.stringify(documented[name]?.header.example)}, sent ${value}`);
      }
    }

    expect(mismatches).toEqual([]);
    // 401 (3 operations), createPet's 403 (insufficient_scope), 405 (3), 409 and 503 (3).
    expect(compared).toBe(11);
  });
});
