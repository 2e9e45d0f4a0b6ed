/**
 * `npm run docs`: writes the OpenAPI document to dist/openapi.json and a self-contained HTML reference (Redoc,
 * pre-rendered, scripts inlined so it works offline) to dist/docs/index.html. With --openapi-only it writes just the
 * document (what `npm run lint:openapi` needs); with
 * --out-dir DIR, both go under DIR instead of dist/.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { withoutOutsideResources } from "../../local/offlineRedoc";
import { distDir, docsPage, openApiFile } from "./paths";
import { redocly } from "./redocly";

export async function writeOpenApiDocument(file = openApiFile): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
  return file;
}

export async function writeReferencePage(source: string, file = docsPage): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  await redocly([
    "build-docs",
    source,
    "--inlineBundle",
    "--openapi.disableTelemetry=true",
    "--title",
    "Pet Store API reference",
    "--output",
    file,
  ]);
  // The inlined Redoc would still load its badge's logo from Redocly's CDN.
  await writeFile(file, withoutOutsideResources(await readFile(file, "utf8")));
  return file;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { "openapi-only": { type: "boolean", default: false }, "out-dir": { type: "string" } },
  });
  const outDir = values["out-dir"] === undefined ? distDir : resolve(values["out-dir"]);
  const shown = (file: string) => relative(process.cwd(), file) || file;
  const document = await writeOpenApiDocument(join(outDir, relative(distDir, openApiFile)));
  console.log(`OpenAPI document: ${shown(document)}`);
  if (!values["openapi-only"]) {
    const page = await writeReferencePage(document, join(outDir, relative(distDir, docsPage)));
    console.log(`HTML reference: ${shown(page)}`);
  }
}
