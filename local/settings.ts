/** Defaults of the local environment (`npm start`, `npm run keys`). */
export const LOCAL_TABLE_NAME = "petstore-local";
export const LOCAL_HOST = "127.0.0.1";
export const DEFAULT_API_PORT = 3000;
export const DEFAULT_DYNAMODB_PORT = 8000;
export const LOCAL_DATA_DIR = ".data/dynamodb";
/** Where each running `npm start` with the embedded DynamoDB leaves a note of itself (local/npmStartMarker.ts). */
export const LOCAL_RUN_DIR = ".data/npm-start";
export const LOCAL_REGION = "us-east-1";

/** A local setting that cannot be used as given; the message names it and says what is expected. */
export class LocalSettingError extends Error {}

/** The port in the environment variable `name`, or `fallback` when it is unset or empty (0 = any free port). */
export function portSetting(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new LocalSettingError(`${name} must be a port number (0 to 65535), not "${raw}".`);
  return port;
}

/**
 * The DynamoDB of `npm start`: the endpoint in DYNAMODB_ENDPOINT if set, else the embedded one on
 * DYNAMODB_PORT. `npm run keys` reads the same variables to find the database of a running `npm start`.
 */
export type LocalDynamoSetting =
  | { readonly kind: "endpoint"; readonly endpoint: string }
  | { readonly kind: "embedded"; readonly port: number };

export function localDynamoSetting(env: NodeJS.ProcessEnv = process.env): LocalDynamoSetting {
  if (env.DYNAMODB_ENDPOINT) return dynamoEndpointSetting(env.DYNAMODB_ENDPOINT, "DYNAMODB_ENDPOINT");
  return { kind: "embedded", port: portSetting("DYNAMODB_PORT", DEFAULT_DYNAMODB_PORT, env) };
}

/** A DynamoDB endpoint given as `name` (an environment variable or an option): an http(s) URL. */
export function dynamoEndpointSetting(endpoint: string, name: string): LocalDynamoSetting {
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol))
    throw new LocalSettingError(`${name} must be a URL such as http://127.0.0.1:8000, not "${endpoint}".`);
  return { kind: "endpoint", endpoint };
}

/**
 * The AWS SDK warns, on Node 20, that its releases after January 2027 will need Node 22. That
 * concerns this machine, not the API (the deployed functions run on Node 24), and left on it is
 * the first thing a developer reads from every local command. Call before creating an SDK client;
 * an explicit AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED is left as it is.
 */
export function silenceSdkNodeVersionWarning(env: NodeJS.ProcessEnv = process.env): void {
  if (!env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED)
    env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
}
