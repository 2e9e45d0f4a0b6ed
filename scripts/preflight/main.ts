/**
 * `npm run preflight -- --stage <staging|prod>`: the read-only checks of ./checks.ts, with the stage account's
 * credentials, before `cdk deploy`. One line per problem on stderr and exit 1, or one "ready" line and exit 0; exit 2
 * with a usage line. Settings come from cdk.json and PETSTORE_* as the app reads them (infra/settings.ts).
 */
import { ACMClient } from "@aws-sdk/client-acm";
import { APIGatewayClient } from "@aws-sdk/client-api-gateway";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { Route53Client } from "@aws-sdk/client-route-53";
import { STSClient } from "@aws-sdk/client-sts";
import { stageConfigOf } from "../../infra/config";
import type { DeployedStageName } from "../../infra/deployment";
import { routeList } from "../../lib/routes";
import { runAsScript } from "../entryPoint";
import { parseStageArguments, runStageCommand, type StageCommandOptions, stageUsage } from "../stageCommand";
import { type PreflightClients, PreflightError, runPreflight } from "./checks";

export const usage = stageUsage("preflight");

const help = `${usage}
Checks with read-only AWS calls, before cdk deploy, that the stage can be deployed: the credentials'
account, the stacks' states, the custom domain's certificate, hosted zone and DNS record, Lambda's
concurrency quota and API Gateway's CloudWatch role. Run it with credentials for the stage's account.
Exits 0 when ready, 1 with one line per problem, 2 on bad arguments.`;

/** The stage to check, or "help"; a mistake throws a StageUsageError (scripts/stageCommand.ts). */
export function parsePreflightArguments(argv: readonly string[]): { stage: DeployedStageName } | "help" {
  return parseStageArguments(argv, usage);
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
export function main(argv: readonly string[], options: StageCommandOptions = {}): Promise<number> {
  const command = { name: "preflight", help, usage, failures: [PreflightError] };
  return runStageCommand(command, argv, options, async ({ stage, settings, region, say }) => {
    const report = await runPreflight({
      stage,
      settings,
      config: stageConfigOf(stage),
      apiFunctions: routeList.length,
      clients: createClients(region),
      region,
    });
    for (const problem of report.problems) say(problem);
    if (report.problems.length > 0) return 1;
    console.log(`preflight: ${stage} ready to deploy to ${report.account}/${report.region} (${report.checks} checks)`);
    return 0;
  });
}

await runAsScript(import.meta.url, main);
