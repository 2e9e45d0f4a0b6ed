/**
 * The folder layout is the architecture (docs/architecture.md): product code never reaches into the
 * tooling, so a Lambda bundle holds only product code and `cdk synth` loads nothing but infra/.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
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

/** Static imports and re-exports with a relative specifier, type-only ones included (they tie files together too). */
function staticImports(text: string): string[] {
  return [...text.matchAll(/^\s*(?:import|export)\b[^;"']*?["'](\.{1,2}\/[^"']+)["']/gm)].map(
    (match) => match[1] as string,
  );
}

/** The file a relative specifier names: written with or without its extension (.js may stand for .ts). */
function resolveImport(file: string, specifier: string): string | undefined {
  const base = resolve(dirname(file), specifier);
  return [base, `${base}.ts`, `${base}.mjs`, `${base}.js`, base.replace(/\.js$/, ".ts"), join(base, "index.ts")].find(
    (candidate) => /\.(ts|mjs|js)$/.test(candidate) && existsSync(candidate),
  );
}

/** The import circles of `graph`: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = stack.splice(stack.indexOf(node));
    if (component.length > 1 || graph.get(node)?.includes(node)) circles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return circles;
}

/** Every static relative import between the project's source files (client/: its src/). */
function importGraph(): Map<string, string[]> {
  const files = ["functions", "lib", "infra", "local", "scripts", "client"].flatMap(sourceFiles);
  return new Map(
    files.map((file) => [
      relative(root, file),
      staticImports(readFileSync(file, "utf8")).flatMap((specifier) => {
        const target = resolveImport(file, specifier);
        return target ? [relative(root, target)] : [];
      }),
    ]),
  );
}

/** The npm scripts and workflows a scripts/ folder's README says run it. */
function runnersNamed(readme: string): { npmScripts: string[]; workflows: string[] } {
  return {
    npmScripts: [...readme.matchAll(/npm run ([\w:-]+)/g)].map((match) => match[1] as string),
    workflows: [...readme.matchAll(/\.github\/workflows\/([\w.-]+\.yml)/g)].map((match) => match[1] as string),
  };
}

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
  it("has no import circles among the source files (static imports, type-only ones included)", () => {
    expect(importCircles(importGraph())).toEqual([]);
  });

  it("finds a planted circle, and the imports a circle is made of (the check is not vacuous)", () => {
    const planted = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts", "d.ts"]],
      ["e.ts", ["a.ts"]],
    ]);
    expect(importCircles(planted)).toEqual([["a.ts", "b.ts", "c.ts"], ["d.ts"]]);
    const text =
      'import type { A } from "./a";\nimport {\n  b,\n} from "../b";\nexport { c } from "./c";\nconst d = await import("./d");';
    expect(staticImports(text)).toEqual(["./a", "../b", "./c"]);
    expect(importGraph().get("functions/getPet.ts")).toContain("lib/http/apiHandler.ts");
  });

  const scriptFolders = [
    "scripts",
    ...readdirSync(join(root, "scripts"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => relative(root, join(entry.parentPath, entry.name))),
  ];
  const packageScripts = Object.keys(
    (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts,
  );

  it.each(scriptFolders)("%s/ has a README of at most 70 words naming what runs it", (folder) => {
    const path = join(root, folder, "README.md");
    expect(existsSync(path), `${folder}/README.md`).toBe(true);
    const readme = readFileSync(path, "utf8");
    expect(readme.split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(70);
    const { npmScripts, workflows } = runnersNamed(readme);
    expect(npmScripts.length + workflows.length, "names an npm script or a workflow").toBeGreaterThan(0);
    for (const name of npmScripts) expect(packageScripts, `npm run ${name}`).toContain(name);
    for (const name of workflows) expect(existsSync(join(root, ".github/workflows", name)), name).toBe(true);
  });

  it("reads the runners a README names (the README check is not vacuous)", () => {
    expect(scriptFolders).toContain("scripts/rehearse");
    expect(runnersNamed("Run by `npm run bench:capacity` and .github/workflows/ci.yml.")).toEqual({
      npmScripts: ["bench:capacity"],
      workflows: ["ci.yml"],
    });
  });
});
