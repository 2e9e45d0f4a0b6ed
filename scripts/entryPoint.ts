/**
 * How every command of scripts/ starts, written once: only when its file is the one node or tsx runs (a test that
 * imports it starts nothing), with the SDK's Node-version notice off, and a foreseen failure as one line.
 */
import { pathToFileURL } from "node:url";
import { silenceSdkNodeVersionWarning } from "../local/settings";

/** The first line of an error's message (or of what was thrown), for a command's one line. */
export const firstLine = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error ?? "")).trim().split("\n")[0] ?? "";

/**
 * Runs `run` with the arguments when `moduleUrl` (import.meta.url) is the script started; a number it answers is the
 * exit code. `failure` words an error the command foresaw as its one line (exit `code`, or the one it gives that
 * error); for any other (undefined), the error is thrown on.
 */
export async function runAsScript(
  moduleUrl: string,
  run: (argv: string[]) => unknown,
  failure: (error: unknown) => string | undefined = () => undefined,
  code: number | ((error: unknown) => number) = 1,
): Promise<void> {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? "").href) return;
  // Every command runs on a supported Node (scripts/requireNode.mjs): the SDK's notice about Node versions is noise.
  silenceSdkNodeVersionWarning();
  try {
    const exitCode = await run(process.argv.slice(2));
    if (typeof exitCode === "number") process.exitCode = exitCode;
  } catch (error) {
    const line = failure(error);
    if (line === undefined) throw error;
    console.error(line);
    process.exitCode = typeof code === "number" ? code : code(error);
  }
}
