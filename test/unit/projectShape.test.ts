/**
 * The project stays one a newcomer can carry: documentation organised by audience and short enough
 * to read, and the tooling in scripts/ lighter than the product it serves, as docs/architecture.md
 * says.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../support/processes";

/** Files git would commit (tracked or new, never ignored output), so generated folders never count. */
function projectFiles(...patterns: string[]): string[] {
  return execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "--", ...patterns], {
    cwd: projectRoot,
    encoding: "utf8",
  })
    .split("\n")
    .filter((file) => file !== "" && !file.split("/").includes("node_modules"));
}

const read = (file: string) => readFileSync(join(projectRoot, file), "utf8");
/** Words as `wc -w` counts them. */
const words = (text: string) => text.split(/\s+/).filter(Boolean).length;
const lines = (text: string) => text.split("\n").length - (text.endsWith("\n") ? 1 : 0);

const README_WORDS = 1_200;
const DOCUMENTATION_WORDS = 22_000;

/** Who each page is for; its first line after the title says so in these words. */
const audienceOf: Record<string, "API clients" | "platform engineers" | "contributors"> = {
  "docs/api.md": "API clients",
  "docs/client.md": "API clients",
  "docs/deploy.md": "platform engineers",
  "docs/delivery.md": "platform engineers",
  "docs/alarms.md": "platform engineers",
  "docs/operations.md": "platform engineers",
  "docs/architecture.md": "contributors",
  "docs/testing.md": "contributors",
  "docs/performance.md": "contributors",
  "docs/capacity.md": "contributors",
  "docs/reliability.md": "contributors",
};

/** The first line of text under the page's `# Title`. */
function firstLine(text: string): string {
  const body = text.split("\n");
  const title = body.findIndex((line) => line.startsWith("# "));
  return body.slice(title + 1).find((line) => line.trim() !== "") ?? "";
}

describe("documentation by audience", () => {
  it("every page under docs/ is assigned an audience (a new page must say who it is for)", () => {
    expect(projectFiles("docs/*.md").sort()).toEqual(Object.keys(audienceOf).sort());
  });

  it.each(Object.entries(audienceOf))("%s says in its first line that it is for %s", (page, audience) => {
    expect(firstLine(read(page))).toMatch(new RegExp(`^For ${audience}:`));
  });

  it("the README sends each reader to every page of docs/", () => {
    const readme = read("README.md");
    const missing = Object.keys(audienceOf).filter((page) => !readme.includes(`](${page}`));
    expect(missing).toEqual([]);
  });

  it(`the README is at most ${README_WORDS} words`, () => {
    expect(words(read("README.md"))).toBeLessThanOrEqual(README_WORDS);
  });

  it(`all documentation together (every Markdown file in the project) is at most ${DOCUMENTATION_WORDS} words`, () => {
    const pages = projectFiles("*.md");
    expect(pages).toContain("docs/deploy.md");
    const total = pages.reduce((sum, page) => sum + words(read(page)), 0);
    expect(total).toBeLessThanOrEqual(DOCUMENTATION_WORDS);
  });
});

describe("weight of the tooling", () => {
  const PRODUCT = ["functions", "lib", "infra", "local", "client/src"];
  const sourceLines = (folders: string[]) =>
    projectFiles(...folders)
      .filter((file) => /\.(ts|mjs|js)$/.test(file))
      .reduce((sum, file) => sum + lines(read(file)), 0);

  it("scripts/ (every file in it) holds fewer lines than the product code in functions/, lib/, infra/, local/ and client/", () => {
    const product = sourceLines(PRODUCT);
    const tooling = projectFiles("scripts").reduce((sum, file) => sum + lines(read(file)), 0);
    expect(product).toBeGreaterThan(5_000);
    expect(tooling).toBeLessThan(product);
  });
});
