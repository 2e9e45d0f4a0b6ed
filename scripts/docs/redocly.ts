/** Runs the Redocly CLI installed as a dev dependency, offline: no telemetry, no update check. */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

const cli = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");

export async function redocly(args: readonly string[]): Promise<void> {
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: "inherit",
    env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_NOTIFICATIONS: "true" },
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", resolve);
  });
  if (code !== 0) throw new Error(`redocly ${args[0]} failed (exit code ${code}).`);
}
