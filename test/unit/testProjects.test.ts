/**
 * What `npm test` and `npm run test:slow` run between them (vitest.config.ts): every test file in
 * exactly one of them, so that moving the slow files out of `npm test` drops none.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import config from "../../vitest.config";
import { projectRoot } from "../support/processes";

type Project = { test: { name: string; include: string[]; exclude?: string[] } };
const projects = (config.test?.projects ?? []) as Project[];
const project = (name: string) => {
  const found = projects.find((candidate) => candidate.test.name === name);
  if (!found) throw new Error(`no project ${name}`);
  return found.test;
};
const scripts = (
  JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }
).scripts;
const infraFiles = readdirSync(join(projectRoot, "test/infra"))
  .filter((name) => name.endsWith(".test.ts"))
  .map((name) => `test/infra/${name}`);

describe("the test projects", () => {
  it("npm test runs unit, integration and infra; npm run test:slow runs slow; together every project", () => {
    const selected = (script: string) => [...script.matchAll(/--project (\w+)/g)].map((match) => match[1]);

    expect(selected(scripts.test ?? "")).toEqual(["unit", "integration", "infra"]);
    expect(selected(scripts["test:slow"] ?? "")).toEqual(["slow"]);
    expect(projects.map((candidate) => candidate.test.name).sort()).toEqual(["infra", "integration", "slow", "unit"]);
  });

  it("runs files in at least two workers, so that a 2-core machine uses both", () => {
    expect(config.test?.maxWorkers).toBeGreaterThanOrEqual(2);
  });

  it("puts each slow infrastructure file in the slow project only, and every other one in infra", () => {
    const slow = project("slow").include;

    expect(slow.length).toBeGreaterThan(0);
    for (const file of slow) expect(infraFiles, file).toContain(file);
    expect(project("infra").include).toEqual(["test/infra/**/*.test.ts"]);
    for (const file of slow) expect(project("infra").exclude, file).toContain(file);
    // Nothing else is excluded beyond Vitest's defaults (node_modules and the like).
    expect(project("infra").exclude?.filter((pattern) => pattern.startsWith("test/"))).toEqual(slow);
  });
});
