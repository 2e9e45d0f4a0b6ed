/**
 * The typed-client recipe of docs/api.md ("Generating a client"), done as a reader does it: in a
 * new npm project outside this repository, set up by the one shell block of docs/client.md ("A
 * TypeScript project") that the official client's install starts from too, then the recipe's own
 * commands, all run as written (only the document's URL is this test's local server), with exactly
 * the pinned package versions installed from the npm registry; then the page's client, as
 * `src/client.ts`, type-checked by that project's own `tsc` and run against the local server. If
 * this test fails, the recipe no longer works as written.
 */
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pet } from "../../lib/contract/schemas";
import type { LocalApi } from "../../local/server";
import { fetchJson, issueTestKey, startTestApi } from "../support/api";
import { newRegistryProject, type RegistryProject } from "../support/registryProject";

/** The project setup as docs/client.md gives it: its shell block under "A TypeScript project". */
const clientGuide = readFileSync(new URL("../../docs/client.md", import.meta.url), "utf8");
const setupSection = clientGuide.slice(
  clientGuide.indexOf("## A TypeScript project"),
  clientGuide.indexOf("\n## ", clientGuide.indexOf("## A TypeScript project") + 1),
);
const setupBlock = /```sh\n([\s\S]*?)```/.exec(setupSection)?.[1];
if (!setupBlock) throw new Error('docs/client.md has no shell block in "A TypeScript project"');

/** The recipe as docs/api.md gives it: its shell commands and its client. */
const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const recipe = guide.slice(guide.indexOf("## Generating a client"));
const shellBlock = /```sh\n([\s\S]*?)```/.exec(recipe)?.[1];
const clientBlock = /```ts\n([\s\S]*?)```/.exec(recipe)?.[1];
if (!shellBlock || !clientBlock) throw new Error("docs/api.md has no shell or client block in Generating a client");
const client = clientBlock;

/** Each command of a shell block (lines, and the parts of a line joined by `&&`), comments removed, as words. */
const commandsOf = (block: string) =>
  block
    .split("\n")
    .flatMap((line) => line.replace(/#.*$/, "").split(" && "))
    .map((command) => command.trim())
    .filter((command) => command !== "")
    .map((command) => command.split(/\s+/));
const setupCommands = commandsOf(setupBlock);
const recipeCommands = commandsOf(shellBlock);
const commands = [...setupCommands, ...recipeCommands];

/** The packages the setup and the recipe install, as they name them (`name@version`), in order. */
const installed = commands
  .filter((words) => words[0] === "npm" && words[1] === "install")
  .flatMap((words) => words.slice(2).filter((word) => !word.startsWith("-")));

/** `npx openapi-typescript <document URL> <flags> -o <file>`, as the page writes it. */
const generateCommand = commands.find((words) => words[0] === "npx" && words[1] === "openapi-typescript");
const typesFile = generateCommand?.[generateCommand.indexOf("-o") + 1];

/** Uses that the types must refuse: proof that they are not `any`. */
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

interface RecipeError extends Error {
  readonly code: string;
  readonly status: number;
  readonly requestId: string | null;
}
interface Recipe {
  PetStoreError: new (...args: never[]) => RecipeError;
  petStore(baseUrl: string, key: string): { list(query?: object): Promise<Pet[]> };
  example(baseUrl: string, key: string): Promise<{ sameId: boolean; names: string[]; status: string }>;
}

let api: LocalApi;
let key: string;
let project: RegistryProject;
let documentUrl: string;
/** `tsc`'s errors in the project set up as the pages say, and with the types generated without its flags. */
let recipeErrors: string[];
let withoutFlagsErrors: string[];
let folder: string;
let recipeModule: Recipe;

/** Runs one command of the recipe in the project: installs through the registry helper, the rest as written. */
async function runRecipeCommand([command, ...args]: readonly string[]): Promise<void> {
  // newRegistryProject has run it.
  if (command === "npm" && args.join(" ") === "init -y") return;
  if (command === "npm" && args[0] === "install") {
    await project.install(
      args.slice(1).filter((arg) => !arg.startsWith("-")),
      { dev: args.includes("--save-dev") },
    );
    return;
  }
  // The document's URL is this test's server (the page's is npm start's default address).
  await project.run(
    command as string,
    args.map((arg) => (/^https?:\/\//.test(arg) ? documentUrl : arg)),
  );
}

/** The project's own `tsc` over the project (the tsconfig.json `tsc --init` wrote): its error lines. */
async function typeCheck(): Promise<string[]> {
  try {
    await project.run("npx", ["tsc", "--noEmit"]);
    return [];
  } catch (error) {
    return String((error as Error).message)
      .split("\n")
      .filter((line) => line.includes("error TS"));
  }
}

// Installing from the registry (npm's cache first), generating and type-checking take a while.
beforeAll(async () => {
  api = await startTestApi();
  key = (await issueTestKey("typed client recipe")).key;
  documentUrl = `${new URL(api.baseUrl).origin}/openapi.json`;
  project = await newRegistryProject("petstore-recipe");
  for (const command of commands) await runRecipeCommand(command);
  writeFileSync(join(project.dir, "src", "client.ts"), client);
  writeFileSync(join(project.dir, "src", "misuse.ts"), misuse);
  recipeErrors = await typeCheck();

  // The same client against types generated without the page's flags.
  unlinkSync(join(project.dir, "src", "misuse.ts"));
  await project.run("npx", ["openapi-typescript", documentUrl, "-o", typesFile as string]);
  withoutFlagsErrors = await typeCheck();

  // The client run as tsc would emit it for an ES module package: types only erased.
  folder = mkdtempSync(join(tmpdir(), "petstore-recipe-run-"));
  const { outputText } = ts.transpileModule(client, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  writeFileSync(join(folder, "client.mjs"), outputText);
  recipeModule = (await import(pathToFileURL(join(folder, "client.mjs")).href)) as Recipe;
}, 240_000);
afterAll(async () => {
  await api?.close();
  project?.remove();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("the typed-client recipe, in a new project outside the repository", () => {
  it("pins an exact version of every package it installs, TypeScript 5 among them", () => {
    expect(installed.map((spec) => spec.replace(/@\d+\.\d+\.\d+$/, "@<exact>"))).toEqual([
      "typescript@<exact>",
      "@types/node@<exact>",
      "openapi-typescript@<exact>",
    ]);
    expect(installed[0]).toMatch(/^typescript@5\./);
  });

  it("starts from client.md's project setup, an ES module package with tsc --init's tsconfig.json, and sets up no other", () => {
    expect(setupCommands.map((words) => words.slice(0, 2).join(" "))).toEqual([
      "npm init",
      "npm pkg",
      "npm install",
      "npx tsc",
    ]);
    expect(setupCommands[1]).toEqual(["npm", "pkg", "set", "type=module"]);
    expect(setupCommands[3]?.slice(0, 3)).toEqual(["npx", "tsc", "--init"]);
    // The recipe adds its generator and generates; the project is the one client.md sets up.
    expect(recipeCommands.map((words) => words.slice(0, 2).join(" "))).toEqual([
      "npm install",
      "npx openapi-typescript",
    ]);
    expect(recipe).toContain("](client.md#a-typescript-project)");
  });

  it("generates the types with its flag", () => {
    expect(generateCommand?.slice(3)).toEqual(["--default-non-nullable=false", "-o", "src/petstore.d.ts"]);
  });

  it("installs the pinned versions, whose openapi-typescript generates the types", () => {
    const versions = installed.map((spec) => {
      const name = spec.slice(0, spec.lastIndexOf("@"));
      return `${name}@${JSON.parse(readFileSync(join(project.dir, "node_modules", name, "package.json"), "utf8")).version}`;
    });

    expect(versions).toEqual(installed);
    expect(readFileSync(join(project.dir, typesFile as string), "utf8")).toContain('"/pets/{petId}"');
  });

  it("type-checks the client with the project's tsc, and refuses wrong uses", () => {
    expect(recipeErrors).toEqual([]);
  });

  it("needs --default-non-nullable=false: without it, a create without a status does not type-check", () => {
    expect(withoutFlagsErrors).not.toEqual([]);
    // Each a create without `status`, refused because the generated body type requires it.
    const statusRequired =
      /^src\/client\.ts\(.*'\{ name: string; categoryId: number; \}' is not assignable to .*status: /;
    expect(withoutFlagsErrors.filter((error) => !statusRequired.test(error))).toEqual([]);
  });
});

describe("the typed-client recipe, run against the local server", () => {
  it("sends Idempotency-Key with a create, so its retry answers the same pet and stores one", async () => {
    const result = await recipeModule.example(api.baseUrl, key);
    const listed = await fetchJson(`${api.baseUrl}/pets?limit=100`, { headers: { Authorization: `Bearer ${key}` } });

    expect(result).toEqual({ sameId: true, names: expect.arrayContaining(["Rex"]), status: "available" });
    expect((listed.json as Pet[]).filter((pet) => pet.name === "Rex")).toHaveLength(1);
  });

  it("throws one error carrying the code, the status and the X-Request-Id", async () => {
    const failure = await recipeModule
      .petStore(api.baseUrl, `${key}x`)
      .list()
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(recipeModule.PetStoreError);
    expect(failure).toMatchObject({ code: "unauthorized", status: 401, requestId: expect.any(String) });
  });
});
