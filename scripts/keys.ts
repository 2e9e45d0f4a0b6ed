/**
 * `npm run keys -- <create|list|revoke>`: manages API keys. A new key is printed once and only
 * its hash is stored. Talks to the local DynamoDB unless --stage names a deployed stage, whose
 * table it finds in the stage's stack outputs with the caller's AWS credentials and region.
 *
 *   npm run keys -- create --name NAME [--quiet] [--stage staging|prod [--table NAME] [--region R]]
 *   npm run keys -- list [--stage …]
 *   npm run keys -- revoke KEY_ID [--stage …]
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import {
  CloudFormationClient,
  DescribeStacksCommand,
  type DescribeStacksCommandOutput,
} from "@aws-sdk/client-cloudformation";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type DeployedStageName, deployedStages, STACK_OUTPUTS } from "../infra/deployment";
import { issueApiKey } from "../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { KEY_CACHE_TTL_MS } from "../lib/auth/verifier";
import { ensureTable, startEmbeddedDynamo } from "../local/dynamo";
import { DEFAULT_DYNAMODB_PORT, LOCAL_DATA_DIR, LOCAL_HOST, LOCAL_REGION, LOCAL_TABLE_NAME } from "../local/settings";

const usage = `Usage:
  npm run keys -- create --name NAME [--quiet]   issue a key; prints it once (--quiet: only the key)
  npm run keys -- list                           list keys (id, name, created, revoked)
  npm run keys -- revoke KEY_ID                  revoke a key; it stops working within ${(2 * KEY_CACHE_TTL_MS) / 1000} s
Options:
  --stage STAGE    local (default), staging or prod: a deployed stage is reached with your AWS
                   credentials, its table found in the outputs of stack ${deployedStages.staging.stackName} or ${deployedStages.prod.stackName}
  --table NAME     the table (local default: PETS_TABLE_NAME, or ${LOCAL_TABLE_NAME}; deployed: from the stack)
  --region REGION  AWS region of a deployed stage (default: your AWS configuration)
  --endpoint URL   local only: a DynamoDB-compatible endpoint (default: DYNAMODB_ENDPOINT, or the local one)`;

export class UsageError extends Error {}

export type KeysTarget =
  | { readonly kind: "local"; readonly stage: "local"; readonly tableName: string; readonly endpoint?: string }
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
  | { readonly command: "create"; readonly name: string; readonly quiet: boolean; readonly target: KeysTarget }
  | { readonly command: "list"; readonly target: KeysTarget }
  | { readonly command: "revoke"; readonly keyId: string; readonly target: KeysTarget };

const stageAliases: Readonly<Record<string, DeployedStageName | "local">> = {
  local: "local",
  staging: "staging",
  prod: "prod",
  production: "prod",
};

/** Reads the command line; `env` supplies the local defaults (a deployed stage ignores them). */
export function parseKeysArguments(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): KeysCommand {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      name: { type: "string" },
      quiet: { type: "boolean", default: false },
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
    const endpoint = values.endpoint ?? (env.DYNAMODB_ENDPOINT || undefined);
    target = {
      kind: "local",
      stage,
      tableName: values.table ?? (env.PETS_TABLE_NAME || LOCAL_TABLE_NAME),
      ...(endpoint ? { endpoint } : {}),
    };
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

  switch (command) {
    case "create":
      if (!values.name) throw new UsageError("create needs --name NAME (who or what the key is for).");
      return { command, name: values.name, quiet: values.quiet, target };
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
  let stacks: DescribeStacksCommandOutput["Stacks"];
  try {
    ({ Stacks: stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName })));
  } catch (error) {
    // CloudFormation answers a missing stack with a ValidationError naming it.
    if ((error as Error).name === "ValidationError" && /does not exist/.test((error as Error).message)) {
      const region = await cloudFormation.config.region();
      throw new UsageError(
        `No stack ${stackName} in ${region}: deploy the stage first, or pass --region (or --table).`,
      );
    }
    throw error;
  }
  const output = stacks?.[0]?.Outputs?.find((candidate) => candidate.OutputKey === STACK_OUTPUTS.tableName);
  if (!output?.OutputValue) {
    throw new UsageError(`Stack ${stackName} has no ${STACK_OUTPUTS.tableName} output; pass --table NAME.`);
  }
  return output.OutputValue;
}

/** The local DynamoDB: the running `npm start` one, or the data folder opened directly. */
async function localDynamo(endpoint: string | undefined): Promise<{ endpoint: string; close: () => Promise<void> }> {
  if (endpoint) return { endpoint, close: async () => undefined };
  const running = `http://${LOCAL_HOST}:${DEFAULT_DYNAMODB_PORT}`;
  try {
    await fetch(running, { method: "POST", signal: AbortSignal.timeout(500) });
    return { endpoint: running, close: async () => undefined };
  } catch {
    const embedded = await startEmbeddedDynamo({ host: LOCAL_HOST, port: 0, path: LOCAL_DATA_DIR });
    return embedded;
  }
}

interface OpenedStore {
  readonly store: DynamoApiKeyStore;
  readonly tableName: string;
  close(): Promise<void>;
}

async function openStore(target: KeysTarget): Promise<OpenedStore> {
  if (target.kind === "deployed") {
    const clientConfig = target.region ? { region: target.region } : {};
    const tableName =
      target.tableName ?? (await findStageTable(new CloudFormationClient(clientConfig), target.stackName));
    const client = new DynamoDBClient(clientConfig);
    return {
      store: new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), tableName),
      tableName,
      close: async () => client.destroy(),
    };
  }
  const dynamo = await localDynamo(target.endpoint);
  const client = new DynamoDBClient({
    region: LOCAL_REGION,
    endpoint: dynamo.endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    await ensureTable(client, target.tableName);
  } catch (error) {
    await dynamo.close();
    throw error;
  }
  return {
    store: new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), target.tableName),
    tableName: target.tableName,
    close: async () => {
      client.destroy();
      await dynamo.close();
    },
  };
}

/** Runs one command; `print` receives each line of output. */
export async function runKeys(argv: readonly string[], print: (line: string) => void = console.log): Promise<void> {
  const parsed = parseKeysArguments(argv);
  if (parsed.command === "help") {
    print(usage);
    return;
  }
  const { target } = parsed;
  const opened = await openStore(target);
  try {
    const { store } = opened;
    switch (parsed.command) {
      case "create": {
        const { key, record } = await issueApiKey(store, target.stage, parsed.name);
        if (parsed.quiet) print(key);
        else {
          const where = target.kind === "deployed" ? ` on ${target.stage} (table ${opened.tableName})` : "";
          print(`Created ${record.keyId} (${record.name})${where}. The key is shown once; store it now:\n${key}`);
        }
        return;
      }
      case "list": {
        const records = await store.list();
        if (records.length === 0) print("No keys.");
        for (const record of records) {
          print(
            [
              record.keyId,
              record.createdAt,
              record.revokedAt ? `revoked ${record.revokedAt}` : "active",
              record.name,
            ].join("\t"),
          );
        }
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
  if (error instanceof UsageError || error instanceof TypeError) return error.message;
  if (error.name === "CredentialsProviderError") {
    return "No AWS credentials found: sign in to the stage's account (for example aws sso login, or set AWS_PROFILE).";
  }
  if (/region is missing/i.test(error.message)) return "No AWS region configured: pass --region or set AWS_REGION.";
  return undefined;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runKeys(process.argv.slice(2)).catch((error: unknown) => {
    const explained = explainFailure(error);
    console.error(explained === undefined ? error : `keys: ${explained}`);
    process.exit(1);
  });
}
