/**
 * `npm run readiness -- --stage <staging|prod>`: the pipeline's offline check that the committed cdk.json lets it
 * deploy the stage (infra/settings.ts, pipelineReadiness). Legal but dangerous settings are warnings, also added to
 * $GITHUB_STEP_SUMMARY. One line per problem, exit 1; usage mistakes exit 2. No AWS call (`npm run preflight` does).
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type DeployedStageName, deployedStages } from "../infra/deployment";
import {
  committedSettingWarnings,
  pipelineReadiness,
  readStageSettings,
  SettingsError,
  type StageSettings,
} from "../infra/settings";
import { checkoutContext } from "../infra/settingsBaseline";
import { runAsScript } from "./entryPoint";

const usage = "Usage: npm run readiness -- --stage <staging|prod>";

export class UsageError extends Error {}

export interface ReadinessResult {
  readonly problems: string[];
  readonly warnings: string[];
  readonly summary: string;
}

function describe(stage: DeployedStageName, settings: StageSettings): string {
  const target =
    settings.account === undefined
      ? "not pinned (deploys wherever its credentials point)"
      : `pinned to ${settings.account}/${settings.region ?? "any region"}`;
  const destinations = settings.alarmEmails.length + (settings.alarmTopicArn === undefined ? 0 : 1);
  return `readiness: the pipeline may deploy ${stage}: ${target}, ${destinations} alarm destination${destinations === 1 ? "" : "s"}`;
}

/** The decisions, from a cdk.json "context" (the committed settings only: the pipeline sets no others). */
export function readiness(stage: DeployedStageName, committed: Readonly<Record<string, unknown>>): ReadinessResult {
  const stages = Object.keys(deployedStages) as DeployedStageName[];
  const warnings = committedSettingWarnings(stages, committed);
  let settings: StageSettings;
  try {
    settings = readStageSettings(stage, (key) => committed[key], {});
  } catch (error) {
    if (error instanceof SettingsError) return { problems: [error.message], warnings, summary: "" };
    throw error;
  }
  const refusal = pipelineReadiness(stage, settings);
  return { problems: refusal ? [refusal] : [], warnings, summary: describe(stage, settings) };
}

export function parseStage(argv: readonly string[]): DeployedStageName {
  let values: { stage?: string | undefined };
  try {
    ({ values } = parseArgs({ args: [...argv], options: { stage: { type: "string" } }, allowPositionals: false }));
  } catch {
    throw new UsageError(usage);
  }
  const { stage } = values;
  if (stage === undefined || !Object.hasOwn(deployedStages, stage)) throw new UsageError(usage);
  return stage as DeployedStageName;
}

await runAsScript(
  import.meta.url,
  (argv) => {
    const stage = parseStage(argv);
    const result = readiness(stage, checkoutContext());
    const inActions = process.env.GITHUB_ACTIONS === "true";
    for (const warning of result.warnings) console.error(inActions ? `::warning::${warning}` : `Warning: ${warning}`);
    for (const problem of result.problems) console.error(problem);
    const summaryFile = process.env.GITHUB_STEP_SUMMARY;
    if (summaryFile) {
      const lines = [
        `### Readiness of ${stage}`,
        ...result.warnings.map((warning) => `> [!WARNING]\n> ${warning}`),
        ...result.problems.map((problem) => `- ${problem}`),
        ...(result.problems.length === 0 ? [result.summary] : []),
      ];
      appendFileSync(summaryFile, `${lines.join("\n")}\n`);
    }
    if (result.problems.length > 0) return 1;
    console.log(result.summary);
  },
  (error) => (error instanceof UsageError || error instanceof SettingsError ? error.message : undefined),
  (error) => (error instanceof UsageError ? 2 : 1),
);
