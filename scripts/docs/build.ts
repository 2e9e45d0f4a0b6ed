/**
 * `npm run docs`: writes the OpenAPI document to dist/openapi.json and a self-contained HTML
 * reference (Redoc, pre-rendered, scripts inlined so it works offline) to dist/docs/index.html.
 * With --openapi-only it writes just the document (what `npm run lint:openapi` needs).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, relative } from "node:path";
import { parseArgs } from "node:util";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { docsPage, openApiFile, projectRoot } from "./paths";
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
  return file;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { "openapi-only": { type: "boolean", default: false } } });
  const document = await writeOpenApiDocument();
  console.log(`OpenAPI document: ${relative(projectRoot, document)}`);
  if (!values["openapi-only"])
    console.log(`HTML reference: ${relative(projectRoot, await writeReferencePage(document))}`);
}
