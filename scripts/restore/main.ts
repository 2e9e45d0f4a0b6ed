/**
 * `npm run restore -- --stage <staging|prod> --to <ISO time> [--table-name <name>]` (docs/deploy.md, "Restoring the
 * table to a point in time"): restores via ./restore.ts and prints the setting that switches the stage to it. Lines
 * start with `restore: `; progress and failures on stderr, the result on stdout. Exit 0 restored, 1 with one line, 2
 * with a usage line. Region and account come from cdk.json and PETSTORE_* as the app reads them (infra/settings.ts).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { STSClient } from "@aws-sdk/client-sts";
import { servingTableName, stageConfigOf } from "../../infra/config";
import { type DeployedStageName, deployedStages } from "../../infra/deployment";
import { contextKey, tableNameProblem } from "../../infra/settings";
import { stageTableSettings } from "../../infra/stacks/dataStack";
import { runAsScript } from "../entryPoint";
import {
  parseStageArguments,
  runStageCommand,
  type StageCommandOptions,
  StageUsageError,
  stageNames,
} from "../stageCommand";
import { type RestoreClients, RestoreError, restoreTable } from "./restore";

const NAME = "restore";
export const usage = `Usage: npm run restore -- --stage <${stageNames.join("|")}> --to <ISO time, e.g. 2026-05-04T09:30:00Z> [--table-name <new table>]`;

const help = `${usage}
Restores the table the stage uses, as it was at --to (inside its point-in-time recovery window),
into a new table (default petstore-<stage>-restored-<yyyymmddhhmm of --to, UTC>), waits until it is
ACTIVE, and gives it the stage's TTL, point-in-time recovery, deletion protection and tags. It prints
the cdk.json setting that switches the stage to the new table and what to do next; the stage keeps
using its table until that setting is deployed. Run it with an administrator's credentials for the
stage's account. Exit 0 restored, 1 with one line when it could not, 2 on bad arguments
(docs/deploy.md, "Restoring the table to a point in time").`;

export interface RestoreArguments {
  readonly stage: DeployedStageName;
  readonly restoreTo: Date;
  readonly tableName: string;
}

/** A time with its zone (`Z` or an offset): a local time would restore a different moment on each laptop. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/;

/** `petstore-<stage>-restored-<yyyymmddhhmm>`, in UTC: the name says what point in time it holds. */
export function defaultTableName(stage: DeployedStageName, restoreTo: Date): string {
  const stamp = restoreTo.toISOString().slice(0, 16).replace(/[-T:]/g, "");
  return `${deployedStages[stage].tableName}-restored-${stamp}`;
}

/** The arguments, or "help"; a mistake throws a StageUsageError ending with the usage line. */
export function parseRestoreArguments(argv: readonly string[]): RestoreArguments | "help" {
  const parsed = parseStageArguments(argv, usage, ["to", "table-name"]);
  if (parsed === "help") return "help";
  const refuse = (message: string) => new StageUsageError(`${message}. ${usage}`);
  const { stage, options } = parsed;
  const { to } = options;
  if (!to) throw refuse("--to is required");
  const restoreTo = new Date(to);
  if (!ISO_TIME.test(to) || Number.isNaN(restoreTo.getTime())) {
    throw refuse(`--to "${to}" is no ISO time with a zone (2026-05-04T09:30:00Z or 2026-05-04T11:30:00+02:00)`);
  }
  const tableName = options["table-name"] ?? defaultTableName(stage, restoreTo);
  const problem = tableNameProblem(stage, tableName);
  if (problem) throw refuse(`--table-name ${problem}`);
  return { stage, restoreTo, tableName };
}

/** Clients for the stage's region, with the default credential chain (environment, profile, SSO, role). */
export function createClients(region: string): RestoreClients {
  return { dynamo: new DynamoDBClient({ region }), sts: new STSClient({ region }) };
}

/** What to do once the table is restored: the setting to commit, the release check, a normal deploy. */
export function nextSteps(stage: DeployedStageName, sourceTableName: string, tableName: string): string[] {
  const { stackName } = deployedStages[stage];
  return [
    `1. In cdk.json's "context" set "${contextKey(stage, "tableName")}": "${tableName}" and commit it in a pull request.`,
    `2. npm run release-check -- --base origin/main shows the switch: ${stackName}'s functions get access to ${tableName} instead of ${sourceTableName} (iam-widening); acknowledge those findings in release-acknowledgements.json.`,
    `3. Deploy as usual. Until then the stage keeps using ${sourceTableName}, which the switch leaves as it is (the data stack keeps its table).`,
  ];
}

/** Runs the command; returns the exit code. Every line it prints starts with `restore: `. */
export async function main(
  argv: readonly string[],
  options: StageCommandOptions & {
    clients?: (region: string) => RestoreClients;
    sleep?: (milliseconds: number) => Promise<void>;
  } = {},
): Promise<number> {
  const { clients = createClients } = options;
  const command = { name: NAME, help, usage, failures: [RestoreError], parse: parseRestoreArguments };
  return runStageCommand(
    command,
    argv,
    options,
    async ({ stage, arguments: { restoreTo, tableName }, settings, region, say }) => {
      const config = stageConfigOf(stage);
      const sourceTableName = servingTableName({ tableName: config.tableName, settings });
      if (tableName === sourceTableName) {
        throw new RestoreError(`${tableName} is the table ${stage} uses now: pass --table-name with a new name.`);
      }
      const tableSettings = stageTableSettings(config);
      say(`restoring ${sourceTableName} as it was at ${restoreTo.toISOString()} into ${tableName} (${region}).`);
      const result = await restoreTable({
        stage,
        ...(settings.account === undefined ? {} : { pinnedAccount: settings.account }),
        sourceTableName,
        targetTableName: tableName,
        restoreTo,
        settings: tableSettings,
        clients: clients(region),
        say,
        ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
      });
      const tags = Object.entries(tableSettings.tags)
        .map(([key, value]) => `${key}=${value}`)
        .join(", ");
      const lines = [
        `${tableName} is ACTIVE in ${result.account}/${region}: ${sourceTableName} as it was at ${restoreTo.toISOString()}, ` +
          `with TTL on ${tableSettings.timeToLiveAttribute}, ${tableSettings.pointInTimeRecoveryDays} days of point-in-time recovery, ` +
          `deletion protection ${tableSettings.deletionProtection ? "on" : "off"}, tags ${tags}, ` +
          `encrypted as ${sourceTableName} (${result.kmsKeyArn ?? "DynamoDB's own key"}).`,
        ...nextSteps(stage, sourceTableName, tableName),
      ];
      for (const line of lines) console.log(`${NAME}: ${line}`);
      return 0;
    },
  );
}

await runAsScript(import.meta.url, main);
