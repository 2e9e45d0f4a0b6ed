/**
 * `npm run lint:owasp`: lints the OpenAPI document with Spectral, using the project's ruleset (.spectral.yaml:
 * Spectral's OpenAPI rules and the OWASP API Security ruleset, with the rules that do not apply turned off, each with
 * its reason). Any error or warning fails it. With a file argument it lints that document instead of writing the built
 * one.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { relative } from "node:path";
import { writeOpenApiDocument } from "./build";
import { projectRoot } from "./paths";

const cli = createRequire(import.meta.url).resolve("@stoplight/spectral-cli/dist/index.js");
const SPECTRAL_RULESET = `${projectRoot}.spectral.yaml`;

/** Runs Spectral on `document`; resolves with its exit code (0: no error and no warning). */
async function spectralLint(document: string): Promise<number | null> {
  const child = spawn(
    process.execPath,
    [cli, "lint", document, "--ruleset", SPECTRAL_RULESET, "--fail-severity", "warn", "--display-only-failures"],
    { stdio: "inherit" },
  );
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
}

const [given] = process.argv.slice(2);
const document = given ?? relative(process.cwd(), await writeOpenApiDocument());
const code = await spectralLint(document);
if (code !== 0) {
  console.error(`spectral: ${document} breaks the rules above (ruleset: .spectral.yaml).`);
  process.exitCode = 1;
}
