/**
 * The document's examples are what tools send and mock from (Postman, Prism, Redoc): every parameter,
 * request body and response has one, and every example is valid against the schema beside it.
 */
import { Ajv2020 } from "ajv/dist/2020";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument, type JsonObject } from "../../lib/contract/openapi";
import { addOpenApiFormats } from "../support/contract";

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

/** Every parameter, request body and response content of the document, with its examples. */
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

  it("covers every parameter, request body and response of the three operations", () => {
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
      ]),
    );
    expect(all.length).toBeGreaterThan(30);
  });

  it("gives every parameter, request body and response at least one example", () => {
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
