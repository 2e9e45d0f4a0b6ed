/**
 * `npm run url -- --stage <staging|prod>`: prints only the stage's `BaseUrl` output (ending in /v1), so that
 * `BASE=$(npm run -s url -- --stage staging)` works. One DescribeStacks in the stage's region (./stageCommand.ts).
 * A failure is one line and exit 1; bad arguments, a usage line and exit 2.
 */
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { deployedStages, STACK_OUTPUTS } from "../infra/deployment";
import { awsErrorKind, errorParts, signInLine } from "./awsErrors";
import { runAsScript } from "./entryPoint";
import { readStackOutput } from "./stackOutputs";
import { runStageCommand, type StageCommandOptions, stageUsage } from "./stageCommand";

export const usage = stageUsage("url");

const help = `${usage}
Prints the stage's base URL (stack output ${STACK_OUTPUTS.baseUrl} of ${Object.values(deployedStages)
  .map((stage) => stage.stackName)
  .join(" or ")}), and only it:
  BASE=$(npm run -s url -- --stage staging)
Reads it with your AWS credentials for the stage's account (one read-only call), in the stage's
region from cdk.json, else AWS_REGION.`;

/** Why the URL could not be read, in one line: exit 1. */
export class UrlError extends Error {}

/** What to do about an AWS error the command can name; undefined for the rest. */
function awsErrorLine(error: unknown, stage: string): string | undefined {
  const kind = awsErrorKind(errorParts(error).name);
  switch (kind) {
    case "no credentials":
    case "invalid credentials":
      return signInLine(kind, `${stage}'s account`);
    case "denied":
      return `the AWS credentials may not read stacks (cloudformation:DescribeStacks): use a role of ${stage}'s account that may.`;
    default:
      return undefined;
  }
}

/** Runs the command; returns the exit code. Prints the URL alone on stdout; every other line goes to stderr. */
export function main(
  argv: readonly string[],
  options: StageCommandOptions & { cloudFormation?: (region: string) => CloudFormationClient } = {},
): Promise<number> {
  const { cloudFormation = (region: string) => new CloudFormationClient({ region }) } = options;
  const command = { name: "url", help, usage, failures: [UrlError] };
  return runStageCommand(command, argv, options, async ({ stage, region }) => {
    const { stackName } = deployedStages[stage];
    let output: Awaited<ReturnType<typeof readStackOutput>>;
    try {
      output = await readStackOutput(cloudFormation(region), stackName, STACK_OUTPUTS.baseUrl);
    } catch (error) {
      const line = awsErrorLine(error, stage);
      if (line) throw new UrlError(line);
      throw error;
    }
    switch (output.found) {
      case "no stack":
        throw new UrlError(
          `no stack ${stackName} in ${region}: ${stage} is not deployed there (npx cdk deploy '${deployedStages[stage].id}/*'), or its region is another.`,
        );
      case "no output":
        throw new UrlError(
          `stack ${stackName} in ${region} has no ${STACK_OUTPUTS.baseUrl} output (stack status ${output.stackStatus}): wait for its deploy to finish, or deploy it again.`,
        );
      case "value":
        console.log(output.value);
        return 0;
    }
  });
}

await runAsScript(import.meta.url, main);
