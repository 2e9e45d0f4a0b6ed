/** Synthesises the real app; call it once per file and variant (each synthesis bundles the functions). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { type BuildAppOptions, buildApp, committedFeatureFlags } from "../../infra/app";
import { scratchDirectory } from "../support/scratch";

/**
 * cdk.json's feature flags, so tests see the templates `npx cdk synth` makes; never the deployment
 * settings a team commits beside them: each test synthesizes with the settings it sets itself, so
 * committing the documented settings block cannot change what a test sees (settingsSource.test.ts
 * proves it on a copy of the project).
 */
export const featureFlags = committedFeatureFlags();

export function synthesizedStages(
  options: Pick<
    BuildAppOptions,
    "acknowledgeNagFindings" | "context" | "environment" | "policyValidation" | "stages"
  > = {},
) {
  const outdir = scratchDirectory();
  const { app, stages } = buildApp({ ...options, context: { ...featureFlags, ...options.context }, outdir });
  let failure: unknown;
  try {
    app.synth();
  } catch (error) {
    failure = error;
  }
  return {
    failure,
    app,
    stages,
    template: (id: string) => {
      const stage = stages.find((candidate) => candidate.node.id === id);
      if (!stage) throw new Error(`no stage ${id}`);
      return Template.fromStack(stage.stack);
    },
    /** The stage's data stack (its table): infra/stacks/dataStack.ts. */
    dataTemplate: (id: string) => {
      const stage = stages.find((candidate) => candidate.node.id === id);
      if (!stage) throw new Error(`no stage ${id}`);
      return Template.fromStack(stage.dataStack);
    },
    /** Findings as `<pack>::<rule>` at construct paths, from the validation report. */
    findings: (): { id: string; path: string }[] => {
      const report = JSON.parse(readFileSync(join(outdir, "validation-report.json"), "utf8")) as {
        pluginReports: {
          pluginName: string;
          violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[];
        }[];
      };
      return report.pluginReports.flatMap((plugin) =>
        plugin.violations.flatMap((violation) =>
          violation.violatingConstructs.map((construct) => ({
            id: `${plugin.pluginName}::${violation.ruleName}`,
            path: construct.constructPath,
          })),
        ),
      );
    },
  };
}
