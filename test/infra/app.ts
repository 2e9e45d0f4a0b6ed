/** Synthesises the real app; call it once per file and variant (each synthesis bundles the functions). */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { type BuildAppOptions, buildApp } from "../../infra/app";

/** The context `npx cdk synth` gives the app from cdk.json: the feature flags, so tests see the same templates. */
export const cdkJsonContext = (
  JSON.parse(readFileSync(new URL("../../cdk.json", import.meta.url), "utf8")) as { context: Record<string, unknown> }
).context;

export function synthesizedStages(
  options: Pick<
    BuildAppOptions,
    "acknowledgeNagFindings" | "context" | "environment" | "policyValidation" | "stages"
  > = {},
) {
  const outdir = mkdtempSync(join(tmpdir(), "cdk-test-"));
  const { app, stages } = buildApp({ ...options, context: { ...cdkJsonContext, ...options.context }, outdir });
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
