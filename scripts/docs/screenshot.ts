/**
 * `npm run docs:screenshot`: opens the reference served by the local server (/docs) and the static one `npm run docs`
 * writes, in headless Chromium, checks each rendered the operations without reaching outside this machine, and saves a
 * PNG of each under .screenshots/. Not part of `npm test`: it needs Chromium (Debian: apt-get install -y chromium; or
 * set CHROMIUM).
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { relative } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Page } from "playwright-core";
import { API_TAG } from "../../lib/contract/openapi";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { routeList, routes } from "../../lib/routes";
import { DOCS_PATH } from "../../local/apiDocs";
import { startLocalApi } from "../../local/server";
import { writeOpenApiDocument, writeReferencePage } from "./build";
import { projectRoot, screenshotDir } from "./paths";

const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** The reference pages never call the API, so the screenshot needs no database behind it. */
const noApi: ProxyHandler = async () => ({ statusCode: 503, body: "" });

interface Capture {
  readonly name: string;
  readonly url: string;
  readonly isLocal: (url: string) => boolean;
}

async function capture(page: Page, target: Capture): Promise<string[]> {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console error: ${message.text()}`);
  });
  // Offline means offline: anything fetched from elsewhere is refused and reported.
  await page.route("**/*", async (route) => {
    const url = route.request().url();
    if (target.isLocal(url)) return route.continue();
    problems.push(`external request: ${url}`);
    return route.abort();
  });
  // Redoc shows one page per tag and per operation (hash routes); the tag's page lists them all.
  await page.goto(`${target.url}#/${API_TAG}`, { waitUntil: "load" });
  for (const route of routeList) {
    await page
      .getByText(route.summary, { exact: true })
      .first()
      .waitFor({ timeout: 15_000 })
      .catch(() => problems.push(`operation ${route.operationId} not rendered`));
  }
  await page.goto(`${target.url}#/${API_TAG}/${routes.createPet.operationId.toLowerCase()}`, { waitUntil: "load" });
  await page
    .getByText("Idempotency-Key", { exact: true })
    .first()
    .waitFor({ timeout: 15_000 })
    .catch(() => problems.push("createPet's page not rendered"));
  await page.screenshot({ path: `${screenshotDir}/${target.name}.png`, fullPage: false });
  return problems;
}

async function main(): Promise<void> {
  if (!existsSync(executablePath)) {
    throw new Error(`No Chromium at ${executablePath}: apt-get install -y chromium, or set CHROMIUM.`);
  }
  await mkdir(screenshotDir, { recursive: true });
  const staticPage = await writeReferencePage(await writeOpenApiDocument());
  const api = await startLocalApi({ host: "127.0.0.1", port: 0, loadHandler: async () => noApi });
  const origin = new URL(api.baseUrl).origin;
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS });
  let failed = false;
  try {
    const targets: Capture[] = [
      { name: "docs-local", url: `${origin}${DOCS_PATH}`, isLocal: (url) => url.startsWith(`${origin}/`) },
      {
        name: "docs-static",
        url: pathToFileURL(staticPage).href,
        isLocal: (url) => url.startsWith("file:") || url.startsWith("data:") || url.startsWith("about:"),
      },
    ];
    for (const target of targets) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      const problems = await capture(page, target);
      await page.close();
      const file = relative(projectRoot, `${screenshotDir}/${target.name}.png`);
      if (problems.length === 0) console.log(`${target.url}: rendered, ${file}`);
      else {
        failed = true;
        console.error(`${target.url}: ${file}\n  ${problems.join("\n  ")}`);
      }
    }
  } finally {
    await browser.close();
    await api.close();
  }
  if (failed) process.exitCode = 1;
}

await main();
