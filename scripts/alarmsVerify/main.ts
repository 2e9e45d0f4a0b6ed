/**
 * `npm run alarms:verify -- --stage <staging|prod>`: runs ./verify.ts with the stage account's credentials. One line:
 * stdout and exit 0 when delivered, stderr and exit 1 when it failed or could not be tested, exit 2 with a usage line.
 * Region and account come from cdk.json and PETSTORE_* as the app reads them (infra/settings.ts).
 */
import { hostname, userInfo } from "node:os";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { CloudWatchClient } from "@aws-sdk/client-cloudwatch";
import { SNSClient } from "@aws-sdk/client-sns";
import { STSClient } from "@aws-sdk/client-sts";
import { alarmDeliveryTestAlarmName, type DeployedStageName, deployedStages } from "../../infra/deployment";
import { runAsScript } from "../entryPoint";
import { parseStageArguments, runStageCommand, type StageCommandOptions, stageUsage } from "../stageCommand";
import { type AlarmsVerifyClients, AlarmsVerifyError, verifyAlarmDelivery } from "./verify";

export const usage = stageUsage("alarms:verify");

const help = `${usage}
Checks that each paging topic of the stage (its alarm topic, and <stage>:alarmTopicArn if set) has
a confirmed subscription and that every confirmed one filters the test out; then sets the alarm
delivery test alarm (petstore-<stage>-alarm-delivery-test) to ALARM, waits for CloudWatch to publish
this run's notification to every paging topic, and sets it back to OK. Run it with credentials for
the stage's account. Exits 0 when every paging topic accepted the notification, 1 with one line
saying what to do when not, 2 on bad arguments (docs/alarms.md).`;

/** The stage to test, or "help"; a mistake throws a StageUsageError (scripts/stageCommand.ts). */
export function parseAlarmsVerifyArguments(argv: readonly string[]): { stage: DeployedStageName } | "help" {
  return parseStageArguments(argv, usage);
}

/** What the alarm's state reason calls this run: the GitHub Actions run, or who ran it where and when. */
export function runName(env: NodeJS.ProcessEnv, now: Date): string {
  const { GITHUB_REPOSITORY, GITHUB_RUN_ID, GITHUB_RUN_ATTEMPT } = env;
  if (GITHUB_RUN_ID) {
    const attempt = GITHUB_RUN_ATTEMPT ? ` attempt ${GITHUB_RUN_ATTEMPT}` : "";
    return `GitHub Actions run ${GITHUB_RUN_ID}${attempt}${GITHUB_REPOSITORY ? ` of ${GITHUB_REPOSITORY}` : ""}`;
  }
  let who = "someone";
  try {
    who = `${userInfo().username}@${hostname()}`;
  } catch {
    // No user name on this machine (a container without a passwd entry): "someone" it is.
  }
  return `run by ${who} at ${now.toISOString()}`;
}

/** Clients for the stage's region, with the default credential chain (environment, profile, SSO, role). */
export function createClients(region: string): AlarmsVerifyClients {
  return {
    cloudWatch: new CloudWatchClient({ region }),
    sts: new STSClient({ region }),
    sns: new SNSClient({ region }),
    cloudFormation: new CloudFormationClient({ region }),
  };
}

/** Runs the command; returns the exit code. Every line it prints starts with `alarms:verify: `. */
export function main(
  argv: readonly string[],
  options: StageCommandOptions & {
    clients?: (region: string) => AlarmsVerifyClients;
    clock?: () => Date;
    sleep?: (milliseconds: number) => Promise<void>;
    /** This run's id (default a random UUID, verify.ts). */
    runId?: string;
  } = {},
): Promise<number> {
  const { clients = createClients } = options;
  const command = { name: "alarms:verify", help, usage, failures: [AlarmsVerifyError] };
  return runStageCommand(command, argv, options, async ({ stage, settings, region, env, say }) => {
    const now = options.clock ?? (() => new Date());
    const result = await verifyAlarmDelivery({
      stage,
      ...(settings.account === undefined ? {} : { pinnedAccount: settings.account }),
      region,
      stackName: deployedStages[stage].stackName,
      ...(settings.alarmTopicArn === undefined ? {} : { externalTopicArn: settings.alarmTopicArn }),
      alarmName: alarmDeliveryTestAlarmName(stage),
      runName: runName(env, now()),
      clients: clients(region),
      clock: now,
      ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
      ...(options.runId === undefined ? {} : { runId: options.runId }),
    });
    if (!result.ok) {
      say(result.line);
      return 1;
    }
    console.log(`alarms:verify: ${result.line}`);
    return 0;
  });
}

await runAsScript(import.meta.url, main);
