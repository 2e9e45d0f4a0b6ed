/**
 * What the commands for one deployed stage (`--stage <staging|prod>`) share: arguments, the stage's settings and region
 * as the CDK app reads them, and output: every line starts with `<command>: `; exit 0 or 1 as the command decides, 1
 * with one line on anything unforeseen (never a stack trace), 2 with a usage line on bad arguments.
 */
import { parseArgs } from "node:util";
import { type DeployedStageName, deployedStages } from "../infra/deployment";
import { contextKey, readStageSettings, SettingsError, type StageSettings } from "../infra/settings";
import { checkoutContext } from "../infra/settingsBaseline";
import { noRegionLine } from "./awsErrors";

export const stageNames = Object.keys(deployedStages) as DeployedStageName[];

/** The usage line of `npm run <command>`. */
export const stageUsage = (command: string): string => `Usage: npm run ${command} -- --stage <${stageNames.join("|")}>`;

/** A mistake in how the command was called: exit 2, one line. */
export class StageUsageError extends Error {}

/** What stops the command before it starts, in one line: exit 1. */
export class StageCommandError extends Error {
  override readonly name = "StageCommandError";
}

/** A command's arguments once parsed: the stage, and the values of its own string options. */
export interface StageArguments {
  readonly stage: DeployedStageName;
  readonly options: Readonly<Record<string, string | undefined>>;
}

/**
 * The stage `argv` names and the values of `commandOptions` (string options of the command's own), or "help"; a usage
 * error ends with `usage`.
 */
export function parseStageArguments(
  argv: readonly string[],
  usage: string,
  commandOptions: readonly string[] = [],
): StageArguments | "help" {
  let values: { stage?: string; help?: boolean; [option: string]: string | boolean | undefined };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        ...Object.fromEntries(commandOptions.map((option) => [option, { type: "string" as const }])),
        stage: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    // parseArgs' first sentence only: the rest suggests `--` spellings that mean nothing here.
    const message = (error as Error).message.split(/\.\s/)[0]?.replace(/\.$/, "") ?? "bad arguments";
    throw new StageUsageError(`${message.replace(/\s+/g, " ")}. ${usage}`);
  }
  if (values.help) return "help";
  const { stage } = values;
  if (stage === undefined || stage === "") throw new StageUsageError(`--stage is required. ${usage}`);
  if (!stageNames.includes(stage as DeployedStageName)) {
    throw new StageUsageError(`unknown stage "${stage}". ${usage}`);
  }
  const options = Object.fromEntries(commandOptions.map((option) => [option, values[option] as string | undefined]));
  return { stage: stage as DeployedStageName, options };
}

/**
 * The stage's pinned region (cdk.json's `<stage>:region`), else the one AWS_REGION or AWS_DEFAULT_REGION names, as the
 * SDK and the CDK CLI would use; undefined when none does.
 */
export function configuredStageRegion(settings: StageSettings, env: NodeJS.ProcessEnv): string | undefined {
  return settings.region ?? (env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || undefined);
}

/** The stage's settings as the CDK app reads them: the context first, then PETSTORE_* variables (infra/settings.ts). */
export function stageSettingsOf(stage: DeployedStageName, options: StageCommandOptions = {}): StageSettings {
  // The working tree's cdk.json: the committed settings, which the pipeline deploys with too.
  const { env = process.env, context = () => checkoutContext() } = options;
  const settingsContext = context();
  return readStageSettings(stage, (key) => settingsContext[key], env);
}

/** The stage's pinned region, else the one the SDK and the CDK CLI would use. */
function stageRegion(stage: DeployedStageName, settings: StageSettings, env: NodeJS.ProcessEnv): string {
  const region = configuredStageRegion(settings, env);
  if (!region) {
    throw new StageCommandError(noRegionLine(contextKey(stage, "region"), stage));
  }
  return region;
}

export interface StageCommand<Parsed extends { readonly stage: DeployedStageName } = StageArguments> {
  /** The npm script, which starts every line the command prints. */
  readonly name: string;
  /** What --help prints. */
  readonly help: string;
  /** The usage line that ends a usage error. */
  readonly usage: string;
  /** The command's own errors, each a one-line verdict: exit 1. */
  readonly failures: readonly (abstract new (
    ...args: never[]
  ) => Error)[];
  /**
   * Reads the command's arguments, throwing a StageUsageError for a mistake; by default only `--stage`
   * (parseStageArguments).
   */
  readonly parse?: (argv: readonly string[]) => Parsed | "help";
}

export interface StageCommandOptions {
  env?: NodeJS.ProcessEnv;
  /** cdk.json's "context"; by default the working tree's. */
  context?: () => Readonly<Record<string, unknown>>;
}

/** The stage a command runs for, its arguments, what it needs of it, and how it says a line to stderr. */
export interface StageRun<Parsed = StageArguments> {
  readonly stage: DeployedStageName;
  readonly arguments: Parsed;
  readonly settings: StageSettings;
  readonly region: string;
  readonly env: NodeJS.ProcessEnv;
  say(line: string): void;
}

/**
 * Runs `command` with `argv`: prints its help, or reads the stage's settings and region and calls `run` with them;
 * returns the exit code, `run`'s unless something throws.
 */
export async function runStageCommand<Parsed extends { readonly stage: DeployedStageName } = StageArguments>(
  command: StageCommand<Parsed>,
  argv: readonly string[],
  options: StageCommandOptions,
  run: (stage: StageRun<Parsed>) => Promise<number>,
): Promise<number> {
  const { env = process.env } = options;
  const say = (line: string) => console.error(`${command.name}: ${line}`);
  try {
    const parsed = command.parse ? command.parse(argv) : parseStageArguments(argv, command.usage);
    if (parsed === "help") {
      console.log(command.help);
      return 0;
    }
    const { stage } = parsed;
    const settings = stageSettingsOf(stage, options);
    const region = stageRegion(stage, settings, env);
    return await run({ stage, arguments: parsed as Parsed, settings, region, env, say });
  } catch (error) {
    if (error instanceof StageUsageError) {
      say(error.message);
      return 2;
    }
    if (
      error instanceof StageCommandError ||
      error instanceof SettingsError ||
      command.failures.some((failure) => error instanceof failure)
    ) {
      say((error as Error).message);
      return 1;
    }
    // A bug, or something nothing here foresaw: still one line, never a stack trace in the deploy log.
    const { name, message } = error instanceof Error ? error : { name: "Error", message: String(error) };
    say(`unexpected ${name}: ${message.replace(/\s+/g, " ").trim()}`);
    return 1;
  }
}
