/**
 * Synthesizes the real app in-process, as `npx cdk synth` does (cdk.json's feature flags plus the configuration's
 * settings; never settings a team committed, which would leak into the example deployments), into cloud assembly
 * directories outside the repository.
 */
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp, committedFeatureFlags } from "../../infra/app";
import { type RehearsalConfiguration, rehearsalConfigurations } from "./configurations";

/**
 * One assembly directory per configuration. Each synthesis writes to one shared directory first, since the CDK reuses
 * a bundle only for the same output directory, then is copied to its own, which the caller removes.
 */
export function synthesizeAll(configurations: readonly RehearsalConfiguration[]): Map<string, string> {
  const shared = mkdtempSync(join(tmpdir(), "rehearsal-synth-"));
  const directories = new Map<string, string>();
  for (const configuration of configurations) {
    const { app } = buildApp({
      context: { ...committedFeatureFlags(), ...configuration.context },
      outdir: shared,
      // The policy checks are test/infra/nag.test.ts's; the rehearsal runs what they let through.
      policyValidation: false,
    });
    app.synth();
    const directory = mkdtempSync(join(tmpdir(), `rehearsal-${configuration.name}-`));
    cpSync(shared, directory, { recursive: true });
    directories.set(configuration.name, directory);
  }
  rmSync(shared, { recursive: true, force: true });
  return directories;
}

/**
 * `use` with each rehearsal configuration and its assembly directory (synthesizeAll); the directories are removed
 * afterwards, also when `use` fails, and those it never reached.
 */
export async function withRehearsalAssemblies<T>(
  use: (assemblies: { configuration: RehearsalConfiguration; directory: string }[]) => Promise<T> | T,
): Promise<T> {
  const directories = synthesizeAll(rehearsalConfigurations);
  try {
    return await use(
      rehearsalConfigurations.map((configuration) => ({
        configuration,
        directory: directories.get(configuration.name) as string,
      })),
    );
  } finally {
    for (const directory of directories.values()) rmSync(directory, { recursive: true, force: true });
  }
}
