/**
 * `PETSTORE_API_KEY=KEY npm run smoke -- --base-url URL`: black-box checks of a running stage (lib/smoke/checks.ts,
 * which the deployed synthetic check runs too). It only adds pets named `smoke-<random>-…`; off loopback it refuses a
 * key that is not synthetic (`petstore_<stage>_synthetic_`, lib/auth/apiKeys.ts) unless --allow-ordinary-key gives a
 * reason, so it is safe against production. The key comes from the environment because npm prints a script's command
 * line (--key still works); it is never printed.
 */
import { parseArgs } from "node:util";
import { describeKeySlip, hasApiKeyShape, isSyntheticApiKey } from "../lib/auth/apiKeys";
import { stages } from "../lib/config";
import { API_BASE_PATH } from "../lib/routes";
import { baseUrlProblem, runSmoke, SmokeRunError } from "../lib/smoke/checks";
import { runAsScript } from "./entryPoint";

const usage = `Usage: PETSTORE_API_KEY=KEY npm run smoke -- --base-url URL
  --base-url URL     the stage's base URL, ending in ${API_BASE_PATH} (its BaseUrl stack output;
                     http://127.0.0.1:3000${API_BASE_PATH} for npm start)
Environment:
  PETSTORE_API_KEY   an API key of that stage; never printed. Use a synthetic key
                     (npm run keys -- create --synthetic --name NAME): the pets a run adds are then
                     seen by no other key and expire by themselves; with any other key they stay
                     in every client's listing
Also:
  --key KEY          the key, when PETSTORE_API_KEY is unset; avoid it: npm prints the command line,
                     so the key shows on the terminal and in CI logs
  --allow-ordinary-key REASON
                     run with an ordinary (not synthetic) key against a deployed stage, for the
                     reason given, which is printed; its pets then stay in every client's listing.
                     Not needed for npm start on this machine (127.0.0.1, localhost)
Exits 0 when every check passes, 1 otherwise.`;

/**
 * True when `baseUrl` is on this machine's loopback (`npm start`: 127.0.0.0/8, ::1, localhost), where the data is the
 * developer's own; any other host is taken for a deployed, shared stage.
 */
function isLoopbackBaseUrl(baseUrl: string): boolean {
  if (!URL.canParse(baseUrl)) return false;
  const host = new URL(baseUrl).hostname.toLowerCase();
  return host === "localhost" || host.endsWith(".localhost") || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** A mistake in how the command was called; its message is the one line to print. */
export class SmokeUsageError extends Error {}

/** The command that makes a synthetic key: the one fix for a refused ordinary key. */
export const CREATE_SYNTHETIC_KEY = "npm run keys -- create --synthetic --name NAME";

/** What each stage's keys look like, for messages; the key itself is never repeated. */
const KEY_SHAPE = `petstore_<${stages.join("|")}>_<43 letters or digits>`;

function keyProblem(key: string, source: string): string | undefined {
  const slip = describeKeySlip(key);
  if (slip) return `${source} is not a valid key: ${slip}; set it to the key alone.`;
  if (!stages.some((stage) => hasApiKeyShape(key, stage))) return `${source} must be an API key (${KEY_SHAPE}).`;
  return undefined;
}

/** parseArgs' message in one line. An unexpected argument is not repeated: it may be a key typed without --key. */
function argumentProblem(error: unknown): string {
  const { code, message = String(error) } = error as { code?: string; message?: string };
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL")
    return "unexpected argument: smoke takes only the options below.";
  return `${message.split(". ")[0]}.`;
}

/** Reads the command line, and PETSTORE_API_KEY from `env` when --key is absent. */
export function parseSmokeArguments(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): { baseUrl: string; key: string; ordinaryKeyReason?: string } | "help" {
  let values: { "base-url"?: string; key?: string; "allow-ordinary-key"?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        "base-url": { type: "string" },
        key: { type: "string" },
        "allow-ordinary-key": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new SmokeUsageError(`${argumentProblem(error)}\n${usage}`);
  }
  if (values.help) return "help";
  const baseUrl = values["base-url"];
  if (!baseUrl) throw new SmokeUsageError(`--base-url is required.\n${usage}`);
  const wrongBaseUrl = baseUrlProblem(baseUrl);
  if (wrongBaseUrl) throw new SmokeUsageError(wrongBaseUrl);
  const fromEnvironment = env.PETSTORE_API_KEY ?? "";
  const [key, source] = values.key !== undefined ? [values.key, "--key"] : [fromEnvironment, "PETSTORE_API_KEY"];
  if (key === "") throw new SmokeUsageError(`an API key is required: set PETSTORE_API_KEY.\n${usage}`);
  const wrongKey = keyProblem(key, source);
  if (wrongKey) throw new SmokeUsageError(wrongKey);
  const reason = values["allow-ordinary-key"]?.trim();
  if (reason === "")
    throw new SmokeUsageError(`--allow-ordinary-key needs a reason, e.g. --allow-ordinary-key "<why>".`);
  // Only the key's text is read, so an ordinary key is refused with no request made at all.
  if (isSyntheticApiKey(key) || isLoopbackBaseUrl(baseUrl)) return { baseUrl, key };
  if (reason === undefined)
    throw new SmokeUsageError(
      `${source} is an ordinary key, and its pets would stay in every client's listing: against a deployed stage use a synthetic key (${CREATE_SYNTHETIC_KEY}), or pass --allow-ordinary-key "<reason>".`,
    );
  return { baseUrl, key, ordinaryKeyReason: reason };
}

await runAsScript(
  import.meta.url,
  async (argv) => {
    const parsed = parseSmokeArguments(argv);
    if (parsed === "help") return console.log(usage);
    if (parsed.ordinaryKeyReason !== undefined)
      console.error(
        `smoke: running with an ordinary key (--allow-ordinary-key: ${parsed.ordinaryKeyReason}); its pets stay in every client's listing.`,
      );
    return (await runSmoke(parsed)).failed === 0 ? 0 : 1;
  },
  (error) =>
    error instanceof SmokeUsageError || error instanceof SmokeRunError ? `smoke: ${error.message}` : undefined,
);
