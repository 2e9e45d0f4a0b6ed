/**
 * Synthesizes the real app in-process, as `npx cdk synth` does (cdk.json's context plus the
 * configuration's), into a fresh cloud assembly directory outside the repository.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../../infra/app";
import type { RehearsalConfiguration } from "./configurations";

const cdkJson = JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as {
  context: Record<string, unknown>;
};

/** Answers the cloud assembly's directory. */
export function synthesize(configuration: RehearsalConfiguration): string {
  const outdir = mkdtempSync(join(tmpdir(), `rehearsal-${configuration.name}-`));
  const { app } = buildApp({ context: { ...cdkJson.context, ...configuration.context }, outdir });
  app.synth();
  return outdir;
}
