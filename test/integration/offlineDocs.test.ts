/**
 * The API reference works offline: the page `npm run docs` writes loads nothing from elsewhere.
 * (The page npm start serves at /docs is checked in api.test.ts.)
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { routes } from "../../lib/routes";
import { withoutOutsideResources } from "../../local/offlineRedoc";
import { outsideUrls } from "../support/outsideUrls";
import { runToEnd } from "../support/processes";

const folders: string[] = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("the offline API reference", () => {
  it("starts from a Redoc that would fetch from Redocly's servers, which the check sees", () => {
    const cliRoot = dirname(createRequire(import.meta.url).resolve("@redocly/cli/package.json"));
    const redoc = readFileSync(join(cliRoot, "lib/chunks/redoc.standalone.js"), "utf8");

    expect(outsideUrls(redoc)).toEqual(expect.arrayContaining([expect.stringMatching(/^https:\/\/cdn\.redoc\.ly\//)]));
    expect(outsideUrls(withoutOutsideResources(redoc))).toEqual([]);
  });

  it("sees an image, a style sheet or a script from any other host", () => {
    expect(
      outsideUrls(
        '<img src="https://cdn.example.net/logo.png"><link href="https://fonts.googleapis.com/css2?family=Inter">' +
          'import("https://redocly.com/assets/app.js"); fetch("https://telemetry.example.org/v1/traces")',
      ),
    ).toEqual([
      "https://cdn.example.net/logo.png",
      "https://fonts.googleapis.com/css2?family=Inter",
      "https://redocly.com/assets/app.js",
      "https://telemetry.example.org/v1/traces",
    ]);
  });

  it("is written by npm run docs as a page that loads nothing from elsewhere", async () => {
    const outDir = mkdtempSync(join(tmpdir(), "petstore-docs-"));
    folders.push(outDir);

    const result = await runToEnd("scripts/docs/build.ts", ["--out-dir", outDir], { cwd: outDir });
    const page = readFileSync(join(outDir, "docs/index.html"), "utf8");

    expect(result.code).toBe(0);
    expect(page).toContain(routes.createPet.summary);
    expect(page).toContain("redocly logo");
    expect(outsideUrls(page)).toEqual([]);
  });
});
