/**
 * The typed-client recipe of docs/api.md, run: its client, as the page gives it, against the local
 * server. (test/unit/typedClient.test.ts type-checks it in a fresh project.)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pet } from "../../lib/contract/schemas";
import type { LocalApi } from "../../local/server";
import { fetchJson, issueTestKey, startTestApi } from "../support/api";

const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const clientBlock = /```ts\n([\s\S]*?)```/.exec(guide.slice(guide.indexOf("## Generating a client")));
if (!clientBlock?.[1]) throw new Error("docs/api.md has no client block");

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
let folder: string;
let recipe: Recipe;

beforeAll(async () => {
  api = await startTestApi();
  key = (await issueTestKey("typed client recipe")).key;
  folder = mkdtempSync(join(tmpdir(), "petstore-recipe-"));
  // Types only erased, as tsc would emit it for an ES module package.
  const { outputText } = ts.transpileModule(clientBlock[1] as string, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  writeFileSync(join(folder, "client.mjs"), outputText);
  recipe = (await import(pathToFileURL(join(folder, "client.mjs")).href)) as Recipe;
});
afterAll(async () => {
  await api?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("the typed-client recipe, run against the local server", () => {
  it("sends Idempotency-Key with a create, so its retry answers the same pet and stores one", async () => {
    const result = await recipe.example(api.baseUrl, key);
    const listed = await fetchJson(`${api.baseUrl}/pets?limit=100`, { headers: { Authorization: `Bearer ${key}` } });

    expect(result).toEqual({ sameId: true, names: expect.arrayContaining(["Rex"]), status: "available" });
    expect((listed.json as Pet[]).filter((pet) => pet.name === "Rex")).toHaveLength(1);
  });

  it("throws one error carrying the code, the status and the X-Request-Id", async () => {
    const failure = await recipe
      .petStore(api.baseUrl, `${key}x`)
      .list()
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(recipe.PetStoreError);
    expect(failure).toMatchObject({ code: "unauthorized", status: 401, requestId: expect.any(String) });
  });
});
