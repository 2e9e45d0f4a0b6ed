/**
 * `tsx scripts/deliveryStage.ts <github-environment> [--outputs-file FILE]`: `name=value` lines for $GITHUB_OUTPUT
 * about the stage a GitHub environment deploys (.github/workflows/deploy-stage.yml, deploy.yml's preview job): stage,
 * selector, account-selector, stack-name, data-stack-name, preview-environment, and base-url from a `cdk deploy
 * --outputs-file`. The names come from infra/deployment.ts, so the workflows spell none of them.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { accountStackSelector, type DeployedStage, deployedStages, STACK_OUTPUTS } from "../infra/deployment";
import { runAsScript } from "./entryPoint";

export class DeliveryStageError extends Error {}

const usage = "Usage: tsx scripts/deliveryStage.ts <github-environment> [--outputs-file FILE]";

export function stageOfEnvironment(environment: string): DeployedStage {
  const stage = Object.values(deployedStages).find((candidate) => candidate.githubEnvironment === environment);
  if (!stage) {
    const known = Object.values(deployedStages).map((candidate) => candidate.githubEnvironment);
    throw new DeliveryStageError(
      `GitHub environment "${environment}" deploys no stage; expected one of ${known.join(", ")} (infra/deployment.ts).`,
    );
  }
  return stage;
}

/** The stage's base URL from the JSON `cdk deploy --outputs-file` writes: `{ stackName: { OutputKey: value } }`. */
export function baseUrlFromOutputs(outputsJson: string, stage: DeployedStage, fileName: string): string {
  let outputs: unknown;
  try {
    outputs = JSON.parse(outputsJson);
  } catch {
    throw new DeliveryStageError(`${fileName} is not JSON; expected the file cdk deploy --outputs-file writes.`);
  }
  const stackOutputs = (outputs as Record<string, unknown> | null)?.[stage.stackName];
  if (typeof stackOutputs !== "object" || stackOutputs === null) {
    throw new DeliveryStageError(`${fileName} has no outputs of stack ${stage.stackName}: was it deployed?`);
  }
  const baseUrl = (stackOutputs as Record<string, unknown>)[STACK_OUTPUTS.baseUrl];
  // Also keeps the line a single `name=value` pair for $GITHUB_OUTPUT.
  if (typeof baseUrl !== "string" || !URL.canParse(baseUrl) || new URL(baseUrl).protocol !== "https:") {
    throw new DeliveryStageError(
      `Stack ${stage.stackName} in ${fileName} has no https ${STACK_OUTPUTS.baseUrl} output (got ${JSON.stringify(baseUrl)}).`,
    );
  }
  return baseUrl;
}

function parseDeliveryStageArguments(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: { "outputs-file": { type: "string" } }, allowPositionals: true });
  } catch (error) {
    throw new DeliveryStageError(`${(error as Error).message}\n${usage}`);
  }
}

/** The `name=value` lines for $GITHUB_OUTPUT. */
export function deliveryStageLines(argv: readonly string[], readFile: (path: string) => string): string[] {
  const parsed = parseDeliveryStageArguments(argv);
  const [environment, ...rest] = parsed.positionals;
  if (!environment || rest.length > 0) throw new DeliveryStageError(usage);
  const stage = stageOfEnvironment(environment);
  const lines = [
    `stage=${stage.stage}`,
    `selector=${stage.id}/*`,
    `account-selector=${accountStackSelector(stage)}`,
    `stack-name=${stage.stackName}`,
    `data-stack-name=${stage.dataStackName}`,
    ...(stage.previewEnvironment === undefined ? [] : [`preview-environment=${stage.previewEnvironment}`]),
  ];
  const outputsFile = parsed.values["outputs-file"];
  if (outputsFile !== undefined) {
    let text: string;
    try {
      text = readFile(outputsFile);
    } catch {
      throw new DeliveryStageError(
        `Cannot read ${outputsFile}: run cdk deploy with --outputs-file ${outputsFile} first.`,
      );
    }
    lines.push(`base-url=${baseUrlFromOutputs(text, stage, outputsFile)}`);
  }
  return lines;
}

await runAsScript(
  import.meta.url,
  (argv) => {
    for (const line of deliveryStageLines(argv, (path) => readFileSync(path, "utf8"))) console.log(line);
  },
  (error) => (error instanceof DeliveryStageError ? error.message : undefined),
);
