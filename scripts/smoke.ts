/**
 * `npm run smoke -- --base-url URL --key KEY`: a black-box pass over a running stage (deployed or
 * `npm start`) with nothing but HTTP. Prints one line per check and a total; exits 1 on any failure.
 * It only adds pets, each named `smoke-<random>-…`, so it is safe to run against a shared stage.
 * The checks themselves are in lib/smoke/checks.ts, which the deployed synthetic check runs too.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { runSmoke } from "../lib/smoke/checks";

const usage = `Usage: npm run smoke -- --base-url URL --key KEY
  --base-url URL   the stage's base URL, ending in /v1 (a stack output; http://127.0.0.1:3000/v1 for npm start)
  --key KEY        an API key of that stage (npm run keys -- create …)`;

export function parseSmokeArguments(argv: readonly string[]): { baseUrl: string; key: string } | "help" {
  const { values } = parseArgs({
    args: [...argv],
    options: { "base-url": { type: "string" }, key: { type: "string" }, help: { type: "boolean", default: false } },
  });
  if (values.help) return "help";
  const baseUrl = values["base-url"];
  if (!baseUrl || !values.key) throw new TypeError(`--base-url and --key are required.\n${usage}`);
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new TypeError(`--base-url must be an http(s) URL, not "${baseUrl}".`);
  }
  return { baseUrl, key: values.key };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const parsed = parseSmokeArguments(process.argv.slice(2));
    if (parsed === "help") console.log(usage);
    else {
      const report = await runSmoke(parsed);
      process.exitCode = report.failed === 0 ? 0 : 1;
    }
  } catch (error) {
    console.error(error instanceof TypeError ? `smoke: ${error.message}` : error);
    process.exitCode = 1;
  }
}
