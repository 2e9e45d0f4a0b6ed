/**
 * `npm run keys -- <create|list|rotate|revoke>` (usage below): manages API keys; a new key is printed once, only its
 * hash stored. Uses the local database (found and checked as `npm start` does, local/localDatabase.ts) unless --stage
 * names a deployed stage, whose table comes from its stack outputs.
 */
import { parseArgs } from "node:util";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type DeployedStageName, deployedStages, STACK_OUTPUTS } from "../infra/deployment";
import { contextKey, SettingsError } from "../infra/settings";
import {
  type ApiKeyRecord,
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  isExpired,
  issueApiKey,
  KEY_CACHE_TTL_MS,
  KeyRotationError,
  type KeyScope,
  keyScopes,
  MIN_ROTATION_OVERLAP_SECONDS,
  rotateApiKey,
  SYNTHETIC_KEY_LIFETIME_SECONDS,
  scopeOf,
} from "../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { DynamoKeyUsageStore } from "../lib/auth/dynamoKeyUsageStore";
import { type KeyUse, usageDayOf } from "../lib/auth/keyUsage";
import { SYNTHETIC_PET_RETENTION_SECONDS } from "../lib/pets/collection";
import { LocalDatabaseError, openLocalDatabase } from "../local/localDatabase";
import { isNpmStartKeyName } from "../local/localKey";
import {
  dynamoEndpointSetting,
  LOCAL_TABLE_NAME,
  type LocalDynamoSetting,
  LocalSettingError,
  localDynamoSetting,
} from "../local/settings";
import { awsErrorKind, noRegionLine, signInLine } from "./awsErrors";
import { DurationError, formatDuration, parseDuration } from "./duration";
import { runAsScript } from "./entryPoint";
import { readStackOutput } from "./stackOutputs";
import { configuredStageRegion, type StageCommandOptions, stageNames, stageSettingsOf } from "./stageCommand";

/** Each key's recorded uses (lib/auth/keyUsage.ts), newest first. */
export type UsesByKey = ReadonlyMap<string, readonly KeyUse[]>;

/** Groups uses by key, each key's newest first (ties by operation, for a stable listing). */
export function usesByKey(uses: readonly KeyUse[]): UsesByKey {
  const byKey = new Map<string, KeyUse[]>();
  for (const use of uses) {
    const list = byKey.get(use.keyId);
    if (list) list.push(use);
    else byKey.set(use.keyId, [use]);
  }
  for (const list of byKey.values())
    list.sort((a, b) => b.lastUsedOn.localeCompare(a.lastUsedOn) || a.operationId.localeCompare(b.operationId));
  return byKey;
}

/**
 * The columns of `keys list`, in order; the usage text names them from here. The first five are the ones the command
 * always had (scripts may read them by position); the last is not padded.
 */
const listColumns: readonly {
  readonly title: string;
  readonly value: (record: ApiKeyRecord, uses: UsesByKey) => string;
}[] = [
  { title: "ID", value: (record) => record.keyId },
  { title: "NAME", value: (record) => record.name },
  { title: "CREATED", value: (record) => record.createdAt },
  { title: "REVOKED", value: (record) => record.revokedAt ?? "-" },
  { title: "SYNTHETIC", value: (record) => (record.synthetic ? "yes" : "-") },
  { title: "SCOPE", value: (record) => scopeOf(record) },
  { title: "EXPIRES", value: (record) => record.expiresAt ?? "-" },
  { title: "REPLACED BY", value: (record) => record.replacedBy ?? "-" },
  { title: "REPLACES", value: (record) => record.replaces ?? "-" },
  {
    title: "LAST USED",
    value: (record, uses) =>
      uses
        .get(record.keyId)
        ?.map((use) => `${use.operationId} ${use.lastUsedOn}`)
        .join(", ") ?? "never",
  },
];

const SYNTHETIC_MAX = formatDuration(SYNTHETIC_KEY_LIFETIME_SECONDS);
const DEFAULT_OVERLAP = formatDuration(DEFAULT_ROTATION_OVERLAP_SECONDS);
const MIN_OVERLAP = formatDuration(MIN_ROTATION_OVERLAP_SECONDS);

/** The options that say where the keys are, for keys and the commands that read its table (deprecation-report). */
export const targetUsage = `  --stage STAGE    local (default), staging or prod: a deployed stage is reached with your AWS
                   credentials, its table found in the outputs of stack ${deployedStages.staging.stackName} or ${deployedStages.prod.stackName}
  --table NAME     the table (local default: PETS_TABLE_NAME, or ${LOCAL_TABLE_NAME}; deployed: from the stack)
  --region REGION  AWS region of a deployed stage (default: the stage's region pinned in cdk.json, as
                   npm run preflight uses it, else AWS_REGION or your AWS configuration)
  --endpoint URL   local only: a DynamoDB-compatible endpoint holding the table (default: DYNAMODB_ENDPOINT)
Locally, as npm start: DYNAMODB_ENDPOINT, else this folder's running npm start (the one on DYNAMODB_PORT,
8000 by default, else the one holding .data/), else the data in .data/ directly.`;

const usage = `Usage:
  npm run keys -- create --name NAME [--quiet]   issue a key; prints it once (--quiet: only the key, for
                   [--scope read|write]          KEY=$(npm run -s keys -- create --name NAME --quiet)); --scope read: the key
                                                 may only read (list and get pets); write (default): everything
                   [--synthetic]                 a key for checks (smoke runs): its pets are seen by no other
                                                 key and expire after ${SYNTHETIC_PET_RETENTION_SECONDS / 3600} h; the key itself after ${SYNTHETIC_KEY_LIFETIME_SECONDS / 86400} days
                   [--expires-in DURATION]       the key stops working after DURATION, e.g. 1h, 90m, 30d, 12w (s, m, h,
                                                 d, w; a synthetic key at most ${SYNTHETIC_MAX}); without it an ordinary key never expires
                   [--expires-at TIME]           or at TIME: 2027-03-01T00:00:00Z (a zone is needed) or 2027-03-01 (00:00 UTC)
  npm run keys -- list                           list keys: ${listColumns.map((column) => column.title.toLowerCase()).join(", ")}
                   [--unused-for DURATION]       only working keys not used for DURATION (e.g. 90d): candidates to revoke
  npm run keys -- rotate KEY_ID [--quiet]        a new key with the same name and scope, printed once; the old one keeps
                   [--overlap DURATION]          working for DURATION (default ${DEFAULT_OVERLAP}, at least ${MIN_OVERLAP}), then expires
  npm run keys -- revoke KEY_ID                  revoke a key; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s
Options:
${targetUsage}`;

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
      /** --scope; absent: issueApiKey's default, write. */
      readonly scope?: KeyScope;
      /** --expires-in, in seconds; absent: the default lifetime (30 days for a synthetic key, none for others). */
      readonly lifetimeSeconds?: number;
      /** --expires-at; the key's lifetime is worked out from it when the key is made. */
      readonly expiresAt?: Date;
      readonly target: KeysTarget;
    }
  | {
      readonly command: "list";
      /** --unused-for, in seconds: only working keys unused for that long. */
      readonly unusedForSeconds?: number;
      readonly target: KeysTarget;
    }
  | {
      readonly command: "rotate";
      readonly keyId: string;
      readonly overlapSeconds: number;
      readonly quiet: boolean;
      readonly target: KeysTarget;
    }
  | { readonly command: "revoke"; readonly keyId: string; readonly target: KeysTarget };

const stageAliases: Readonly<Record<string, DeployedStageName | "local">> = {
  local: "local",
  staging: "staging",
  prod: "prod",
  production: "prod",
};

/** An ISO 8601 date, or date-time with a zone: nothing a reader's time zone could change. */
const EXPIRES_AT = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/**
 * The instant --expires-at names: a date-time with a zone (`2027-03-01T09:30:00+01:00`) or a date (`2027-03-01`, 00:00
 * UTC), which must be a day of the calendar (Date.parse would turn 30 February into 2 March) and later than `now`.
 */
export function parseExpiresAt(text: string, now: Date): Date {
  const match = EXPIRES_AT.exec(text);
  const [year, month, day, hour = "0", minute = "0", second = "0"] = match?.slice(1).map((part) => part ?? "0") ?? [];
  const calendarDay = match ? new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))) : undefined;
  const valid =
    calendarDay !== undefined &&
    calendarDay.getUTCDate() === Number(day) &&
    calendarDay.getUTCMonth() === Number(month) - 1 &&
    Number(hour) < 24 &&
    Number(minute) < 60 &&
    Number(second) < 60;
  if (!valid)
    throw new UsageError(
      `--expires-at must be a date-time with a zone, such as 2027-03-01T00:00:00Z, or a date, 2027-03-01 (00:00 UTC), not "${text}".`,
    );
  const at = new Date(Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text));
  if (at.getTime() <= now.getTime())
    throw new UsageError(`--expires-at must be in the future; ${at.toISOString()} has passed.`);
  return at;
}

/**
 * A new key's lifetime in whole seconds from --expires-in or --expires-at (undefined: the default). A synthetic key's
 * may only be shortened: a long-lived synthetic key is what its default limits (lib/auth/apiKeys.ts).
 */
export function lifetimeOf(
  command: Pick<Extract<KeysCommand, { command: "create" }>, "lifetimeSeconds" | "expiresAt" | "synthetic">,
  now: Date,
): number | undefined {
  const seconds =
    command.expiresAt === undefined
      ? command.lifetimeSeconds
      : Math.ceil(command.expiresAt.getTime() / 1000) - Math.floor(now.getTime() / 1000);
  if (seconds === undefined) return undefined;
  if (seconds <= 0)
    throw new UsageError(`--expires-at must be in the future; ${command.expiresAt?.toISOString()} has passed.`);
  if (command.synthetic && seconds > SYNTHETIC_KEY_LIFETIME_SECONDS) {
    const option = command.expiresAt === undefined ? "--expires-in" : "--expires-at";
    throw new UsageError(`${option}: a synthetic key lives at most ${SYNTHETIC_MAX} (its default lifetime).`);
  }
  return seconds;
}

/** The parseArgs options that say where the keys are (targetUsage). */
export const targetOptions = {
  stage: { type: "string" },
  endpoint: { type: "string" },
  table: { type: "string" },
  region: { type: "string" },
} as const;

/** The table the keys are in, from the targetOptions given; `env` supplies the local defaults (a deployed stage ignores them). */
export function parseTarget(
  values: { readonly stage?: string; readonly endpoint?: string; readonly table?: string; readonly region?: string },
  env: NodeJS.ProcessEnv,
): KeysTarget {
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
  return target;
}

/** Which command each command-specific option belongs to. */
const optionOwners = {
  scope: "create",
  "expires-in": "create",
  "expires-at": "create",
  "unused-for": "list",
  overlap: "rotate",
} as const;

/**
 * Reads the command line; `env` supplies the local defaults (a deployed stage ignores them), `now` the instant
 * --expires-at must be later than.
 */
export function parseKeysArguments(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  now: Date = new Date(),
): KeysCommand {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      name: { type: "string" },
      quiet: { type: "boolean", default: false },
      synthetic: { type: "boolean", default: false },
      scope: { type: "string" },
      "expires-in": { type: "string" },
      "expires-at": { type: "string" },
      "unused-for": { type: "string" },
      overlap: { type: "string" },
      ...targetOptions,
      help: { type: "boolean", default: false },
    },
  });
  const [command, keyId] = positionals;
  if (values.help || !command) return { command: "help" };
  const idOf = (id: string | undefined): string => {
    if (!id) throw new UsageError(`${command} needs the key id (see: npm run keys -- list).`);
    return id;
  };

  const target = parseTarget(values, env);
  for (const [option, owner] of Object.entries(optionOwners)) {
    if (values[option as keyof typeof optionOwners] !== undefined && command !== owner)
      throw new UsageError(`--${option} is an option of ${owner}.`);
  }
  switch (command) {
    case "create": {
      if (!values.name) throw new UsageError("create needs --name NAME (who or what the key is for).");
      // npm start revokes the keys it made at its next start, and knows them by this name.
      if (target.kind === "local" && isNpmStartKeyName(values.name))
        throw new UsageError(
          `"${values.name}" is the name npm start gives the keys it makes and revokes at its next start; choose another name.`,
        );
      const { scope } = values;
      if (scope !== undefined && !(keyScopes as readonly string[]).includes(scope))
        throw new UsageError(`--scope must be ${keyScopes.join(" or ")}, not "${scope}".`);
      const expiresIn = values["expires-in"];
      const expiresAt = values["expires-at"];
      if (expiresIn !== undefined && expiresAt !== undefined)
        throw new UsageError("Give --expires-in or --expires-at, not both.");
      const parsed = {
        command,
        name: values.name,
        quiet: values.quiet,
        synthetic: values.synthetic,
        ...(scope === undefined ? {} : { scope: scope as KeyScope }),
        ...(expiresIn === undefined ? {} : { lifetimeSeconds: parseDuration(expiresIn, "--expires-in") }),
        ...(expiresAt === undefined ? {} : { expiresAt: parseExpiresAt(expiresAt, now) }),
        target,
      } as const;
      // A synthetic key's longest lifetime, refused before anything is opened.
      lifetimeOf(parsed, now);
      return parsed;
    }
    case "list": {
      const unusedFor = values["unused-for"];
      return {
        command,
        ...(unusedFor === undefined ? {} : { unusedForSeconds: parseDuration(unusedFor, "--unused-for") }),
        target,
      };
    }
    case "rotate": {
      const id = idOf(keyId);
      // 0s reads as a duration; rotateApiKey refuses an overlap shorter than its minimum, and says why.
      const overlapSeconds =
        values.overlap === undefined
          ? DEFAULT_ROTATION_OVERLAP_SECONDS
          : parseDuration(values.overlap, "--overlap", { allowZero: true });
      return { command, keyId: id, overlapSeconds, quiet: values.quiet, target };
    }
    case "revoke":
      return { command, keyId: idOf(keyId), target };
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

/** A deployed stage's region: --region, else as preflight finds it (./stageCommand.ts), else the SDK's configuration. */
export function deployedRegion(
  target: Extract<KeysTarget, { kind: "deployed" }>,
  options: StageCommandOptions = {},
): string | undefined {
  return target.region ?? configuredStageRegion(stageSettingsOf(target.stage, options), options.env ?? process.env);
}

export interface OpenedStore {
  readonly store: DynamoApiKeyStore;
  /** When each key last called each operation (the table's KEYUSE partition). */
  readonly usage: DynamoKeyUsageStore;
  /** Where the keys are, for the create message: "on staging (table …)", "in the data folder …". */
  readonly where: string;
  close(): Promise<void>;
}

/**
 * Opens the table `target` names: the keys and their uses. `command` prefixes the notices of the local database finder
 * (which npm start it uses).
 */
export async function openStore(
  target: KeysTarget,
  options: StageCommandOptions,
  warn: (line: string) => void,
  command = "keys",
): Promise<OpenedStore> {
  if (target.kind === "deployed") {
    const region = deployedRegion(target, options);
    const clientConfig = region ? { region } : {};
    const tableName =
      target.tableName ?? (await findStageTable(new CloudFormationClient(clientConfig), target.stackName));
    const client = new DynamoDBClient(clientConfig);
    const documents = DynamoDBDocumentClient.from(client);
    return {
      store: new DynamoApiKeyStore(documents, tableName),
      usage: new DynamoKeyUsageStore(documents, tableName),
      where: `on ${target.stage} (table ${tableName}, ${await client.config.region()})`,
      close: async () => client.destroy(),
    };
  }
  const database = await openLocalDatabase(target.dynamo, target.tableName, {
    ...(target.endpointSource ? { endpointSource: target.endpointSource } : {}),
    notice: (line) => warn(`${command}: ${line}`),
  });
  const documents = DynamoDBDocumentClient.from(database.client);
  return {
    store: new DynamoApiKeyStore(documents, target.tableName),
    usage: new DynamoKeyUsageStore(documents, target.tableName),
    where: `in ${database.description}`,
    close: () => database.close(),
  };
}

/**
 * Without -s, npm writes its "> petstore-api@1.0.0 keys" banner to stdout too, so KEY=$(npm run keys -- create …
 * --quiet) captures more than the key: when output is captured and npm not silenced, say so on stderr.
 */
export function npmBannerWarning(env: NodeJS.ProcessEnv, stdoutIsTerminal: boolean): string | undefined {
  if (stdoutIsTerminal || env.npm_lifecycle_event !== "keys" || env.npm_config_loglevel === "silent") return undefined;
  return "keys: npm also printed its banner to standard output; to capture only the key: KEY=$(npm run -s keys -- create --name NAME --quiet)";
}

/** Aligned columns with a header row; the last column is not padded. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join("  "),
  );
}

export interface KeysOptions extends StageCommandOptions {
  /** The clock (tests): what expiries, rotations and --unused-for count from. */
  readonly now?: () => Date;
}

/**
 * The keys `list --unused-for` shows: working at `now`, and last used on a day before the cutoff's (a use on that day
 * may be after it), or never used and created before it.
 */
export function unusedKeys(
  records: readonly ApiKeyRecord[],
  uses: UsesByKey,
  now: Date,
  unusedForSeconds: number,
): ApiKeyRecord[] {
  const cutoff = now.getTime() - unusedForSeconds * 1000;
  const cutoffDay = usageDayOf(new Date(cutoff));
  return records.filter((record) => {
    if (record.revokedAt !== undefined || isExpired(record, now.getTime())) return false;
    const latest = uses.get(record.keyId)?.[0];
    return latest === undefined ? Date.parse(record.createdAt) < cutoff : latest.lastUsedOn < cutoffDay;
  });
}

/** "in 7 days", "in 3 h", "in 1 min": how far `at` is from `now`, roughly, for a person. */
function fromNow(at: Date, now: Date): string {
  const seconds = Math.round((at.getTime() - now.getTime()) / 1000);
  if (seconds < 3600) return `in ${Math.ceil(seconds / 60)} min`;
  if (seconds < 2 * 86_400) return `in ${Math.round(seconds / 3600)} h`;
  return `in ${Math.round(seconds / 86_400)} days`;
}

/**
 * Runs one command; `print` receives each line of output, `warn` each notice for stderr. `options` (tests): the
 * environment and cdk.json "context" a deployed stage's region is read from, the clock.
 */
export async function runKeys(
  argv: readonly string[],
  print: (line: string) => void = console.log,
  warn: (line: string) => void = console.error,
  options: KeysOptions = {},
): Promise<void> {
  const clock = options.now ?? (() => new Date());
  const parsed = parseKeysArguments(argv, options.env ?? process.env, clock());
  if (parsed.command === "help") {
    print(usage);
    return;
  }
  const { target } = parsed;
  /**
   * A new key, shown once, after `message`. With --quiet standard output is the key alone, for a pipe: `notice` goes to
   * standard error, after how to keep npm's banner out of standard output.
   */
  const showKey = (quiet: boolean, key: string, notice: string, message: string): void => {
    const banner = quiet ? npmBannerWarning(process.env, Boolean(process.stdout.isTTY)) : undefined;
    if (banner) warn(banner);
    if (quiet && notice) warn(`keys: ${notice}`);
    print(quiet ? key : `${message} store it now:\n${key}`);
  };
  const opened = await openStore(target, options, warn);
  try {
    const { store } = opened;
    switch (parsed.command) {
      case "create": {
        const now = clock();
        const lifetimeSeconds = lifetimeOf(parsed, now);
        const { key, record } = await issueApiKey(store, target.stage, parsed.name, {
          now,
          synthetic: parsed.synthetic,
          ...(parsed.scope === undefined ? {} : { scope: parsed.scope }),
          ...(lifetimeSeconds === undefined ? {} : { lifetimeSeconds }),
        });
        // Whoever stores a key that expires must know when.
        const expiry = record.expiresAt === undefined ? "" : `It expires at ${record.expiresAt}.`;
        // Read keys are the exception: say so, for whoever hands the key over.
        const kind = `${record.synthetic ? "synthetic " : ""}${scopeOf(record) === "read" ? "read-only " : ""}`;
        const created = `${kind ? `${kind}key ` : ""}${record.keyId} (${record.name}) ${opened.where}.${expiry ? ` ${expiry}` : ""}`;
        return showKey(
          parsed.quiet,
          key,
          expiry && `${kind}key ${record.keyId} created. ${expiry}`,
          `Created ${created} The key is shown once;`,
        );
      }
      case "rotate": {
        const now = clock();
        const { key, record, replaced } = await rotateApiKey(store, target.stage, parsed.keyId, {
          now,
          overlapSeconds: parsed.overlapSeconds,
          // npm start revokes its own keys at its next start, by name: a replacement would inherit the name.
          refuse: (old) =>
            target.kind === "local" && isNpmStartKeyName(old.name)
              ? `${old.keyId} is npm start's own key, which each start replaces; for a key that lasts, create one and pin it with PETSTORE_API_KEY.`
              : undefined,
        });
        const stops = `${replaced.keyId} keeps working until ${replaced.expiresAt} (${fromNow(new Date(replaced.expiresAt), now)}), then expires.`;
        const ownExpiry = record.expiresAt === undefined ? "" : ` The new key expires at ${record.expiresAt}.`;
        const rotated = `${replaced.keyId} (${record.name}) ${opened.where}: its replacement is ${record.keyId}.`;
        return showKey(
          parsed.quiet,
          key,
          `${record.keyId} replaces ${replaced.keyId} (${record.name}). ${stops}${ownExpiry}`,
          `Rotated ${rotated} ${stops}${ownExpiry} The new key is shown once;`,
        );
      }
      case "list": {
        // Two Queries, one per partition (keys, uses), whatever the number of keys.
        const [records, uses] = await Promise.all([store.list(), opened.usage.list()]);
        const byKey = usesByKey(uses);
        const unusedFor = parsed.unusedForSeconds;
        const shown = unusedFor === undefined ? records : unusedKeys(records, byKey, clock(), unusedFor);
        if (shown.length > 0) printKeys(shown, byKey, print);
        else if (unusedFor === undefined) print("No keys.");
        else print(`No working key has gone unused for ${formatDuration(unusedFor)}.`);
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

function printKeys(records: readonly ApiKeyRecord[], uses: UsesByKey, print: (line: string) => void): void {
  const rows = records.map((record) => listColumns.map((column) => column.value(record, uses)));
  for (const line of table([listColumns.map((column) => column.title), ...rows])) print(line);
}

/** One line for the failures a person can fix at once; undefined for everything else. */
export function explainFailure(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  // TypeError: what parseArgs throws for an unknown or malformed option.
  const explained = [UsageError, DurationError, KeyRotationError, TypeError, LocalSettingError, LocalDatabaseError];
  if (error instanceof SettingsError || explained.some((type) => error instanceof type)) return error.message;
  if (awsErrorKind(error.name) === "no credentials") return signInLine("no credentials");
  if (/region is missing/i.test(error.message)) {
    const pins = stageNames.map((stage) => contextKey(stage, "region")).join(" or ");
    return noRegionLine(pins, "the stage", "--region");
  }
  return undefined;
}

await runAsScript(
  import.meta.url,
  (argv) => runKeys(argv),
  (error) => explainFailure(error)?.replace(/^/, "keys: "),
);
