import { type LogLevel, logLevels } from "./observability/logger";
import type { LogFormat } from "./observability/telemetry";

/**
 * Runtime configuration of the Lambda handlers (and of the local server, which runs the same
 * handlers). Read once at module load; a missing or malformed value stops the cold start with a
 * message naming it, rather than failing on the first request.
 */
export const stages = ["local", "staging", "prod"] as const;
export type StageName = (typeof stages)[number];
/** What people call each environment (docs/api.md's "Addresses"); key prefixes use the short name. */
export const environmentNames: Readonly<Record<StageName, string>> = {
  local: "local",
  staging: "staging",
  prod: "production",
};

export interface RuntimeConfig {
  readonly tableName: string;
  /** Names the environment in API keys (`petstore_<stage>_…`) so keys cannot cross stages. */
  readonly stage: StageName;
  readonly region: string;
  /** Only set locally: the DynamoDB-compatible engine to talk to instead of AWS. */
  readonly dynamodbEndpoint: string | undefined;
  readonly logLevel: LogLevel;
  /** `pretty` only for a developer's terminal (npm start); JSON everywhere else. */
  readonly logFormat: LogFormat;
}

const logFormats: readonly LogFormat[] = ["json", "pretty"];

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function loadRuntimeConfig(env: NodeJS.ProcessEnv = process.env): RuntimeConfig {
  const problems: string[] = [];
  const tableName = env.PETS_TABLE_NAME ?? "";
  if (!tableName) problems.push("PETS_TABLE_NAME is not set");
  const stage = env.PETSTORE_STAGE ?? "";
  if (!stages.includes(stage as StageName)) problems.push(`PETSTORE_STAGE must be one of ${stages.join(", ")}`);
  const dynamodbEndpoint = env.DYNAMODB_ENDPOINT || undefined;
  if (dynamodbEndpoint !== undefined && !URL.canParse(dynamodbEndpoint)) {
    problems.push("DYNAMODB_ENDPOINT is not a URL");
  }
  const logLevel = (env.LOG_LEVEL || "INFO").toUpperCase();
  if (!logLevels.includes(logLevel as LogLevel)) problems.push(`LOG_LEVEL must be one of ${logLevels.join(", ")}`);
  const logFormat = env.PETSTORE_LOG_FORMAT || "json";
  if (!logFormats.includes(logFormat as LogFormat)) problems.push("PETSTORE_LOG_FORMAT must be json or pretty");
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join("; ")}.`);
  return {
    tableName,
    stage: stage as StageName,
    region: env.AWS_REGION || "us-east-1",
    dynamodbEndpoint,
    logLevel: logLevel as LogLevel,
    logFormat: logFormat as LogFormat,
  };
}
