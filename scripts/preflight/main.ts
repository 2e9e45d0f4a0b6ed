/**
 * `npm run preflight -- --stage <staging|prod>`: checks, with read-only AWS calls and the stage
 * account's credentials, what usually makes a deploy (above all a first create) fail once
 * CloudFormation has started, before `cdk deploy` runs; the deploy workflow runs it too. The checks
 * are in ./checks.ts. Prints one line per problem to stderr and exits 1, or one "ready" line and
 * exits 0; bad arguments are one usage line and exit 2. The stage's settings come from the working
 * tree's cdk.json "context" and PETSTORE_* variables, as the CDK app reads them (infra/settings.ts).
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { ACMClient } from "@aws-sdk/client-acm";
import { APIGatewayClient } from "@aws-sdk/client-api-gateway";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { Route53Client } from "@aws-sdk/client-route-53";
import { STSClient } from "@aws-sdk/client-sts";
import { type StageConfig, stageConfigs } from "../../infra/config";
import { type DeployedStageName, deployedStages } from "../../infra/deployment";
import { contextKey, readStageSettings, SettingsError, type StageSettings } from "../../infra/settings";
import { checkoutContext } from "../../infra/settingsBaseline";
import { routeList } from "../../lib/routes";
import { silenceSdkNodeVersionWarning } from "../../local/settings";
import { type PreflightClients, PreflightError, runPreflight } from "./checks";

const stageNames = Object.keys(deployedStages) as DeployedStageName[];

export const usage = `Usage: npm run preflight -- --stage <${stageNames.join("|")}>`;

const help = `${usage}
Checks with read-only AWS calls, before cdk deploy, that the stage can be deployed: the credentials'
account, the stacks' states, the custom domain's certificate, hosted zone and DNS record, Lambda's
concurrency quota and API Gateway's CloudWatch role. Run it with credentials for the stage's account.
Exits 0 when ready, 1 with one line per problem, 2 on bad arguments.`;

/** A mistake in how the command was called: exit 2, one line. */
export class PreflightUsageError extends Error {}

/** The stage to check, or "help". */
export function parsePreflightArguments(argv: readonly string[]): { stage: DeployedStageName } | "help" {
  let values: { stage?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: { stage: { type: "string" }, help: { type: "boolean", short: "h" } },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    // parseArgs' first sentence only: the rest suggests `--` spellings that mean nothing here.
    const message = (error as Error).message.split(/\.\s/)[0]?.replace(/\.$/, "") ?? "bad arguments";
    throw new PreflightUsageError(`${message.replace(/\s+/g, " ")}. ${usage}`);
  }
  if (values.help) return "help";
  const { stage } = values;
  if (stage === undefined || stage === "") throw new PreflightUsageError(`--stage is required. ${usage}`);
  if (!stageNames.includes(stage as DeployedStageName)) {
    throw new PreflightUsageError(`unknown stage "${stage}". ${usage}`);
  }
  return { stage: stage as DeployedStageName };
}

/** The region to check: the stage's pinned one, else the one the SDK and the CDK CLI would use. */
export function stageRegion(stage: DeployedStageName, settings: StageSettings, env: NodeJS.ProcessEnv): string {
  const region = settings.region ?? (env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim());
  if (!region) {
    throw new PreflightError(
      `no region: pin ${contextKey(stage, "region")} in cdk.json's "context", or set AWS_REGION to the region ${stage} is deployed to.`,
    );
  }
  return region;
}

export function stageConfig(stage: DeployedStageName): StageConfig {
  const config = Object.values(stageConfigs).find((candidate) => candidate.stage === stage);
  if (!config) throw new PreflightError(`no stage config for ${stage} in infra/config.ts.`);
  return config;
}

/** Clients for the stage's region, with the default credential chain (environment, profile, SSO, role). */
export function createClients(region: string): PreflightClients {
  return {
    sts: new STSClient({ region }),
    cloudFormation: new CloudFormationClient({ region }),
    acm: new ACMClient({ region }),
    // Route 53 is global; the region only picks the signing region of its one endpoint.
    route53: new Route53Client({ region }),
    lambda: new LambdaClient({ region }),
    apiGateway: new APIGatewayClient({ region }),
  };
}

/** Runs the command; returns the exit code. Every line it prints starts with `preflight: `. */
export async function main(
  argv: readonly string[],
  options: { env?: NodeJS.ProcessEnv; context?: () => Readonly<Record<string, unknown>> } = {},
): Promise<number> {
  // The working tree's cdk.json: the committed settings, which the pipeline deploys with too.
  const { env = process.env, context = () => checkoutContext() } = options;
  const say = (line: string) => console.error(`preflight: ${line}`);
  try {
    const parsed = parsePreflightArguments(argv);
    if (parsed === "help") {
      console.log(help);
      return 0;
    }
    const { stage } = parsed;
    const settingsContext = context();
    // As the CDK app reads them: the context first, then PETSTORE_* variables (infra/settings.ts).
    const settings = readStageSettings(stage, (key) => settingsContext[key], env);
    const region = stageRegion(stage, settings, env);
    const report = await runPreflight({
      stage,
      settings,
      config: stageConfig(stage),
      apiFunctions: routeList.length,
      clients: createClients(region),
      region,
    });
    for (const problem of report.problems) say(problem);
    if (report.problems.length > 0) return 1;
    console.log(`preflight: ${stage} ready to deploy to ${report.account}/${report.region} (${report.checks} checks)`);
    return 0;
  } catch (error) {
    if (error instanceof PreflightUsageError) {
      say(error.message);
      return 2;
    }
    if (error instanceof PreflightError || error instanceof SettingsError) {
      say(error.message);
      return 1;
    }
    // A bug, or something no check foresaw: still one line, never a stack trace in the deploy log.
    const { name, message } = error instanceof Error ? error : { name: "Error", message: String(error) };
    say(`unexpected ${name}: ${message.replace(/\s+/g, " ").trim()}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  silenceSdkNodeVersionWarning();
  process.exitCode = await main(process.argv.slice(2));
}
