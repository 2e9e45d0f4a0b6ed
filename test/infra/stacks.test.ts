/**
 * Template tests of both stages, on the app as `npx cdk synth` builds it (synthesised once for the
 * whole file). Expected values come from the issue and the API decisions, or from the stage config.
 */

import { readFileSync } from "node:fs";
import { Token } from "aws-cdk-lib";
import type { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { lambdaEsbuildOptions } from "../../infra/bundling";
import { type StageConfig, stageConfigs } from "../../infra/config";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { accessLogFormat } from "../../infra/stacks/accessLog";
import { MOCK_BODY_MEDIA_TYPES } from "../../infra/stacks/gatewayErrors";
import type { ErrorCode } from "../../lib/contract/schemas";
import {
  DYNAMODB_CONNECTION_TIMEOUT_MS,
  DYNAMODB_MAX_ATTEMPTS,
  DYNAMODB_REQUEST_TIMEOUT_MS,
} from "../../lib/db/client";
import { itemKeys, petTable, STATUS_INDEX } from "../../lib/db/table";
import { SHARED_PETS } from "../../lib/pets/collection";
import { routeList, routes } from "../../lib/routes";
import { synthesizedStages } from "./app";

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Resources = Record<string, Resource>;

/**
 * Status of each error code a gateway response may carry (API-DECISIONS.md, "Errors"): every code
 * but `insufficient_scope`, which only the functions answer (lib/http/middleware/bearerAuth.ts
 * knows the key's scope; the gateway does not).
 */
type GatewayErrorCode = Exclude<ErrorCode, "insufficient_scope">;
const statusOfCode: Record<GatewayErrorCode, number> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_key_in_progress: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  too_many_requests: 429,
  internal_error: 500,
  service_unavailable: 503,
};

/** What API Gateway answers by itself, and how the issue says it must look. */
const requiredGatewayResponses: readonly { type: string; when: string; status: number; code: ErrorCode }[] = [
  {
    type: "MISSING_AUTHENTICATION_TOKEN",
    when: "unknown route, also with an Authorization header",
    status: 404,
    code: "not_found",
  },
  {
    type: "INVALID_SIGNATURE",
    when: "unknown route with a signature-like Authorization header",
    status: 404,
    code: "not_found",
  },
  { type: "RESOURCE_NOT_FOUND", when: "unknown resource", status: 404, code: "not_found" },
  { type: "THROTTLED", when: "stage throttling", status: 429, code: "too_many_requests" },
  { type: "REQUEST_TOO_LARGE", when: "body too large", status: 413, code: "payload_too_large" },
  { type: "INTEGRATION_TIMEOUT", when: "integration timeout", status: 503, code: "service_unavailable" },
  { type: "INTEGRATION_FAILURE", when: "integration failure", status: 500, code: "internal_error" },
  { type: "WAF_FILTERED", when: "a managed firewall rule blocked the request", status: 403, code: "forbidden" },
  {
    type: "UNSUPPORTED_MEDIA_TYPE",
    when: "a body of a type the 404/405 mocks have no template for",
    status: 415,
    code: "unsupported_media_type",
  },
  { type: "DEFAULT_4XX", when: "any other 4xx", status: 400, code: "invalid_request" },
  { type: "DEFAULT_5XX", when: "any other 5xx", status: 500, code: "internal_error" },
];

const stages = Object.values(stageConfigs);
const templates = new Map<StageConfig["id"], Template>();
let synth: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  // The policy checks are test/infra/nag.test.ts's; these read the templates and the bundles.
  synth = synthesizedStages({ policyValidation: false });
  for (const config of stages) templates.set(config.id, synth.template(config.id));
});

/** The stage's data stack, which holds its table (infra/stacks/dataStack.ts). */
const dataTemplateOf = (config: StageConfig): Template => synth.dataTemplate(config.id);

function templateOf(config: StageConfig): Template {
  const template = templates.get(config.id);
  if (!template) throw new Error(`no template for ${config.id}`);
  return template;
}

const resourcesOf = (template: Template, type?: string): Resources =>
  Object.fromEntries(
    Object.entries(template.toJSON().Resources as Resources).filter(([, resource]) => !type || resource.Type === type),
  );

function only<T>(values: T[], what: string): T {
  expect(values, what).toHaveLength(1);
  return values[0] as T;
}

const refTo = (value: unknown): string | undefined => (value as { Ref?: string } | undefined)?.Ref;
const getAttOf = (value: unknown): string | undefined =>
  (value as { "Fn::GetAtt"?: [string, string] } | undefined)?.["Fn::GetAtt"]?.[0];

/** The function behind a method's integration: API Gateway invokes its `live` alias (test/infra/rollout.test.ts). */
function functionIdBehind(template: Template, integration: unknown): string | undefined {
  const text = JSON.stringify(integration);
  const aliases = Object.entries(resourcesOf(template, "AWS::Lambda::Alias"));
  const [, alias] = aliases.find(([id]) => text.includes(`{"Ref":"${id}"}`)) ?? [];
  return refTo(alias?.Properties.FunctionName);
}

/** Full path (below the stage) of every API Gateway resource, by logical id; the root is "/". */
function resourcePaths(template: Template): Map<string, string> {
  const resources = resourcesOf(template, "AWS::ApiGateway::Resource");
  const paths = new Map<string, string>();
  const pathOf = (id: string): string => {
    const known = paths.get(id);
    if (known) return known;
    const resource = resources[id];
    if (!resource) throw new Error(`no resource ${id}`);
    const parent = refTo(resource.Properties.ParentId);
    const path = `${parent ? pathOf(parent) : ""}/${resource.Properties.PathPart as string}`;
    paths.set(id, path);
    return path;
  };
  for (const id of Object.keys(resources)) pathOf(id);
  return paths;
}

function methodAt(template: Template, path: string, httpMethod: string): Resource["Properties"] {
  const paths = resourcePaths(template);
  const methods = Object.values(resourcesOf(template, "AWS::ApiGateway::Method")).filter((method) => {
    const resourceId = method.Properties.ResourceId;
    const methodPath = getAttOf(resourceId) ? "/" : paths.get(refTo(resourceId) ?? "");
    return methodPath === path && method.Properties.HttpMethod === httpMethod;
  });
  return only(methods, `${httpMethod} ${path}`).Properties;
}

/** The DynamoDB statements of the role of the function behind `path`/`method`. */
function dynamoGrantsOf(template: Template, path: string, httpMethod: string) {
  const integration = methodAt(template, path, httpMethod).Integration as { Uri: unknown };
  const functionId = functionIdBehind(template, integration.Uri) ?? "";
  const fn = resourcesOf(template, "AWS::Lambda::Function")[functionId];
  const roleId = getAttOf(fn?.Properties.Role);
  const statements = Object.values(resourcesOf(template, "AWS::IAM::Policy"))
    .filter((policy) => (policy.Properties.Roles as unknown[]).some((role) => refTo(role) === roleId))
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
  const dynamo = statements.filter((statement) => [statement.Action].flat().some((a) => a.startsWith("dynamodb:")));
  return {
    functionId,
    statements: dynamo,
    actions: [...new Set(dynamo.flatMap((statement) => [statement.Action].flat()))].sort(),
    resources: dynamo.flatMap((statement) => [statement.Resource].flat()),
  };
}

/**
 * docs/deploy.md's "What each function may do in DynamoDB" table: per function (or "all"), each
 * `<partition>: dynamodb:<Action>` or `index <name>: dynamodb:<Action>` it lists.
 */
function documentedDynamoGrants(): Map<string, string[]> {
  const text = readFileSync(new URL("../../docs/deploy.md", import.meta.url), "utf8");
  const section = text.split(/^## /m).find((part) => part.startsWith("7. What each function may do in DynamoDB"));
  if (!section) throw new Error("docs/deploy.md has no section 7, What each function may do in DynamoDB");
  const rows = section.split("\n").filter((line) => /^\| [a-zA-Z]+ \| /.test(line) && !line.startsWith("| Function"));
  return new Map(
    rows.map((row) => {
      const [, name = "", cell = ""] = row.split(/\s*\|\s*/);
      const grants = cell.split("; ").flatMap((part) => {
        const match = /^(?:the )?`([^`]+)`( index)?: (.+)$/.exec(part);
        if (!match) throw new Error(`docs/deploy.md, section 7: cannot read "${part}"`);
        const [, where = "", index, actions = ""] = match;
        return actions.split(", ").map((action) => `${index ? `index ${where}` : where}: dynamodb:${action}`);
      });
      return [name, grants];
    }),
  );
}

/** Which actions a role's statements allow on an item whose partition key is `partitionKey`. */
function actionsOnPartition(statements: readonly Statement[], partitionKey: string): string[] {
  const matches = (pattern: string) =>
    new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`).test(partitionKey);
  return statements
    .filter((statement) => !JSON.stringify(statement.Resource).includes("/index/"))
    .filter((statement) => {
      const conditions = Object.values(statement.Condition ?? {}).map(
        (condition) => condition["dynamodb:LeadingKeys"] as string[] | undefined,
      );
      const leadingKeys = conditions.find((keys) => keys !== undefined);
      // A table statement without a LeadingKeys condition would reach every partition.
      return leadingKeys === undefined || leadingKeys.some(matches);
    })
    .flatMap((statement) => [statement.Action].flat())
    .sort();
}

interface Statement {
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

/**
 * A mock must never see the client's body: with NEVER, the listed media types get the template (so the
 * mock answers its 404/405) and any other is refused with the 415 gateway response, in the Error shape.
 */
function expectNoBodyPassedThrough(integration: unknown): void {
  const { PassthroughBehavior, RequestTemplates } = integration as {
    PassthroughBehavior: string;
    RequestTemplates: Record<string, string>;
  };
  expect(PassthroughBehavior).toBe("NEVER");
  expect(Object.keys(RequestTemplates).sort()).toEqual([...MOCK_BODY_MEDIA_TYPES].sort());
  expect(RequestTemplates["text/plain"]).toBe('{"statusCode": 200}');
  for (const template of Object.values(RequestTemplates)) expect(JSON.parse(template)).toEqual({ statusCode: 200 });
}

function newestNodeRuntime(): string {
  const majors = Object.values(lambda.Runtime)
    .filter((value): value is lambda.Runtime => value instanceof lambda.Runtime)
    .map((runtime) => /^nodejs(\d+)\.x$/.exec(runtime.name)?.[1])
    .filter((major): major is string => major !== undefined)
    .map(Number);
  return `nodejs${Math.max(...majors)}.x`;
}

describe.each(stages)("$id stage", (config) => {
  it("is the stack named in infra/deployment.ts, for the keys and smoke commands to find", () => {
    const stage = synth.stages.find((candidate) => candidate.node.id === config.id);

    expect(stage?.stack.stackName).toBe(deployedStages[config.stage].stackName);
  });

  it("serves the API from one deployment stage named v1", () => {
    const stage = only(Object.values(resourcesOf(templateOf(config), "AWS::ApiGateway::Stage")), "stages");

    expect(stage.Properties.StageName).toBe("v1");
  });

  it("exports the base URL, ending in /v1, the same default endpoint address, and the table name", () => {
    const template = templateOf(config);
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    const [stageId] = Object.keys(resourcesOf(template, "AWS::ApiGateway::Stage"));
    const [apiId] = Object.keys(resourcesOf(template, "AWS::ApiGateway::RestApi"));
    // Evaluates the Fn::Join as CloudFormation would: a Stage's Ref is its name.
    const refs: Record<string, string> = {
      [stageId ?? ""]: "v1",
      [apiId ?? ""]: "a1b2c3d4e5",
      "AWS::Region": "eu-west-1",
      "AWS::URLSuffix": "amazonaws.com",
    };
    const join = outputs[STACK_OUTPUTS.baseUrl]?.Value as { "Fn::Join": [string, unknown[]] } | undefined;
    const [separator, parts] = join?.["Fn::Join"] ?? ["", []];

    const baseUrl = parts.map((part) => (typeof part === "string" ? part : refs[refTo(part) ?? ""])).join(separator);

    expect(baseUrl).toBe("https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1");
    // Without a custom domain (test/infra/customDomain.test.ts), the public address is the default one.
    expect(outputs[STACK_OUTPUTS.executeApiUrl]?.Value).toEqual(join);
    expect(outputs[STACK_OUTPUTS.tableName]?.Value).toBe(config.tableName);
    expect(
      Object.entries(outputs)
        .filter(([, output]) => JSON.stringify(output.Value).includes(stageId ?? "?"))
        .map(([name]) => name)
        .sort(),
    ).toEqual([STACK_OUTPUTS.baseUrl, STACK_OUTPUTS.executeApiUrl].sort());
  });

  it("builds the table from the shared definition, on demand, with 35 days of point-in-time recovery, in its data stack under its fixed name", () => {
    const table = only(Object.values(resourcesOf(dataTemplateOf(config), "AWS::DynamoDB::GlobalTable")), "tables");
    const replica = (table.Properties.Replicas as Record<string, unknown>[])[0];

    templateOf(config).resourceCountIs("AWS::DynamoDB::GlobalTable", 0);
    expect(table.Properties.TableName).toBe(config.tableName);
    expect(table.Properties.BillingMode).toBe("PAY_PER_REQUEST");
    expect(table.Properties.KeySchema).toEqual([
      { AttributeName: petTable.partitionKey.name, KeyType: "HASH" },
      { AttributeName: petTable.sortKey.name, KeyType: "RANGE" },
    ]);
    expect(
      (table.Properties.GlobalSecondaryIndexes as { IndexName: string }[]).map((index) => index.IndexName),
    ).toEqual(petTable.globalSecondaryIndexes.map((index) => index.indexName));
    expect(replica?.PointInTimeRecoverySpecification).toEqual({
      PointInTimeRecoveryEnabled: true,
      RecoveryPeriodInDays: 35,
    });
  });

  it("lets DynamoDB delete expired idempotency records by their expiry attribute", () => {
    const table = only(Object.values(resourcesOf(dataTemplateOf(config), "AWS::DynamoDB::GlobalTable")), "tables");

    expect(table.Properties.TimeToLiveSpecification).toEqual({
      AttributeName: petTable.timeToLiveAttribute,
      Enabled: true,
    });
  });

  it("runs one arm64 function per route on the newest Node runtime aws-cdk-lib knows, with JSON logs", () => {
    const template = templateOf(config);
    const allFunctions = resourcesOf(template, "AWS::Lambda::Function");
    const routeFunctionIds = new Set(
      Object.values(resourcesOf(template, "AWS::ApiGateway::Method")).flatMap(
        (method) => functionIdBehind(template, method.Properties.Integration) ?? [],
      ),
    );
    const functions = [...routeFunctionIds].map((id) => allFunctions[id] as Resource);
    const runtime = newestNodeRuntime();

    expect(functions).toHaveLength(routeList.length);
    // The functions that serve no route (the synthetic check's) run alike.
    for (const fn of Object.values(allFunctions)) {
      expect(fn.Properties.Runtime).toBe(runtime);
      expect(fn.Properties.Architectures).toEqual(["arm64"]);
      expect(fn.Properties.LoggingConfig).toMatchObject({ LogFormat: "JSON" });
    }
    for (const fn of functions) {
      expect(fn.Properties.MemorySize).toBe(config.functions.memoryMb);
      expect(fn.Properties.Timeout).toBe(config.functions.timeout.toSeconds());
      expect(fn.Properties.Environment).toMatchObject({
        Variables: {
          PETSTORE_STAGE: config.stage,
          LOG_LEVEL: config.functions.logLevel,
          PETS_TABLE_NAME: config.tableName,
        },
      });
    }
    expect(lambdaEsbuildOptions.target).toBe(runtime.replace(/^nodejs(\d+)\.x$/, "node$1"));
  });

  it("gives the DynamoDB client time to give up before the function is killed", () => {
    const worstCaseMs = DYNAMODB_MAX_ATTEMPTS * (DYNAMODB_CONNECTION_TIMEOUT_MS + DYNAMODB_REQUEST_TIMEOUT_MS);
    // Retry back-off and the handler's own work need room too.
    const marginMs = 1000;

    expect(config.functions.timeout.toMilliseconds()).toBeGreaterThan(worstCaseMs + marginMs);
  });

  it("grants no wildcard IAM actions", () => {
    const template = templateOf(config);
    const documents = [
      ...Object.values(resourcesOf(template, "AWS::IAM::Policy")).map((policy) => policy.Properties.PolicyDocument),
      ...Object.values(resourcesOf(template, "AWS::IAM::ManagedPolicy")).map(
        (policy) => policy.Properties.PolicyDocument,
      ),
      ...Object.values(resourcesOf(template, "AWS::IAM::Role")).flatMap((role) =>
        ((role.Properties.Policies ?? []) as { PolicyDocument: unknown }[]).map((policy) => policy.PolicyDocument),
      ),
    ] as { Statement: Statement[] }[];
    const actions = documents.flatMap((document) =>
      document.Statement.flatMap((statement) => [statement.Action].flat()),
    );

    expect(actions.length).toBeGreaterThan(0);
    expect(actions.filter((action) => action === "*" || action.endsWith(":*") || action.includes("*"))).toEqual([]);
  });

  it("lets each function do only its own DynamoDB work, plus reading key hashes and recording their use, on this table only", () => {
    const template = templateOf(config);
    const list = dynamoGrantsOf(template, routes.listPets.path, routes.listPets.method);
    const get = dynamoGrantsOf(template, routes.getPet.path, routes.getPet.method);
    const create = dynamoGrantsOf(template, routes.createPet.path, routes.createPet.method);

    // UpdateItem: each function records its key's use (KEYUSE, below), and only createPet more.
    expect(list.actions).toEqual(["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"]);
    expect(get.actions).toEqual(["dynamodb:GetItem", "dynamodb:UpdateItem"]);
    expect(create.actions).toEqual([
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]);
    expect(new Set([list.functionId, get.functionId, create.functionId]).size).toBe(3);
    for (const grants of [list, get, create]) {
      for (const resource of grants.resources) expect(JSON.stringify(resource)).toContain(`:table/${config.tableName}`);
    }
  });

  it("confines each function's DynamoDB actions to the partitions it uses: none can write an API key record", () => {
    const template = templateOf(config);
    const list = dynamoGrantsOf(template, routes.listPets.path, routes.listPets.method);
    const get = dynamoGrantsOf(template, routes.getPet.path, routes.getPet.method);
    const create = dynamoGrantsOf(template, routes.createPet.path, routes.createPet.method);
    const apiKeys = itemKeys.apiKey("0".repeat(64)).pk;
    const pets = itemKeys.pet(1, SHARED_PETS).pk;
    const counter = itemKeys.petIdCounter.pk;
    const idempotency = itemKeys.idempotency("key_abc", "retry-1").pk;
    const keyUses = itemKeys.keyUse("key_abc", routes.getPet.operationId).pk;

    for (const grants of [list, get, create]) {
      expect(actionsOnPartition(grants.statements, apiKeys)).toEqual(["dynamodb:GetItem"]);
      expect(actionsOnPartition(grants.statements, keyUses)).toEqual(["dynamodb:UpdateItem"]);
      expect(actionsOnPartition(grants.statements, "SOMETHING_ELSE")).toEqual([]);
    }
    expect(actionsOnPartition(list.statements, pets)).toEqual(["dynamodb:Query"]);
    expect(actionsOnPartition(get.statements, pets)).toEqual(["dynamodb:GetItem"]);
    expect(actionsOnPartition(create.statements, pets)).toEqual(["dynamodb:GetItem", "dynamodb:PutItem"]);
    expect(actionsOnPartition(create.statements, counter)).toEqual(["dynamodb:UpdateItem"]);
    expect(actionsOnPartition(create.statements, idempotency)).toEqual([
      "dynamodb:DeleteItem",
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:UpdateItem",
    ]);
    expect(actionsOnPartition(list.statements, idempotency)).toEqual([]);
    // The status index: read-only, and only listPets queries it.
    const indexStatements = (grants: typeof list) =>
      grants.statements.filter((statement) => JSON.stringify(statement.Resource).includes(`/index/${STATUS_INDEX}`));
    expect(indexStatements(list).flatMap((statement) => [statement.Action].flat())).toEqual(["dynamodb:Query"]);
    expect(indexStatements(get)).toEqual([]);
    expect(indexStatements(create)).toEqual([]);
  });

  // docs/deploy.md, section 7: its table lists each function's DynamoDB grants, and only those.
  it("grants each function exactly the DynamoDB partitions and actions docs/deploy.md's table lists", () => {
    const template = templateOf(config);
    const documented = documentedDynamoGrants();
    const shared = documented.get("all") ?? [];

    expect([...documented.keys()].sort()).toEqual([...routeList.map((route) => route.operationId), "all"].sort());
    for (const route of routeList) {
      const { statements } = dynamoGrantsOf(template, route.path, route.method);
      const granted = statements.flatMap((statement) => {
        const index = /\/index\/([^"]+)"/.exec(JSON.stringify(statement.Resource))?.[1];
        const where = index
          ? [`index ${index}`]
          : (Object.values(statement.Condition ?? {}).find((condition) => "dynamodb:LeadingKeys" in condition)?.[
              "dynamodb:LeadingKeys"
            ] as string[]);
        return where.flatMap((part) => [statement.Action].flat().map((action) => `${part}: ${action}`));
      });
      expect({ [route.operationId]: [...new Set(granted)].sort() }).toEqual({
        [route.operationId]: [...new Set([...(documented.get(route.operationId) ?? []), ...shared])].sort(),
      });
    }
  });

  it("throttles the stage as the config says", () => {
    const stage = only(Object.values(resourcesOf(templateOf(config), "AWS::ApiGateway::Stage")), "stages");

    expect(stage.Properties.MethodSettings).toEqual([
      expect.objectContaining({
        HttpMethod: "*",
        ResourcePath: "/*",
        ThrottlingRateLimit: config.api.throttlingRateLimit,
        ThrottlingBurstLimit: config.api.throttlingBurstLimit,
      }),
    ]);
  });

  it("writes the JSON access log format (test/unit/accessLog.test.ts) to a log group kept as the config says", () => {
    const template = templateOf(config);
    const stage = only(Object.values(resourcesOf(template, "AWS::ApiGateway::Stage")), "stages");
    const setting = stage.Properties.AccessLogSetting as { DestinationArn: unknown; Format: string };
    const destination = JSON.stringify(setting.DestinationArn);
    const logGroup = only(
      Object.entries(resourcesOf(template, "AWS::Logs::LogGroup")).filter(([id]) => destination.includes(`"${id}"`)),
      "access log groups",
    )[1];

    expect(setting.Format).toBe(accessLogFormat());
    expect(logGroup?.Properties.RetentionInDays).toBe(config.logRetention);
  });

  it("logs execution errors only, without request or response data, to a log group it creates with a retention", () => {
    const template = templateOf(config);
    const [stageId, stage] = only(Object.entries(resourcesOf(template, "AWS::ApiGateway::Stage")), "stages");
    const [apiId] = Object.keys(resourcesOf(template, "AWS::ApiGateway::RestApi"));
    const [executionLogsId, executionLogs] = only(
      Object.entries(resourcesOf(template, "AWS::Logs::LogGroup")).filter(([, group]) =>
        JSON.stringify(group.Properties.LogGroupName ?? "").includes("API-Gateway-Execution-Logs_"),
      ),
      "execution log groups",
    );

    expect(stage.Properties.MethodSettings).toEqual([
      expect.objectContaining({ LoggingLevel: "ERROR", DataTraceEnabled: false }),
    ]);
    expect(executionLogs.Properties.LogGroupName).toEqual({
      "Fn::Join": ["", ["API-Gateway-Execution-Logs_", { Ref: apiId }, "/v1"]],
    });
    expect(executionLogs.Properties.RetentionInDays).toBe(config.logRetention);
    // It must exist before the stage first logs, or API Gateway creates it without a retention.
    expect(
      [(template.toJSON().Resources as Record<string, { DependsOn?: string[] }>)[stageId]?.DependsOn].flat(),
    ).toContain(executionLogsId);
  });

  it("leaves API Gateway's account-wide CloudWatch role to the account stack", () => {
    const template = templateOf(config);

    template.resourceCountIs("AWS::ApiGateway::Account", 0);
    expect(
      Object.values(resourcesOf(template, "AWS::IAM::Role")).filter((role) =>
        JSON.stringify(role.Properties.AssumeRolePolicyDocument).includes("apigateway.amazonaws.com"),
      ),
    ).toEqual([]);
  });

  it("keeps every log group at least a year, encrypted with the stage's key, which only CloudWatch Logs for these groups may use", () => {
    const template = templateOf(config);
    const logGroups = Object.values(resourcesOf(template, "AWS::Logs::LogGroup"));
    const keyIds = new Set(logGroups.map((group) => getAttOf(group.Properties.KmsKeyId)));
    const [keyId] = [...keyIds];
    const key = resourcesOf(template, "AWS::KMS::Key")[keyId ?? ""];
    const statements =
      (key?.Properties.KeyPolicy as { Statement: (Statement & { Principal: unknown })[] } | undefined)?.Statement ?? [];
    const forLogs = statements.filter((statement) => JSON.stringify(statement.Principal).includes("logs."));

    // One per route function, the access and execution logs, and the synthetic check's two functions.
    expect(logGroups.length).toBe(routeList.length + 2 + 2);
    for (const group of logGroups) expect(group.Properties.RetentionInDays).toBeGreaterThanOrEqual(365);
    expect(keyIds.size).toBe(1);
    expect(key?.Properties.EnableKeyRotation).toBe(true);
    expect(forLogs.length).toBeGreaterThan(0);
    for (const statement of forLogs) {
      expect(Object.keys(statement.Condition?.ArnLike ?? {})).toEqual(["kms:EncryptionContext:aws:logs:arn"]);
    }
    expect(JSON.stringify(forLogs)).toContain(`log-group:${deployedStages[config.stage].stackName}-*`);
    expect(JSON.stringify(forLogs)).toContain("log-group:API-Gateway-Execution-Logs_");
  });

  it("lets only AWS services create grants on its KMS keys (Control Tower CT.KMS.PR.3)", () => {
    const keys = Object.values(resourcesOf(templateOf(config), "AWS::KMS::Key"));

    expect(keys.length).toBeGreaterThanOrEqual(2);
    for (const key of keys) {
      expect((key.Properties.KeyPolicy as { Statement: unknown[] }).Statement).toContainEqual(
        expect.objectContaining({
          Effect: "Deny",
          Principal: { AWS: "*" },
          Action: "kms:CreateGrant",
          Condition: { BoolIfExists: { "kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false" } },
        }),
      );
    }
  });

  it("lets the API invoke each function from this account and this stage only, with no test-invocation permission", () => {
    const template = templateOf(config);
    const permissions = Object.values(resourcesOf(template, "AWS::Lambda::Permission"));
    const [stageId] = Object.keys(resourcesOf(template, "AWS::ApiGateway::Stage"));

    expect(permissions).toHaveLength(routeList.length);
    for (const permission of permissions) {
      expect(permission.Properties).toMatchObject({
        Principal: "apigateway.amazonaws.com",
        SourceAccount: { Ref: "AWS::AccountId" },
      });
      expect(JSON.stringify(permission.Properties.SourceArn)).toContain(`{"Ref":"${stageId}"}`);
      expect(JSON.stringify(permission.Properties.SourceArn)).not.toContain("test-invoke-stage");
    }
  });

  it("lets every line of the functions through Lambda's filter, metrics lines included, and keeps its START and REPORT lines", () => {
    const functions = Object.values(resourcesOf(templateOf(config), "AWS::Lambda::Function"));

    for (const fn of functions) {
      expect(fn.Properties.LoggingConfig).toMatchObject({
        LogFormat: "JSON",
        ApplicationLogLevel: "TRACE",
        SystemLogLevel: "INFO",
      });
    }
    // The stage's level is applied by the functions themselves.
    const levels = functions
      .map((fn) => (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables)
      .map((variables) => variables?.LOG_LEVEL)
      .filter((level) => level !== undefined);
    expect(levels).toEqual(routeList.map(() => config.functions.logLevel));
  });

  it.each(requiredGatewayResponses)("answers $type ($when) with $status $code in the Error shape", (expected) => {
    const response = only(
      Object.values(resourcesOf(templateOf(config), "AWS::ApiGateway::GatewayResponse")).filter(
        (candidate) => candidate.Properties.ResponseType === expected.type,
      ),
      expected.type,
    );
    const templates = response.Properties.ResponseTemplates as Record<string, string>;
    const headers = response.Properties.ResponseParameters as Record<string, string>;

    const body = JSON.parse(templates["application/json"] ?? "null") as Record<string, unknown>;

    expect(response.Properties.StatusCode).toBe(String(expected.status));
    expect(Object.keys(body).sort()).toEqual(["code", "message", "status"]);
    expect(body).toMatchObject({ code: expected.code, status: expected.status, message: expect.any(String) });
    expect(headers["gatewayresponse.header.Content-Type"]).toMatch(/^'application\/json/);
  });

  it("gives every gateway response a body whose status and code match its HTTP status", () => {
    const responses = Object.values(resourcesOf(templateOf(config), "AWS::ApiGateway::GatewayResponse"));

    expect(responses.length).toBeGreaterThanOrEqual(requiredGatewayResponses.length);
    for (const response of responses) {
      const body = JSON.parse(
        (response.Properties.ResponseTemplates as Record<string, string>)["application/json"] ?? "",
      );
      const status = Number(response.Properties.StatusCode);

      expect(body.status, String(response.Properties.ResponseType)).toBe(status);
      expect(statusOfCode[body.code as GatewayErrorCode], String(response.Properties.ResponseType)).toBe(status);
      expect(body.message.length).toBeGreaterThan(0);
    }
  });

  it("answers unknown routes, at the root and below it, 404 in the Error shape", () => {
    const template = templateOf(config);
    const proxy = [...resourcePaths(template)].find(([, path]) => path === "/{proxy+}");

    for (const path of ["/", "/{proxy+}"]) {
      const method = methodAt(template, path, "ANY");
      const integration = method.Integration as {
        Type: string;
        IntegrationResponses: {
          StatusCode: string;
          ResponseTemplates: Record<string, string>;
          ResponseParameters: Record<string, string>;
        }[];
      };
      const response = only(integration.IntegrationResponses, "integration responses");

      expect(integration.Type).toBe("MOCK");
      expectNoBodyPassedThrough(integration);
      expect(response.StatusCode).toBe("404");
      expect(JSON.parse(response.ResponseTemplates["application/json"] ?? "")).toMatchObject({
        code: "not_found",
        status: 404,
      });
      expect(response.ResponseParameters["method.response.header.Content-Type"]).toMatch(/^'application\/json/);
      expect(method.MethodResponses).toEqual([expect.objectContaining({ StatusCode: "404" })]);
    }
    expect(proxy).toBeDefined();
  });

  it("answers another method on a known path 405 in the Error shape, naming the allowed ones", () => {
    const template = templateOf(config);
    const paths = [...new Set(routeList.map((route) => route.path))];

    for (const path of paths) {
      const allowed = routeList.filter((route) => route.path === path).map((route) => route.method);
      const integration = methodAt(template, path, "ANY").Integration as {
        PassthroughBehavior: string;
        IntegrationResponses: {
          StatusCode: string;
          ResponseTemplates: Record<string, string>;
          ResponseParameters: Record<string, string>;
        }[];
      };
      const response = only(integration.IntegrationResponses, "integration responses");

      expectNoBodyPassedThrough(integration);
      expect(response.StatusCode).toBe("405");
      expect(JSON.parse(response.ResponseTemplates["application/json"] ?? "")).toMatchObject({
        code: "method_not_allowed",
        status: 405,
      });
      expect(response.ResponseParameters["method.response.header.Allow"]).toBe(`'${allowed.join(", ")}'`);
      for (const method of allowed) {
        expect((methodAt(template, path, method).Integration as { Type: string }).Type).toBe("AWS_PROXY");
      }
    }
  });
});

describe("Production stage", () => {
  const production = stageConfigs.Production;

  it("protects its data stack against deletion but not its service stack, whose failed first create must be retryable, and is not pinned unless configured", () => {
    const stage = synth.stages.find((candidate) => candidate.node.id === production.id);

    expect(stage?.dataStack.terminationProtection).toBe(true);
    expect(stage?.stack.terminationProtection).toBe(false);
    expect(stage?.dataStack.stackName).toBe(deployedStages.prod.dataStackName);
    // The CLI deploys the data stack first: the service stack depends on it.
    expect(stage?.stack.dependencies).toEqual([stage?.dataStack]);
    expect(Token.isUnresolved(stage?.stack.account)).toBe(true);
    expect(Token.isUnresolved(stage?.stack.region)).toBe(true);
  });

  it("puts the edge firewall in front of its API stage", () => {
    const template = templateOf(production);
    const [webAclId] = Object.keys(resourcesOf(template, "AWS::WAFv2::WebACL"));
    const association = only(Object.values(resourcesOf(template, "AWS::WAFv2::WebACLAssociation")), "associations");

    expect(getAttOf(association.Properties.WebACLArn)).toBe(webAclId);
    expect(JSON.stringify(association.Properties.ResourceArn)).toContain("/stages/");
  });

  it("retains the table, with deletion protection, its keys and its logs when the stack is destroyed, but not after a failed first create", () => {
    const template = templateOf(production);
    const table = only(Object.values(resourcesOf(dataTemplateOf(production), "AWS::DynamoDB::GlobalTable")), "tables");
    const logGroups = Object.values(resourcesOf(template, "AWS::Logs::LogGroup"));

    const keys = Object.values(resourcesOf(template, "AWS::KMS::Key"));

    expect(table.DeletionPolicy).toBe("RetainExceptOnCreate");
    expect(table.UpdateReplacePolicy).toBe("Retain");
    expect((table.Properties.Replicas as Record<string, unknown>[])[0]?.DeletionProtectionEnabled).toBe(true);
    expect(logGroups.length).toBeGreaterThan(0);
    expect(keys).toHaveLength(2);
    for (const resource of [...logGroups, ...keys]) {
      expect(resource.DeletionPolicy).toBe("RetainExceptOnCreate");
      expect(resource.UpdateReplacePolicy).toBe("Retain");
    }
    // Nothing is kept after a failed first create: no plain Retain anywhere.
    expect(Object.values(resourcesOf(template)).filter((resource) => resource.DeletionPolicy === "Retain")).toEqual([]);
  });
});

describe("Staging stage", () => {
  const staging = stageConfigs.Staging;

  it("can be destroyed: no deletion protection and a table deleted with the stack", () => {
    const table = only(Object.values(resourcesOf(dataTemplateOf(staging), "AWS::DynamoDB::GlobalTable")), "tables");

    expect(table.DeletionPolicy).toBe("Delete");
    expect((table.Properties.Replicas as Record<string, unknown>[])[0]?.DeletionProtectionEnabled).toBe(false);
  });

  it("leaves nothing behind on destroy", () => {
    const retained = [
      ...Object.values(resourcesOf(templateOf(staging))),
      ...Object.values(resourcesOf(dataTemplateOf(staging))),
    ]
      .filter((resource) => resource.DeletionPolicy?.startsWith("Retain"))
      .map((resource) => resource.Type);

    expect(retained).toEqual([]);
  });

  it("has no termination protection and, as configured, no edge firewall", () => {
    const stage = synth.stages.find((candidate) => candidate.node.id === staging.id);

    expect(stage?.stack.terminationProtection).toBe(false);
    expect(stage?.dataStack.terminationProtection).toBe(false);
    expect(staging.edgeProtection).toBeUndefined();
    templateOf(staging).resourceCountIs("AWS::WAFv2::WebACL", 0);
  });
});
