/**
 * Synthesizes one checkout of the app for the release check, in a process of its own so that the base
 * commit runs its own infra/ code: `node --import tsx synthDriver.ts <checkout> <outdir>`, started in
 * the checkout (./synthesize.ts). The synthesis is the one the tests use (test/infra/app.ts): the
 * checkout's committed cdk.json context (feature flags and deployment settings), no settings from
 * the environment, no comparison with another ref, and no cdk-nag or Control Tower checks, which
 * change no template and take most of a synthesis. Offline, no credentials.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** Starts the one line the parent reports when a synthesis fails. */
export const SYNTHESIS_FAILURE = "release-check synthesis failed: ";

interface AppModule {
  buildApp?: (options: Record<string, unknown>) => { app: { synth(): unknown } };
}

async function synthesize(checkout: string, outdir: string): Promise<void> {
  const cdkJson = JSON.parse(readFileSync(join(checkout, "cdk.json"), "utf8")) as { context?: Record<string, unknown> };
  const appModule = (await import(pathToFileURL(join(checkout, "infra", "app.ts")).href)) as AppModule;
  if (typeof appModule.buildApp !== "function") throw new Error("its infra/app.ts exports no buildApp");
  appModule.buildApp({ context: cdkJson.context ?? {}, outdir, environment: {}, policyValidation: false }).app.synth();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [checkout, outdir] = process.argv.slice(2);
  try {
    if (!checkout || !outdir) throw new Error("usage: synthDriver.ts <checkout> <outdir>");
    await synthesize(checkout, outdir);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`${SYNTHESIS_FAILURE}${message.split("\n")[0]}`);
    process.exitCode = 1;
  }
}
