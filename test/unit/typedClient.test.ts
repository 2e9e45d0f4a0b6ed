/**
 * The typed-client recipe of docs/api.md: TypeScript types generated from the OpenAPI document with
 * openapi-typescript 7, and a small client written against them, type-checked in a project set up
 * as the page says (an ES module package and the tsconfig.json `tsc --init` writes). The commands,
 * flags and client are read from the page; if this test fails, the recipe no longer works as written.
 * (test/integration/typedClientRecipe.test.ts runs the client against the local server.)
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { projectRoot } from "../support/processes";

/** The recipe as docs/api.md gives it ("Generating a client"): the command's flags and the client. */
const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const recipe = guide.slice(guide.indexOf("## Generating a client"));
const command = /^npx openapi-typescript \S+ (.*) -o \S+$/m.exec(recipe);
const clientBlock = /```ts\n([\s\S]*?)```/.exec(recipe);
if (!command?.[1] || !clientBlock?.[1])
  throw new Error("docs/api.md has no openapi-typescript command or client block");
/** Without `--default-non-nullable=false`, openapi-typescript makes every property with a default required, in request bodies too. */
const RECIPE_FLAGS = command[1].split(" ");
const client = clientBlock[1];
/** The project setup the page gives, which the type-check below reproduces. */
const setup = /^npm init -y && (npm pkg set type=module) .*\nnpx (tsc --init)$/m.exec(recipe);

/** Uses that the types must refuse: proof that they are not \`any\`. */
const misuse = `import { petStore } from "./client.js";

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

/** The compiler options of the tsconfig.json `tsc --init` writes in `folder`. */
async function freshProjectOptions(): Promise<ts.CompilerOptions> {
  await promisify(execFile)(`${projectRoot}node_modules/.bin/tsc`, ["--init"], { cwd: folder });
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(folder, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, " "));
      },
    },
  );
  if (!parsed) throw new Error("tsc --init wrote no readable tsconfig.json");
  return parsed.options;
}

/** One program for every file: the standard library is read and checked once. */
function typeErrors(files: readonly string[], options: ts.CompilerOptions): string[] {
  const program = ts.createProgram(
    files.map((file) => join(folder, file)),
    { ...options, noEmit: true },
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
  // `npm init -y && npm pkg set type=module`, as far as the type-check is concerned.
  writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "petstore-client", type: "module" }));
  for (const variant of ["recipe", "without-flag"]) {
    mkdirSync(join(folder, variant));
    writeFileSync(join(folder, variant, "client.ts"), client);
  }
  writeFileSync(join(folder, "recipe", "misuse.ts"), misuse);
  const [options] = await Promise.all([
    freshProjectOptions(),
    generateTypes("recipe", RECIPE_FLAGS),
    generateTypes("without-flag", []),
  ]);
  errors = typeErrors(["recipe/client.ts", "recipe/misuse.ts", "without-flag/client.ts"], options);
}, 120_000);
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("the typed-client recipe (openapi-typescript 7)", () => {
  it("type-checks a client that lists, creates without a status and gets, and refuses wrong uses", () => {
    expect(errors.filter((error) => error.startsWith("recipe/"))).toEqual([]);
  });

  it("sets up the project it is checked in: an ES module package with the tsconfig.json of tsc --init", () => {
    expect(setup?.slice(1)).toEqual(["npm pkg set type=module", "tsc --init"]);
  });

  it("gives the flag the generated types need", () => {
    expect(RECIPE_FLAGS).toEqual(["--default-non-nullable=false"]);
  });

  it("needs --default-non-nullable=false: without it, a create without a status does not type-check", () => {
    const withoutFlag = errors.filter((error) => error.startsWith("without-flag/"));

    expect(withoutFlag).not.toEqual([]);
    expect(withoutFlag.filter((error) => !/^without-flag\/client\.ts: .*'status' is missing/.test(error))).toEqual([]);
  });
});
