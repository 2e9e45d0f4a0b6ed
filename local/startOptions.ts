/**
 * What `npm start` was asked to do: its command line and environment, read once into typed options,
 * or a StartupError whose message is the one line to print.
 */
import { parseArgs } from "node:util";
import type { LogFormat } from "../lib/observability/telemetry";
import {
  DEFAULT_API_PORT,
  DEFAULT_DYNAMODB_PORT,
  LOCAL_DATA_DIR,
  LOCAL_TABLE_NAME,
  type LocalDynamoSetting,
  LocalSettingError,
  localDynamoSetting,
} from "./settings";

export const START_USAGE = `Usage: npm start [-- OPTIONS]

Runs the Pet Store API on this machine: the real Lambda handlers behind a stand-in for API Gateway,
on an embedded DynamoDB (dynalite) that keeps its data in ${LOCAL_DATA_DIR}.

Options (after --, e.g. npm start -- --port 3001 --in-memory):
  --port N             port of the API (default: PORT, else ${DEFAULT_API_PORT}); npm start --port N works too
  --dynamodb-port N    port of the embedded DynamoDB (default: DYNAMODB_PORT, else ${DEFAULT_DYNAMODB_PORT}); npm run keys
                       finds it there by itself
  --in-memory          keep nothing on disk; npm start --in-memory works too
  -h, --help           show this help

Environment:
  PORT                 port of the API (default ${DEFAULT_API_PORT}; --port wins)
  DYNAMODB_PORT        port of the embedded DynamoDB (default ${DEFAULT_DYNAMODB_PORT}; --dynamodb-port wins)
  DYNAMODB_ENDPOINT    use this DynamoDB-compatible endpoint instead of the embedded one
  PETSTORE_API_KEY     the local key to use, the same at every start (petstore_local_<43 letters or
                       digits>, e.g. from npm run keys -- create --name me; its hash is stored on first
                       use). Unset: a new key at each start, and the previous start's key is revoked
  PETS_TABLE_NAME      table name (default ${LOCAL_TABLE_NAME})
  PETSTORE_LOG_FORMAT  pretty (one readable line per request) or json (the deployed stages' logs);
                       default: pretty on a terminal, json when the output goes to a file or pipe
  LOG_LEVEL            DEBUG, INFO, WARN, ERROR or SILENT for the handlers' logs (default INFO)`;

const SEE_HELP = "see: npm start -- --help";

/** A problem the person starting the server can fix; its message is the one line to print. */
export class StartupError extends Error {}

/**
 * Where the API port came from, so that the banner never leaves a default port unexplained:
 * `npm start --port N` (without --) reaches us as npm's own setting npm_config_port.
 */
export type ApiPortSource = "--port" | "npm_config_port" | "PORT" | "default";

export interface StartOptions {
  readonly apiPort: number;
  readonly apiPortSource: ApiPortSource;
  readonly dynamoPort: number;
  /** Set: use this DynamoDB instead of starting the embedded one. */
  readonly dynamoEndpoint: string | undefined;
  readonly inMemory: boolean;
  /**
   * `npm start --in-memory` (without `--`): npm takes the flag as one of its own settings and
   * passes it on as npm_config_in_memory, not as an argument.
   */
  readonly inMemoryFromNpm: boolean;
  readonly pinnedKey: string | undefined;
  readonly tableName: string;
  readonly logFormat: LogFormat;
}

export type StartCommand = { readonly help: true } | { readonly help: false; readonly options: StartOptions };

/** The port options, with the example their messages give. */
const portOptions = { "--port": DEFAULT_API_PORT + 1, "--dynamodb-port": DEFAULT_DYNAMODB_PORT + 1 } as const;
type PortOption = keyof typeof portOptions;

const needsPort = (option: PortOption) =>
  `${option} needs a port number, as in ${option} ${portOptions[option]}; ${SEE_HELP}`;

function port(raw: string, source: string): number {
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(value) || value < 0 || value > 65535)
    throw new StartupError(`${source} must be a port number (0 to 65535), not "${raw}".`);
  return value;
}

/** parseArgs' own messages are long and name Node's rules; these name ours. */
function usageErrorOf(error: unknown): StartupError {
  const { code, message } = error as { code?: string; message?: string };
  const quoted = /'([^']*)'/.exec(message ?? "")?.[1] ?? "";
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return new StartupError(`unknown option ${quoted}; ${SEE_HELP}`);
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return new StartupError(`unexpected argument "${quoted}"; ${SEE_HELP}`);
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE": {
      if (/--in-memory/.test(message ?? "")) return new StartupError(`--in-memory takes no value; ${SEE_HELP}`);
      return new StartupError(needsPort(/--dynamodb-port/.test(message ?? "") ? "--dynamodb-port" : "--port"));
    }
    default:
      return new StartupError(`${message ?? String(error)}; ${SEE_HELP}`);
  }
}

function readArguments(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        port: { type: "string" },
        "dynamodb-port": { type: "string" },
        "in-memory": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw usageErrorOf(error);
  }
}

/**
 * The port options given without `--`: `npm start --port 3001` leaves npm's setting "true" and hands
 * us 3001 as an argument (taken from `positionals`); `npm start --port=3001` gives the setting the value.
 */
function portsFromNpm(env: NodeJS.ProcessEnv, positionals: string[]): Partial<Record<PortOption, number>> {
  const settings: [PortOption, string | undefined][] = [
    ["--port", env.npm_config_port],
    ["--dynamodb-port", env.npm_config_dynamodb_port],
  ];
  // Their values then arrive as plain arguments, in an order that no longer says whose is whose.
  if (settings.filter(([, setting]) => setting === "true").length > 1)
    throw new StartupError(
      "npm took --port and --dynamodb-port as its own settings; give them after --: npm start -- --port N --dynamodb-port N",
    );
  const ports: Partial<Record<PortOption, number>> = {};
  for (const [option, setting] of settings) {
    if (setting === "true") {
      const given = positionals.shift();
      if (given === undefined) throw new StartupError(needsPort(option));
      ports[option] = port(given, option);
    } else if (setting) {
      ports[option] = port(setting, option);
    }
  }
  return ports;
}

/** What the banner says after the API's URL: where its port came from, and how to choose another. */
export function apiPortNote(source: ApiPortSource): string {
  switch (source) {
    case "--port":
      return "(port from --port)";
    case "npm_config_port":
      return "(port from npm start --port, which npm passes on as npm_config_port)";
    case "PORT":
      return "(port from PORT)";
    default:
      return "(the default port; another: npm start -- --port N)";
  }
}

/** The API port and where it came from: --port, then npm's setting, then PORT, then the default. */
function apiPortOf(given: string | undefined, fromNpm: number | undefined, env: NodeJS.ProcessEnv) {
  if (given !== undefined) return { apiPort: port(given, "--port"), apiPortSource: "--port" } as const;
  if (fromNpm !== undefined) return { apiPort: fromNpm, apiPortSource: "npm_config_port" } as const;
  if (env.PORT) return { apiPort: port(env.PORT, "PORT"), apiPortSource: "PORT" } as const;
  return { apiPort: DEFAULT_API_PORT, apiPortSource: "default" } as const;
}

/**
 * Reads `argv` (what follows `npm start --`) and `env`. `isTerminal` decides the log format when
 * PETSTORE_LOG_FORMAT does not.
 */
export function parseStartArguments(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  isTerminal: boolean,
): StartCommand {
  const parsed = readArguments(argv);
  const { values } = parsed;
  const positionals = [...parsed.positionals];
  if (values.help) return { help: true };

  const fromNpm = portsFromNpm(env, positionals);
  if (positionals.length > 0) throw new StartupError(`unexpected argument "${positionals[0]}"; ${SEE_HELP}`);

  // The same choice `npm run keys` makes to find this database (local/settings.ts).
  let dynamo: LocalDynamoSetting;
  try {
    dynamo = localDynamoSetting(env);
  } catch (error) {
    throw error instanceof LocalSettingError ? new StartupError(error.message) : error;
  }
  const dynamoPortOption =
    values["dynamodb-port"] !== undefined
      ? port(values["dynamodb-port"], "--dynamodb-port")
      : fromNpm["--dynamodb-port"];
  if (dynamoPortOption !== undefined && dynamo.kind === "endpoint")
    throw new StartupError(
      "--dynamodb-port is the port of the embedded DynamoDB, and DYNAMODB_ENDPOINT names another one instead: give one of them.",
    );
  const inMemoryFromNpm = values["in-memory"] === undefined && env.npm_config_in_memory === "true";
  const logFormatSetting = env.PETSTORE_LOG_FORMAT ?? "";
  if (logFormatSetting !== "" && logFormatSetting !== "pretty" && logFormatSetting !== "json")
    throw new StartupError(`PETSTORE_LOG_FORMAT must be pretty or json, not "${logFormatSetting}".`);

  return {
    help: false,
    options: {
      ...apiPortOf(values.port, fromNpm["--port"], env),
      dynamoPort: dynamoPortOption ?? (dynamo.kind === "embedded" ? dynamo.port : DEFAULT_DYNAMODB_PORT),
      dynamoEndpoint: dynamo.kind === "endpoint" ? dynamo.endpoint : undefined,
      inMemory: values["in-memory"] === true || inMemoryFromNpm,
      inMemoryFromNpm,
      pinnedKey: env.PETSTORE_API_KEY === "" ? undefined : env.PETSTORE_API_KEY,
      tableName: env.PETS_TABLE_NAME || LOCAL_TABLE_NAME,
      logFormat: logFormatSetting === "" ? (isTerminal ? "pretty" : "json") : logFormatSetting,
    },
  };
}
