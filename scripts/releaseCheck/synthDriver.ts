/**
 * Synthesizes one checkout for the release check in a process of its own, so the base commit runs its own infra/:
 * `node --import tsx synthDriver.ts <checkout> <outdir>`. As the tests synthesize (test/infra/app.ts): committed
 * cdk.json context only, no cdk-nag or Control Tower checks (they change no template). Offline.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { firstLine, runAsScript } from "../entryPoint";

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

await runAsScript(
  import.meta.url,
  async ([checkout, outdir]) => {
    if (!checkout || !outdir) throw new Error("usage: synthDriver.ts <checkout> <outdir>");
    await synthesize(checkout, outdir);
  },
  (error) => `${SYNTHESIS_FAILURE}${firstLine(error)}`,
);
