/**
 * `npm run keys -- <create|list|revoke>`: manages API keys. A new key is printed once and only
 * its hash is stored. Talks to the local DynamoDB unless --stage names a deployed stage, whose
 * table it finds in the stage's stack outputs with the caller's AWS credentials and region.
 *
 *   npm run keys -- create --name NAME [--synthetic [--expires-in 1h]] [--quiet] [--stage staging|prod [--table NAME] [--region R]]
 *   npm run keys -- list [--stage …]
 *   npm run keys -- revoke KEY_ID [--stage …]
 *
 * The local database is found as `npm start` found its own, and checked before anything is
 * written (local/localDatabase.ts).
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type DeployedStageName, deployedStages, STACK_OUTPUTS } from "../infra/deployment";
import { contextKey, SettingsError } from "../infra/settings";
import { type ApiKeyRecord, issueApiKey, SYNTHETIC_KEY_LIFETIME_SECONDS } from "../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { KEY_CACHE_TTL_MS } from "../lib/auth/verifier";
import { SYNTHETIC_PET_RETENTION_SECONDS } from "../lib/pets/collection";
import { LocalDatabaseError, openLocalDatabase } from "../local/localDatabase";
import { isNpmStartKeyName } from "../local/localKey";
import {
  dynamoEndpointSetting,
  LOCAL_TABLE_NAME,
  type LocalDynamoSetting,
  LocalSettingError,
  localDynamoSetting,
  silenceSdkNodeVersionWarning,
} from "../local/settings";
import { awsErrorKind } from "./awsErrors";
import { readStackOutput } from "./stackOutputs";
import { configuredStageRegion, type StageCommandOptions, stageNames, stageSettingsOf } from "./stageCommand";

/** The columns of `keys list`, in order; the usage text names them from here. */
const listColumns: readonly { readonly title: string; readonly value: (record: ApiKeyRecord) => string }[] = [
  { title: "ID", value: (record) => record.keyId },
  { title: "NAME", value: (record) => record.name },
  { title: "CREATED", value: (record) => record.createdAt },
  { title: "REVOKED", value: (record) => record.revokedAt ?? "-" },
  { title: "SYNTHETIC", value: (record) => (record.synthetic ? "yes" : "-") },
];

const usage = `Usage:
  npm run keys -- create --name NAME [--quiet]   issue a key; prints it once (--quiet: only the key, for
                   [--synthetic]                 KEY=$(npm run -s keys -- create --name NAME --quiet)); --synthetic:
                                                 a key for checks (smoke runs): its pets are seen by no other
                                                 key and expire after ${SYNTHETIC_PET_RETENTION_SECONDS / 3600} h; the key itself after ${SYNTHETIC_KEY_LIFETIME_SECONDS / 86400} days
                   [--expires-in DURATION]       with --synthetic: the key expires sooner, e.g. 1h, 90m, 7d (s, m, h, d;
                                                 at most ${SYNTHETIC_KEY_LIFETIME_SECONDS / 86400}d)
  npm run keys -- list                           list keys: ${listColumns.map((column) => column.title.toLowerCase()).join(", ")}
  npm run keys -- revoke KEY_ID                  revoke a key; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s
Options:
  --stage STAGE    local (default), staging or prod: a deployed stage is reached with your AWS
                   credentials, its table found in the outputs of stack ${deployedStages.staging.stackName} or ${deployedStages.prod.stackName}
  --table NAME     the table (local default: PETS_TABLE_NAME, or ${LOCAL_TABLE_NAME}; deployed: from the stack)
  --region REGION  AWS region of a deployed stage (default: the stage's region pinned in cdk.json, as
                   npm run preflight uses it, else AWS_REGION or your AWS configuration)
  --endpoint URL   local only: a DynamoDB-compatible endpoint holding the table (default: DYNAMODB_ENDPOINT)
Locally, as npm start: DYNAMODB_ENDPOINT, else this folder's running npm start (the one on DYNAMODB_PORT,
8000 by default, else the one holding .data/), else the data in .data/ directly.`;

export class UsageError extends Error {}

export type KeysTarget =
  | {
      readonly kind: "local";
      readonly stage: "local";
      readonly tableName: string;
      readonly dynamo: LocalDynamoSetting;
      /** Where an endpoint came from, for messages: --endpoint or DYNAMODB_ENDPOINT. */
      readonly endpointSource?: string;
    }
  | {
      readonly kind: "deployed";
      readonly stage: DeployedStageName;
      readonly stackName: string;
      /** Unset: read from the stack's outputs. */
      readonly tableName?: string;
      /** Unset: the caller's AWS configuration decides. */
      readonly region?: string;
    };

export type KeysCommand =
  | { readonly command: "help" }
  | {
      readonly command: "create";
      readonly name: string;
      readonly quiet: boolean;
      readonly synthetic: boolean;
      /** --expires-in, in seconds; absent: the default lifetime (synthetic keys only). */
      readonly lifetimeSeconds?: number;
      readonly target: KeysTarget;
    }
  | { readonly command: "list"; readonly target: KeysTarget }
  | { readonly command: "revoke"; readonly keyId: string; readonly target: KeysTarget };

const stageAliases: Readonly<Record<string, DeployedStageName | "local">> = {
  local: "local",
  staging: "staging",
  prod: "prod",
  production: "prod",
};

const durationUnits: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * A key's lifetime from --expires-in: a whole number and a unit (`90s`, `30m`, `1h`, `30d`), above 0
 * and at most a synthetic key's default lifetime: the option only shortens it, since a long-lived
 * synthetic key is what the default already limits (lib/auth/apiKeys.ts).
 */
export function parseExpiresIn(text: string): number {
  const match = /^([0-9]{1,9})([smhd])$/.exec(text);
  const seconds = match ? Number(match[1]) * (durationUnits[match[2] as string] as number) : 0;
  if (seconds <= 0) {
    throw new UsageError(
      `--expires-in must be a whole number above 0 and a unit, s, m, h or d (for example 1h or 30d), not "${text}".`,
    );
  }
  if (seconds > SYNTHETIC_KEY_LIFETIME_SECONDS) {
    throw new UsageError(
      `--expires-in can be at most ${SYNTHETIC_KEY_LIFETIME_SECONDS / 86_400}d, a synthetic key's longest lifetime, not "${text}".`,
    );
  }
  return seconds;
}

/** Reads the command line; `env` supplies the local defaults (a deployed stage ignores them). */
export function parseKeysArguments(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): KeysCommand {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      name: { type: "string" },
      quiet: { type: "boolean", default: false },
      synthetic: { type: "boolean", default: false },
      "expires-in": { type: "string" },
      stage: { type: "string" },
      endpoint: { type: "string" },
      table: { type: "string" },
      region: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || !command) return { command: "help" };

  const stage = stageAliases[(values.stage ?? "local").toLowerCase()];
  if (!stage) throw new UsageError(`--stage must be local, staging or prod, not "${values.stage}".`);
  let target: KeysTarget;
  if (stage === "local") {
    if (values.region) throw new UsageError("--region is for a deployed stage (--stage staging or prod).");
    const tableName = values.table ?? (env.PETS_TABLE_NAME || LOCAL_TABLE_NAME);
    if (values.endpoint !== undefined) {
      target = {
        kind: "local",
        stage,
        tableName,
        dynamo: dynamoEndpointSetting(values.endpoint, "--endpoint"),
        endpointSource: "--endpoint",
      };
    } else target = { kind: "local", stage, tableName, dynamo: localDynamoSetting(env) };
  } else {
    if (values.endpoint) {
      throw new UsageError(
        "--endpoint is for the local DynamoDB; a deployed stage is reached with your AWS credentials.",
      );
    }
    target = {
      kind: "deployed",
      stage,
      stackName: deployedStages[stage].stackName,
      ...(values.table ? { tableName: values.table } : {}),
      ...(values.region ? { region: values.region } : {}),
    };
  }

  const expiresIn = values["expires-in"];
  if (expiresIn !== undefined && command !== "create") throw new UsageError("--expires-in is an option of create.");
  switch (command) {
    case "create": {
      if (!values.name) throw new UsageError("create needs --name NAME (who or what the key is for).");
      // npm start revokes the keys it made at its next start, and knows them by this name.
      if (target.kind === "local" && isNpmStartKeyName(values.name))
        throw new UsageError(
          `"${values.name}" is the name npm start gives the keys it makes and revokes at its next start; choose another name.`,
        );
      // Ordinary keys never expire (lib/auth/apiKeys.ts); checked before the value, the first thing to fix.
      if (expiresIn !== undefined && !values.synthetic)
        throw new UsageError("--expires-in is for synthetic keys (--synthetic); ordinary keys do not expire.");
      return {
        command,
        name: values.name,
        quiet: values.quiet,
        synthetic: values.synthetic,
        ...(expiresIn === undefined ? {} : { lifetimeSeconds: parseExpiresIn(expiresIn) }),
        target,
      };
    }
    case "list":
      return { command, target };
    case "revoke": {
      const keyId = rest[0];
      if (!keyId) throw new UsageError("revoke needs the key id (see: npm run keys -- list).");
      return { command, keyId, target };
    }
    default:
      throw new UsageError(`Unknown command "${command}".\n${usage}`);
  }
}

/** The stage's table name, from the outputs of its CloudFormation stack. */
export async function findStageTable(cloudFormation: CloudFormationClient, stackName: string): Promise<string> {
  const output = await readStackOutput(cloudFormation, stackName, STACK_OUTPUTS.tableName);
  switch (output.found) {
    case "value":
      return output.value;
    case "no stack":
      throw new UsageError(
        `No stack ${stackName} in ${await cloudFormation.config.region()}: deploy the stage first, or pass --region (or --table).`,
      );
    case "no output":
      throw new UsageError(`Stack ${stackName} has no ${STACK_OUTPUTS.tableName} output; pass --table NAME.`);
  }
}

/**
 * The region a deployed stage is reached in: --region, else the one preflight and alarms:verify use
 * (the stage's region pinned in cdk.json, else AWS_REGION; scripts/stageCommand.ts), else undefined
 * for the SDK to find in the AWS configuration (a profile's region).
 */
export function deployedRegion(
  target: Extract<KeysTarget, { kind: "deployed" }>,
  options: StageCommandOptions = {},
): string | undefined {
  return target.region ?? configuredStageRegion(stageSettingsOf(target.stage, options), options.env ?? process.env);
}

interface OpenedStore {
  readonly store: DynamoApiKeyStore;
  /** Where the keys are, for the create message: "on staging (table …)", "in the data folder …". */
  readonly where: string;
  close(): Promise<void>;
}

async function openStore(
  target: KeysTarget,
  options: StageCommandOptions,
  warn: (line: string) => void,
): Promise<OpenedStore> {
  if (target.kind === "deployed") {
    const region = deployedRegion(target, options);
    const clientConfig = region ? { region } : {};
    const tableName =
      target.tableName ?? (await findStageTable(new CloudFormationClient(clientConfig), target.stackName));
    const client = new DynamoDBClient(clientConfig);
    return {
      store: new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), tableName),
      where: `on ${target.stage} (table ${tableName}, ${await client.config.region()})`,
      close: async () => client.destroy(),
    };
  }
  const database = await openLocalDatabase(target.dynamo, target.tableName, {
    ...(target.endpointSource ? { endpointSource: target.endpointSource } : {}),
    notice: (line) => warn(`keys: ${line}`),
  });
  return {
    store: new DynamoApiKeyStore(DynamoDBDocumentClient.from(database.client), target.tableName),
    where: `in ${database.description}`,
    close: () => database.close(),
  };
}

/**
 * `npm run keys` without -s writes its "> petstore-api@1.0.0 keys" banner to stdout too, so
 * KEY=$(npm run keys -- create … --quiet) captures more than the key. npm tells its scripts its log
 * level; when the output is captured (not a terminal) and npm was not silenced, say so on stderr.
 */
export function npmBannerWarning(env: NodeJS.ProcessEnv, stdoutIsTerminal: boolean): string | undefined {
  if (stdoutIsTerminal || env.npm_lifecycle_event !== "keys" || env.npm_config_loglevel === "silent") return undefined;
  return "keys: npm also printed its banner to standard output; to capture only the key: KEY=$(npm run -s keys -- create --name NAME --quiet)";
}

/** Aligned columns with a header row; the last column is not padded. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join("  "),
  );
}

/**
 * Runs one command; `print` receives each line of output, `warn` each notice for stderr. `options`
 * (tests): the environment and cdk.json "context" a deployed stage's region is read from.
 */
export async function runKeys(
  argv: readonly string[],
  print: (line: string) => void = console.log,
  warn: (line: string) => void = console.error,
  options: StageCommandOptions = {},
): Promise<void> {
  const parsed = parseKeysArguments(argv, options.env ?? process.env);
  if (parsed.command === "help") {
    print(usage);
    return;
  }
  const { target } = parsed;
  const opened = await openStore(target, options, warn);
  try {
    const { store } = opened;
    switch (parsed.command) {
      case "create": {
        const { key, record } = await issueApiKey(store, target.stage, parsed.name, {
          synthetic: parsed.synthetic,
          ...(parsed.lifetimeSeconds === undefined ? {} : { lifetimeSeconds: parsed.lifetimeSeconds }),
        });
        // Only synthetic keys expire (lib/auth/apiKeys.ts); whoever stores one must know when.
        const expiry = record.expiresAt === undefined ? "" : `It expires at ${record.expiresAt}.`;
        if (parsed.quiet) {
          const notice = npmBannerWarning(process.env, Boolean(process.stdout.isTTY));
          if (notice) warn(notice);
          // Standard error: standard output is the key alone, for a pipe.
          if (expiry) warn(`keys: synthetic key ${record.keyId} created. ${expiry}`);
          print(key);
        } else {
          print(
            `Created ${record.synthetic ? "synthetic key " : ""}${record.keyId} (${record.name}) ${opened.where}.${expiry ? ` ${expiry}` : ""} The key is shown once; store it now:\n${key}`,
          );
        }
        return;
      }
      case "list": {
        const records = await store.list();
        if (records.length === 0) {
          print("No keys.");
          return;
        }
        const rows = records.map((record) => listColumns.map((column) => column.value(record)));
        for (const line of table([listColumns.map((column) => column.title), ...rows])) print(line);
        return;
      }
      case "revoke": {
        if (!(await store.revoke(parsed.keyId, new Date()))) throw new UsageError(`No key has id ${parsed.keyId}.`);
        print(`Revoked ${parsed.keyId}; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s.`);
        return;
      }
    }
  } finally {
    await opened.close();
  }
}

/** One line for the failures a person can fix at once; undefined for everything else. */
export function explainFailure(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // TypeError: what parseArgs throws for an unknown or malformed option.
  if (
    error instanceof UsageError ||
    error instanceof TypeError ||
    error instanceof LocalSettingError ||
    error instanceof LocalDatabaseError ||
    error instanceof SettingsError
  )
    return error.message;
  if (awsErrorKind(error.name) === "no credentials") {
    return "No AWS credentials found: sign in to the stage's account (for example aws sso login, or set AWS_PROFILE).";
  }
  if (/region is missing/i.test(error.message)) {
    const pins = stageNames.map((stage) => contextKey(stage, "region")).join(" or ");
    return `No AWS region configured: pin the stage's region in cdk.json's "context" (${pins}), pass --region, or set AWS_REGION.`;
  }
  return undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  silenceSdkNodeVersionWarning();
  runKeys(process.argv.slice(2)).catch((error: unknown) => {
    const explained = explainFailure(error);
    console.error(explained === undefined ? error : `keys: ${explained}`);
    process.exit(1);
  });
}
