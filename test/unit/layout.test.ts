/**
 * The folder layout is the architecture (docs/architecture.md): product code never reaches into the
 * tooling, so a Lambda bundle holds only product code and `cdk synth` loads nothing but infra/.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../", import.meta.url));
const folders = ["functions", "lib", "infra", "local", "scripts", "test", "client"] as const;
type Folder = (typeof folders)[number];
/** A file at the top of the project (vitest.config.ts), not in a folder. */
const TOP_LEVEL = "(top level)";

const mayImport: Record<Folder, readonly string[]> = {
  functions: ["functions", "lib"],
  lib: ["lib"],
  infra: ["infra", "lib"],
  local: ["local", "lib", "functions"],
  scripts: ["scripts", "lib", "functions", "local", "infra"],
  test: ["test", "lib", "functions", "local", "scripts", "infra", "client", TOP_LEVEL],
  // The client is published on its own: nothing of this repository's code is in its package.
  client: ["client"],
};

/** Where each folder's source is: client/ also holds its build output, rewritten while the package test packs it. */
const sourceRoot = (folder: string) => (folder === "client" ? "client/src" : folder);

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, sourceRoot(folder)), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|mjs|js)$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** Relative specifiers of static imports, dynamic imports and re-exports. */
function relativeImports(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:from\s*|import\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)].map((match) => match[1] as string);
}

const topFolder = (file: string) => {
  const parts = relative(root, file).split("/");
  return parts.length === 1 ? TOP_LEVEL : (parts[0] as string);
};

describe("layout", () => {
  it.each(folders)("%s/ imports only from the folders it may", (folder) => {
    const crossings = sourceFiles(folder).flatMap((file) =>
      relativeImports(file)
        .map((specifier) => topFolder(resolve(dirname(file), specifier)))
        .filter((target) => !mayImport[folder].includes(target))
        .map((target) => `${relative(root, file)} imports from ${target}/`),
    );
    expect(crossings).toEqual([]);
  });

  it("finds the imports it checks (the check is not vacuous)", () => {
    const imports = sourceFiles("functions").flatMap(relativeImports);
    expect(imports.some((specifier) => specifier.startsWith("../lib/"))).toBe(true);
  });
});
