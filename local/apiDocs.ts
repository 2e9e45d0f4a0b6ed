/**
 * What `npm start` serves besides the API: the OpenAPI document at /openapi.json and a Redoc
 * reference at /docs. Everything comes from this machine (Redoc's standalone script ships inside
 * the @redocly/cli dev dependency), so the page works offline.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { buildOpenApiDocument } from "../lib/contract/openapi";

export const OPENAPI_PATH = "/openapi.json";
export const DOCS_PATH = "/docs";
const SCRIPT_PATH = `${DOCS_PATH}/reference.js`;
const REDOC_PATH = `${DOCS_PATH}/redoc.standalone.js`;

export interface LocalDocsAnswer {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Redoc is a dev dependency's internal file: look for it, and say so on the page if it moved. */
function redocScriptFile(): string | undefined {
  try {
    const cliRoot = dirname(createRequire(import.meta.url).resolve("@redocly/cli/package.json"));
    return join(cliRoot, "lib/chunks/redoc.standalone.js");
  } catch {
    return undefined;
  }
}

// Redoc styles itself with inline <style> and data: images; nothing may come from elsewhere.
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:";

const page = (title: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>${title}</title>
    <script type="module" src="${SCRIPT_PATH}"></script>
  </head>
  <body>
    <noscript>This reference needs JavaScript; the document itself is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
    <div id="reference"></div>
  </body>
</html>
`;

const loader = `import { init } from "${REDOC_PATH}";
init("${OPENAPI_PATH}", { disableTelemetry: true }, document.getElementById("reference"));
`;

function answer(contentType: string, body: string, extra: Record<string, string> = {}): LocalDocsAnswer {
  return {
    statusCode: 200,
    headers: {
      "Content-Type": contentType,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      ...extra,
    },
    body,
  };
}

export interface LocalDocs {
  /** The answer for `pathname`, or undefined when it is not one of the documentation's paths. */
  answer(pathname: string): Promise<LocalDocsAnswer | undefined>;
}

export function localDocs(): LocalDocs {
  // Built once: the document only changes when the code does, and then the server restarts.
  const documentJson = `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
  let redoc: Promise<string | undefined> | undefined;
  const loadRedoc = () => {
    redoc ??= (async () => {
      const file = redocScriptFile();
      return file ? readFile(file, "utf8").catch(() => undefined) : undefined;
    })();
    return redoc;
  };

  return {
    async answer(pathname) {
      switch (pathname) {
        case OPENAPI_PATH:
          return answer("application/json; charset=utf-8", documentJson);
        case DOCS_PATH:
        case `${DOCS_PATH}/`:
          return answer("text/html; charset=utf-8", page("Pet Store API reference"), {
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
          });
        case SCRIPT_PATH:
          return answer("text/javascript; charset=utf-8", loader);
        case REDOC_PATH: {
          const script = await loadRedoc();
          if (script !== undefined) return answer("text/javascript; charset=utf-8", script);
          return answer(
            "text/javascript; charset=utf-8",
            `export function init(_spec, _options, element) { element.textContent = "Redoc was not found in node_modules/@redocly/cli; the document is at ${OPENAPI_PATH}."; }\n`,
          );
        }
        default:
          return undefined;
      }
    },
  };
}
