/**
 * The README's typed-client recipe: TypeScript types generated from the OpenAPI document with
 * openapi-typescript 7, and a small client written against them. The command and the client
 * below are the README's; if this test fails, the recipe no longer works as written.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { projectRoot } from "../support/processes";

/** The recipe's flag: without it, openapi-typescript makes every property with a default required, in request bodies too. */
const RECIPE_FLAGS = ["--default-non-nullable=false"];

/** The README's client, verbatim: list, create without a status, get. */
const client = `import type { components, paths } from "./petstore";

type Pet = components["schemas"]["Pet"];
type NewPet = paths["/pets"]["post"]["requestBody"]["content"]["application/json"];
type ListQuery = NonNullable<paths["/pets"]["get"]["parameters"]["query"]>;

export function petStore(baseUrl: string, key: string) {
  async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
    const response = await fetch(baseUrl + path, {
      ...init,
      headers: { Authorization: \`Bearer \${key}\`, "Content-Type": "application/json" },
    });
    const body = await response.json();
    // Every error is {"code","message","status"}; quote X-Request-Id when reporting one.
    if (!response.ok) throw new Error(\`\${body.code}: \${body.message} (\${response.headers.get("X-Request-Id")})\`);
    return body as T;
  }
  return {
    list: (query: ListQuery = {}) =>
      call<Pet[]>(\`/pets?\${new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)]))}\`),
    create: (pet: NewPet) => call<Pet>("/pets", { method: "POST", body: JSON.stringify(pet) }),
    get: (petId: Pet["id"]) => call<Pet>(\`/pets/\${petId}\`),
  };
}

export async function example(key: string) {
  const api = petStore("http://127.0.0.1:3000/v1", key);
  const rex = await api.create({ name: "Rex", categoryId: 1 }); // status defaults to "available"
  const available = await api.list({ status: "available", limit: 20 });
  const again = await api.get(rex.id);
  return { names: available.map((pet) => pet.name), status: again.status };
}
`;

/** Uses that the types must refuse: proof that they are not \`any\`. */
const misuse = `import { petStore } from "./client";

const api = petStore("http://127.0.0.1:3000/v1", "key");
// @ts-expect-error status is available, pending or sold
void api.create({ name: "Rex", categoryId: 1, status: "lost" });
// @ts-expect-error categoryId is required
void api.create({ name: "Rex" });
// @ts-expect-error limit is a number
void api.list({ limit: "20" });
// @ts-expect-error a Pet's id is a number
const id: string = (await api.get(1)).id;
void id;
`;

let folder: string;
/** Type errors by file ("recipe/client.ts: message"), with the types generated as the recipe says and without its flag. */
let errors: string[];

async function generateTypes(variant: string, flags: readonly string[]): Promise<void> {
  await promisify(execFile)(`${projectRoot}node_modules/.bin/openapi-typescript`, [
    join(folder, "openapi.json"),
    "-o",
    join(folder, variant, "petstore.d.ts"),
    ...flags,
  ]);
}

/** One program for every file: the standard library is read and checked once. */
function typeErrors(files: readonly string[]): string[] {
  const program = ts.createProgram(
    files.map((file) => join(folder, file)),
    {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.iterable.d.ts"],
      types: [],
    },
  );
  return ts
    .getPreEmitDiagnostics(program)
    .map(
      (diagnostic) =>
        `${diagnostic.file?.fileName.slice(folder.length + 1) ?? "?"}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`,
    );
}

// Generating and type-checking take a few seconds of CPU, more on a busy machine.
beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "petstore-typed-client-"));
  writeFileSync(join(folder, "openapi.json"), JSON.stringify(buildOpenApiDocument()));
  for (const variant of ["recipe", "without-flag"]) {
    mkdirSync(join(folder, variant));
    writeFileSync(join(folder, variant, "client.ts"), client);
  }
  writeFileSync(join(folder, "recipe", "misuse.ts"), misuse);
  await Promise.all([generateTypes("recipe", RECIPE_FLAGS), generateTypes("without-flag", [])]);
  errors = typeErrors(["recipe/client.ts", "recipe/misuse.ts", "without-flag/client.ts"]);
}, 120_000);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("the typed-client recipe (openapi-typescript 7)", () => {
  it("type-checks a client that lists, creates without a status and gets, and refuses wrong uses", () => {
    expect(errors.filter((error) => error.startsWith("recipe/"))).toEqual([]);
  });

  it("needs --default-non-nullable=false: without it, a create without a status does not type-check", () => {
    expect(errors.filter((error) => error.startsWith("without-flag/"))).toEqual([
      expect.stringMatching(/^without-flag\/client\.ts: .*'status' is missing/),
    ]);
  });
});
