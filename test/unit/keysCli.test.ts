/** The keys command's arguments and how it finds a deployed stage's table (AWS clients mocked). */
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, it } from "vitest";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { environmentVariable } from "../../infra/settings";
import { apiKeyPrefix, hashApiKey } from "../../lib/auth/apiKeys";
import { itemKeys } from "../../lib/db/table";
import { DEFAULT_DYNAMODB_PORT, LOCAL_TABLE_NAME, LocalSettingError } from "../../local/settings";
import {
  explainFailure,
  findStageTable,
  npmBannerWarning,
  parseKeysArguments,
  runKeys,
  UsageError,
} from "../../scripts/keys";
import { runWithoutCredentials } from "../support/stageCommand";

const cloudFormation = mockClient(CloudFormationClient);
const dynamo = mockClient(DynamoDBDocumentClient);

afterEach(() => {
  cloudFormation.reset();
  dynamo.reset();
});

function stackWithTable(tableName: string) {
  return {
    Stacks: [
      {
        StackName: "any",
        StackStatus: "CREATE_COMPLETE" as const,
        CreationTime: new Date(0),
        Outputs: [
          { OutputKey: STACK_OUTPUTS.baseUrl, OutputValue: "https://example.execute-api.eu-west-1.amazonaws.com/v1" },
          { OutputKey: STACK_OUTPUTS.tableName, OutputValue: tableName },
        ],
      },
    ],
  };
}

describe("keys command arguments", () => {
  it("targets the local DynamoDB by default, with the local table and endpoint settings", () => {
    const parsed = parseKeysArguments(["create", "--name", "ci"], {
      DYNAMODB_ENDPOINT: "http://127.0.0.1:9999",
      PETS_TABLE_NAME: "from-env",
    });

    expect(parsed).toEqual({
      command: "create",
      name: "ci",
      quiet: false,
      synthetic: false,
      target: {
        kind: "local",
        stage: "local",
        tableName: "from-env",
        dynamo: { kind: "endpoint", endpoint: "http://127.0.0.1:9999" },
      },
    });
  });

  it("looks for npm start's embedded DynamoDB on DYNAMODB_PORT, as npm start chose it", () => {
    const parsed = parseKeysArguments(["list"], { DYNAMODB_PORT: "8123" });

    expect(parsed).toEqual({
      command: "list",
      target: { kind: "local", stage: "local", tableName: LOCAL_TABLE_NAME, dynamo: { kind: "embedded", port: 8123 } },
    });
  });

  it("uses the local table name and DynamoDB port when nothing else names them", () => {
    const parsed = parseKeysArguments(["list"], {});

    expect(parsed).toEqual({
      command: "list",
      target: {
        kind: "local",
        stage: "local",
        tableName: LOCAL_TABLE_NAME,
        dynamo: { kind: "embedded", port: DEFAULT_DYNAMODB_PORT },
      },
    });
  });

  it("prefers --endpoint to the environment, and names it in messages", () => {
    const parsed = parseKeysArguments(["list", "--endpoint", "http://127.0.0.1:7000"], {
      DYNAMODB_ENDPOINT: "http://127.0.0.1:9999",
    });

    expect(parsed).toMatchObject({
      target: { dynamo: { kind: "endpoint", endpoint: "http://127.0.0.1:7000" }, endpointSource: "--endpoint" },
    });
  });

  it.each([
    [[], { DYNAMODB_PORT: "eight" }, 'DYNAMODB_PORT must be a port number (0 to 65535), not "eight".'],
    [[], { DYNAMODB_PORT: "70000" }, 'DYNAMODB_PORT must be a port number (0 to 65535), not "70000".'],
    [
      [],
      { DYNAMODB_ENDPOINT: "localhost:8000" },
      'DYNAMODB_ENDPOINT must be a URL such as http://127.0.0.1:8000, not "localhost:8000".',
    ],
    [[], { DYNAMODB_ENDPOINT: "8000" }, "DYNAMODB_ENDPOINT must be a URL"],
    [
      ["--endpoint", "127.0.0.1:8000"],
      {},
      '--endpoint must be a URL such as http://127.0.0.1:8000, not "127.0.0.1:8000".',
    ],
  ])("refuses the local setting %j %j in one line", (options, env, message) => {
    const parse = () => parseKeysArguments(["list", ...options], env);

    expect(parse).toThrow(LocalSettingError);
    expect(parse).toThrow(message);
  });

  it("targets the staging stack for --stage staging, ignoring local settings from the environment", () => {
    const parsed = parseKeysArguments(["create", "--stage", "staging", "--name", "tester"], {
      PETS_TABLE_NAME: "petstore-local",
      DYNAMODB_ENDPOINT: "http://127.0.0.1:8000",
    });

    expect(parsed).toEqual({
      command: "create",
      name: "tester",
      quiet: false,
      synthetic: false,
      target: { kind: "deployed", stage: "staging", stackName: deployedStages.staging.stackName },
    });
  });

  it("creates a synthetic key for the project's own checks with --synthetic", () => {
    const parsed = parseKeysArguments(["create", "--stage", "prod", "--name", "deploy smoke", "--synthetic"], {});

    expect(parsed).toMatchObject({ command: "create", name: "deploy smoke", synthetic: true });
  });

  it.each(["prod", "production", "Production"])(
    "targets the production stack and prod keys for --stage %s",
    (stage) => {
      const parsed = parseKeysArguments(["list", "--stage", stage], {});

      expect(parsed).toEqual({
        command: "list",
        target: { kind: "deployed", stage: "prod", stackName: deployedStages.prod.stackName },
      });
      expect(deployedStages.prod.stackName).toBe("Production-PetStore");
    },
  );

  it("takes the table and region of a deployed stage from --table and --region", () => {
    const parsed = parseKeysArguments(
      ["revoke", "key_abc", "--stage", "staging", "--table", "my-table", "--region", "eu-west-1"],
      {},
    );

    expect(parsed).toEqual({
      command: "revoke",
      keyId: "key_abc",
      target: {
        kind: "deployed",
        stage: "staging",
        stackName: deployedStages.staging.stackName,
        tableName: "my-table",
        region: "eu-west-1",
      },
    });
  });

  it.each([
    [["create", "--stage", "qa", "--name", "x"], "--stage must be local, staging or prod"],
    [["create", "--stage", "staging", "--endpoint", "http://x", "--name", "x"], "--endpoint is for the local DynamoDB"],
    [["list", "--region", "eu-west-1"], "--region is for a deployed stage"],
    [["create", "--stage", "prod"], "create needs --name NAME"],
    [["revoke", "--stage", "prod"], "revoke needs the key id"],
    [["rotate"], "rotate needs the key id"],
    [["rename", "key_abc"], 'Unknown command "rename"'],
    // npm start revokes its own keys at its next start, and knows them by name.
    [["create", "--name", "npm start"], '"npm start" is the name npm start gives the keys it makes'],
    [["create", "--name", "npm start 2026-01-02T03:04:05.678Z"], "revokes at its next start; choose another name."],
    [["create", "--name", "npm start --in-memory"], "revokes at its next start; choose another name."],
  ])("refuses %j with a usage message", (argv, message) => {
    const parse = () => parseKeysArguments(argv, {});

    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(message);
  });

  it("lets a deployed stage's key, and a local one named otherwise, have a name like npm start's", () => {
    expect(parseKeysArguments(["create", "--stage", "staging", "--name", "npm start"], {})).toMatchObject({
      name: "npm start",
    });
    expect(parseKeysArguments(["create", "--name", "npm start tests"], {})).toMatchObject({ name: "npm start tests" });
  });

  it("shows the usage without a command", () => {
    expect(parseKeysArguments([], {})).toEqual({ command: "help" });
  });
});

describe("finding a deployed stage's table", () => {
  it("reads the table name from the stage stack's outputs", async () => {
    cloudFormation
      .on(DescribeStacksCommand, { StackName: deployedStages.staging.stackName })
      .resolves(stackWithTable("Staging-PetStore-Table-ABC123"));

    const tableName = await findStageTable(new CloudFormationClient({ region: "eu-west-1" }), "Staging-PetStore");

    expect(tableName).toBe("Staging-PetStore-Table-ABC123");
  });

  it("says the stage is not deployed in that region when the stack does not exist", async () => {
    const missing = Object.assign(new Error("Stack with id Staging-PetStore does not exist"), {
      name: "ValidationError",
    });
    cloudFormation.on(DescribeStacksCommand).rejects(missing);

    const lookup = findStageTable(new CloudFormationClient({ region: "eu-west-1" }), "Staging-PetStore");

    await expect(lookup).rejects.toThrow(UsageError);
    await expect(lookup).rejects.toThrow("No stack Staging-PetStore in eu-west-1");
  });

  it("asks for --table when the stack has no table output", async () => {
    cloudFormation.on(DescribeStacksCommand).resolves({
      Stacks: stackWithTable("x").Stacks.map((stack) => ({ ...stack, Outputs: [] })),
    });

    const lookup = findStageTable(new CloudFormationClient({ region: "eu-west-1" }), "Staging-PetStore");

    await expect(lookup).rejects.toThrow("pass --table NAME");
  });

  it("passes on other AWS errors unchanged", async () => {
    const denied = Object.assign(new Error("User is not authorized to perform cloudformation:DescribeStacks"), {
      name: "AccessDenied",
    });
    cloudFormation.on(DescribeStacksCommand).rejects(denied);

    const lookup = findStageTable(new CloudFormationClient({ region: "eu-west-1" }), "Staging-PetStore");

    await expect(lookup).rejects.toBe(denied);
  });
});

describe("creating a key for a deployed stage", () => {
  it.each([
    ["staging", "staging"],
    ["prod", "prod"],
  ] as const)("stores the hash of a %s key in the table its stack names", async (flag, stage) => {
    const tableName = `${stage}-table-from-outputs`;
    cloudFormation
      .on(DescribeStacksCommand, { StackName: deployedStages[stage].stackName })
      .resolves(stackWithTable(tableName));
    dynamo.on(PutCommand).resolves({});
    const printed: string[] = [];

    await runKeys(["create", "--stage", flag, "--name", "staging tester", "--quiet", "--region", "eu-west-1"], (line) =>
      printed.push(line),
    );

    const [key] = printed;
    const puts = dynamo.commandCalls(PutCommand);
    expect(key?.startsWith(apiKeyPrefix(stage))).toBe(true);
    expect(puts).toHaveLength(1);
    expect(puts[0]?.args[0].input).toMatchObject({
      TableName: tableName,
      Item: { ...itemKeys.apiKey(hashApiKey(key ?? "")), name: "staging tester" },
    });
    expect(JSON.stringify(puts[0]?.args[0].input)).not.toContain(key);
  });

  it("uses --table without looking at CloudFormation", async () => {
    dynamo.on(PutCommand).resolves({});

    await runKeys(
      ["create", "--stage", "staging", "--name", "x", "--table", "named-table", "--region", "eu-west-1"],
      () => undefined,
    );

    expect(cloudFormation.commandCalls(DescribeStacksCommand)).toHaveLength(0);
    expect(dynamo.commandCalls(PutCommand)[0]?.args[0].input.TableName).toBe("named-table");
  });
});

describe("failures a person can fix", () => {
  it.each([
    [
      Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" }),
      "No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).",
    ],
    [
      new Error("Region is missing"),
      `No AWS region: pin staging:region or prod:region in cdk.json's "context", pass --region, or set AWS_REGION to the region the stage is deployed to.`,
    ],
    [new UsageError("create needs --name NAME"), "create needs --name NAME"],
  ])("explains %s in one line", (error, explanation) => {
    expect(explainFailure(error)).toContain(explanation);
  });

  it("leaves unexpected errors to be shown in full", () => {
    expect(explainFailure(new Error("socket hang up"))).toBeUndefined();
  });
});

describe("a key captured through npm", () => {
  const npmRun = { npm_lifecycle_event: "keys" };

  it("says how to capture only the key when npm, not silenced, also writes its banner to the captured output", () => {
    expect(npmBannerWarning(npmRun, false)).toContain("KEY=$(npm run -s keys -- create --name NAME --quiet)");
  });

  it.each([
    ["npm run -s", { ...npmRun, npm_config_loglevel: "silent" }, false],
    ["a terminal, where nothing is captured", npmRun, true],
    ["tsx, without npm", {}, false],
    ["another npm script", { npm_lifecycle_event: "test" }, false],
  ] as const)("says nothing when run through %s", (_, env, terminal) => {
    expect(npmBannerWarning(env, terminal)).toBeUndefined();
  });
});

describe("a deployed stage's region", () => {
  const PINNED = "eu-central-1";
  const pinnedContext = { context: () => ({ "staging:region": PINNED }) };
  /** Creates a key for staging, with cdk.json's context and the environment given; what it printed. */
  async function create(extra: string[], options: Parameters<typeof runKeys>[3]) {
    cloudFormation.on(DescribeStacksCommand).resolves(stackWithTable("petstore-staging"));
    dynamo.on(PutCommand).resolves({});
    const printed: string[] = [];
    await runKeys(
      ["create", "--stage", "staging", "--name", "Ada", ...extra],
      (line) => printed.push(line),
      () => undefined,
      options,
    );
    return printed.join("\n");
  }

  it("is the one cdk.json pins, as preflight and alarms:verify find it, even when AWS_REGION names another", async () => {
    const printed = await create([], { env: { AWS_REGION: "us-west-2" }, ...pinnedContext });

    expect(printed).toMatch(
      new RegExp(`^Created key_\\w+ \\(Ada\\) on staging \\(table petstore-staging, ${PINNED}\\)\\.`),
    );
  });

  it("is the pinned one for the stack lookup too: a missing stack is named in that region", async () => {
    cloudFormation
      .on(DescribeStacksCommand)
      .rejects(Object.assign(new Error("Stack with id Staging-PetStore does not exist"), { name: "ValidationError" }));

    const listing = runKeys(
      ["list", "--stage", "staging"],
      () => undefined,
      () => undefined,
      {
        env: {},
        ...pinnedContext,
      },
    );

    await expect(listing).rejects.toThrow(`No stack Staging-PetStore in ${PINNED}`);
  });

  it("is --region when given, over the pinned one", async () => {
    const printed = await create(["--region", "ap-southeast-2"], { env: {}, ...pinnedContext });

    expect(printed).toContain("(table petstore-staging, ap-southeast-2)");
  });

  it("is AWS_REGION when cdk.json pins none", async () => {
    const printed = await create([], { env: { AWS_REGION: "eu-west-3" }, context: () => ({}) });

    expect(printed).toContain("(table petstore-staging, eu-west-3)");
  });

  it("as a command: a region pinned for the stage gets it past the region, to the credentials it lacks", async () => {
    // No AWS_REGION and no AWS configuration: only the stage's pinned setting names a region.
    const { code, stdout, stderr } = await runWithoutCredentials("scripts/keys.ts", ["list", "--stage", "staging"], {
      [environmentVariable("staging", "region")]: PINNED,
    });

    expect({ code, stdout }).toEqual({ code: 1, stdout: "" });
    expect(stderr).toBe(
      "keys: No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).\n",
    );
  }, 30_000);
});
