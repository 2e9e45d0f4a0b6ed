/**
 * The deploy rehearsal's IAM model on small hand-made templates: every policy source a role is
 * granted from, permission boundaries and resource policies in the decision, AWS's AccessDenied
 * message, key conditions read fail-closed, over-grants named by statement, the pre-signed response
 * URL as strict as S3, and the stand-in answering a denied or wrong-region call as AWS does.
 */
import { CreateTableCommand, DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccessRow, accessMatrix } from "../../scripts/rehearse/accessMatrix";
import type { CfnResource } from "../../scripts/rehearse/assembly";
import { AwsStandIn, type RecordedCall, responseUrlRefusal } from "../../scripts/rehearse/awsStandIn";
import { REHEARSAL_REGION, STAGING_ACCOUNT } from "../../scripts/rehearse/configurations";
import { evaluate, principalOf } from "../../scripts/rehearse/iam";
import { functionPolicyOf, resourcePolicyOf, roleGrants } from "../../scripts/rehearse/policies";
import { type BoundRow, covers, wildcardMatch } from "../../scripts/rehearse/proof";
import { KeyConditionError, queryPartitionKey, requestsOf } from "../../scripts/rehearse/requests";
import type { Resolver } from "../../scripts/rehearse/resolve";
import { handMadeResolver } from "../support/handMadeStack";

const TABLE = `arn:aws:dynamodb:${REHEARSAL_REGION}:${STAGING_ACCOUNT}:table/pets`;
const policy = (...statements: Record<string, unknown>[]) => ({ Version: "2012-10-17", Statement: statements });

const resolverOf = handMadeResolver;

/** A table `pets` (partition key pk) and a role whose only grant is a Query of the PET partition. */
const baseResources = (): Record<string, CfnResource> => ({
  Table: {
    Type: "AWS::DynamoDB::Table",
    Properties: {
      TableName: "pets",
      KeySchema: [
        { AttributeName: "pk", KeyType: "HASH" },
        { AttributeName: "sk", KeyType: "RANGE" },
      ],
    },
  },
  Role: { Type: "AWS::IAM::Role", Properties: { AssumeRolePolicyDocument: policy() } },
  RolePolicy: {
    Type: "AWS::IAM::Policy",
    Properties: {
      Roles: [{ Ref: "Role" }],
      PolicyDocument: policy({
        Effect: "Allow",
        Action: "dynamodb:Query",
        Resource: TABLE,
        Condition: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": ["PET"] } },
      }),
    },
  },
});

const principal = `arn:aws:sts::${STAGING_ACCOUNT}:assumed-role/Role/Fn`;
const options = (resolver: Resolver, resource = TABLE) => {
  const grants = roleGrants(resolver, "Role");
  const resourcePolicy = resourcePolicyOf(resolver, resource);
  return {
    principal,
    principalAccount: STAGING_ACCOUNT,
    identityPolicies: grants.identityPolicies,
    permissionBoundaries: grants.permissionBoundaries,
    ...(resourcePolicy ? { resourcePolicy } : {}),
  };
};
const query = (partition: string) => ({
  caller: "Fn",
  action: "dynamodb:Query",
  resource: TABLE,
  context: { "dynamodb:LeadingKeys": [partition] },
  because: "a test",
});

describe("a role's grants come from every policy source IAM attaches", () => {
  it("reads inline policies, AWS::IAM::Policy, AWS::IAM::RolePolicy, a customer managed policy either way, and AWS managed policies from the dataset", () => {
    const resources = baseResources();
    const role = resources.Role as { Properties: Record<string, unknown> };
    role.Properties.Policies = [
      { PolicyName: "inline", PolicyDocument: policy({ Effect: "Allow", Action: "sns:Publish", Resource: "*" }) },
    ];
    role.Properties.ManagedPolicyArns = ["arn:aws:iam::aws:policy/AdministratorAccess", { Ref: "Customer" }];
    resources.Customer = {
      Type: "AWS::IAM::ManagedPolicy",
      Properties: { PolicyDocument: policy({ Effect: "Allow", Action: "kms:Decrypt", Resource: "*" }) },
    };
    resources.Attached = {
      Type: "AWS::IAM::ManagedPolicy",
      Properties: {
        Roles: [{ Ref: "Role" }],
        PolicyDocument: policy({ Effect: "Allow", Action: "s3:GetObject", Resource: "*" }),
      },
    };
    resources.ByName = {
      Type: "AWS::IAM::RolePolicy",
      Properties: {
        RoleName: { Ref: "Role" },
        PolicyName: "by-name",
        PolicyDocument: policy({ Effect: "Allow", Action: "dynamodb:*", Resource: "*" }),
      },
    };
    const grants = roleGrants(resolverOf(resources), "Role");
    expect(grants.identityPolicies.map((entry) => entry.name).sort()).toEqual(
      [
        "AWS managed policy AdministratorAccess",
        "Attached (customer managed)",
        "ByName",
        "Customer (customer managed)",
        "Role inline policy inline",
        "RolePolicy",
      ].sort(),
    );
    expect(
      grants.identityPolicies.find((entry) => entry.name.includes("AdministratorAccess"))?.document.Statement,
    ).toEqual([{ Effect: "Allow", Action: "*", Resource: "*" }]);
    expect(grants.problems).toEqual([]);
  });

  it("reports a managed policy or boundary ARN it cannot read instead of ignoring it", () => {
    const resources = baseResources();
    const role = resources.Role as { Properties: Record<string, unknown> };
    role.Properties.ManagedPolicyArns = ["arn:aws:iam::999999999999:policy/elsewhere"];
    role.Properties.PermissionsBoundary = "arn:aws:iam::aws:policy/NoSuchPolicyEver";
    const { problems } = roleGrants(resolverOf(resources), "Role");
    expect(problems).toEqual([
      expect.stringMatching(
        /managed policy arn:aws:iam::999999999999:policy\/elsewhere is neither .* cannot be checked/,
      ),
      expect.stringMatching(/permission boundary arn:aws:iam::aws:policy\/NoSuchPolicyEver is neither/),
    ]);
  });
});

describe("each decision weighs every policy AWS evaluates, and a deny carries AWS's message", () => {
  it("allows the granted partition and names the statement that allowed it", async () => {
    const resolver = resolverOf(baseResources());
    const decision = await evaluate(query("PET"), options(resolver));
    expect(decision.allowed).toBe(true);
    expect(decision.allowedBy.map((ref) => `${ref.policy} ${ref.index}`)).toEqual(["RolePolicy 0"]);
  });

  it("denies what a permission boundary does not allow, saying so as AWS does", async () => {
    const resources = baseResources();
    (resources.Role as { Properties: Record<string, unknown> }).Properties.PermissionsBoundary = { Ref: "Boundary" };
    resources.Boundary = {
      Type: "AWS::IAM::ManagedPolicy",
      Properties: { PolicyDocument: policy({ Effect: "Allow", Action: "logs:*", Resource: "*" }) },
    };
    const decision = await evaluate(query("PET"), options(resolverOf(resources)));
    expect(decision.allowed).toBe(false);
    expect(decision.accessDenied).toBe(
      `User: ${principal} is not authorized to perform: dynamodb:Query on resource: ${TABLE} because no permissions boundary allows the dynamodb:Query action`,
    );
  });

  it("denies what a table's resource policy denies, naming the statement", async () => {
    const resources = baseResources();
    (resources.Table as { Properties: Record<string, unknown> }).Properties.ResourcePolicy = {
      PolicyDocument: policy({ Effect: "Deny", Principal: "*", Action: "dynamodb:Query", Resource: "*" }),
    };
    const decision = await evaluate(query("PET"), options(resolverOf(resources)));
    expect(decision.result).toBe("ExplicitlyDenied");
    expect(decision.accessDenied).toMatch(/on resource: \S+ with an explicit deny in a resource-based policy$/);
    expect(decision.explanation).toMatch(
      /^explicitly denied by Table table resource policy statement 1: .*"Effect":"Deny"/,
    );
  });

  it("applies a function's permissions to the ARN invoked: an alias has its own, $LATEST is the function's", () => {
    const fnArn = `arn:aws:lambda:${REHEARSAL_REGION}:${STAGING_ACCOUNT}:function:fn`;
    const resolver = resolverOf({
      OnAlias: {
        Type: "AWS::Lambda::Permission",
        Properties: {
          FunctionName: `${fnArn}:live`,
          Principal: "apigateway.amazonaws.com",
          Action: "lambda:InvokeFunction",
        },
      },
      OnFunction: {
        Type: "AWS::Lambda::Permission",
        Properties: { FunctionName: fnArn, Principal: "scheduler.amazonaws.com", Action: "lambda:InvokeFunction" },
      },
    });
    expect(functionPolicyOf(resolver, `${fnArn}:live`)?.document.Statement.map((statement) => statement.Sid)).toEqual([
      "OnAlias",
    ]);
    expect(
      functionPolicyOf(resolver, `${fnArn}:$LATEST`)?.document.Statement.map((statement) => statement.Sid),
    ).toEqual(["OnFunction"]);
    expect(functionPolicyOf(resolver, `${fnArn}:other`)).toBeUndefined();
  });
});

describe("key conditions are read fail-closed", () => {
  const values = { ":v": { S: "APIKEY" }, ":s": { S: "x" } };
  it("reads the partition key from either side of the equality, by name or #placeholder, beside a sort key condition", () => {
    expect(queryPartitionKey({ KeyConditionExpression: "pk = :v", ExpressionAttributeValues: values }, "pk")).toBe(
      "APIKEY",
    );
    expect(queryPartitionKey({ KeyConditionExpression: ":v = pk", ExpressionAttributeValues: values }, "pk")).toBe(
      "APIKEY",
    );
    expect(
      queryPartitionKey(
        {
          KeyConditionExpression: "(#p = :v) AND begins_with(sk, :s)",
          ExpressionAttributeNames: { "#p": "pk" },
          ExpressionAttributeValues: values,
        },
        "pk",
      ),
    ).toBe("APIKEY");
    expect(
      queryPartitionKey(
        { KeyConditions: { pk: { ComparisonOperator: "EQ", AttributeValueList: [{ S: "PET" }] } } },
        "pk",
      ),
    ).toBe("PET");
  });

  it("refuses a condition it cannot read rather than report no partition, which ForAllValues would accept", () => {
    for (const expression of [
      "sk = :s",
      "pk = :v OR pk = :s",
      "pk = :missing",
      "begins_with(pk, :v)",
      "pk = :v AND pk = :s",
    ]) {
      expect(
        () => queryPartitionKey({ KeyConditionExpression: expression, ExpressionAttributeValues: values }, "pk"),
        expression,
      ).toThrow(KeyConditionError);
    }
  });

  it("turns a swapped key condition on the APIKEY partition into a request the role is denied (it was allowed, fail-open)", async () => {
    const resolver = resolverOf(baseResources());
    const call: RecordedCall = {
      accessKeyId: "ASIAREHEARSAL0101",
      service: "dynamodb",
      operation: "Query",
      region: REHEARSAL_REGION,
      body: { TableName: "pets", KeyConditionExpression: ":v = pk", ExpressionAttributeValues: values },
    };
    const { requests, unmodelled } = requestsOf(call, "Fn", resolver);
    expect(unmodelled).toBeUndefined();
    expect(requests.map((request) => request.context)).toEqual([{ "dynamodb:LeadingKeys": ["APIKEY"] }]);
    const decision = await evaluate(requests[0] as (typeof requests)[number], options(resolver));
    expect(decision.allowed).toBe(false);
    expect(decision.explanation).toMatch(
      /ForAllValues:StringEquals dynamodb:LeadingKeys does not hold for \["APIKEY"\]/,
    );

    const unreadable = requestsOf(
      { ...call, body: { ...call.body, KeyConditionExpression: "sk = :s" } },
      "Fn",
      resolver,
    );
    expect(unreadable.requests).toEqual([]);
    expect(unreadable.unmodelled).toMatch(
      /dynamodb:Query on \S+table\/pets, whose partition key cannot be read: .*names the partition key pk in no equality/,
    );
  });
});

describe("a row of the access matrix covers a request only as written", () => {
  const row = (fields: Partial<BoundRow["row"]> & { source?: Record<string, string> }): BoundRow => ({
    row: {
      principal: { role: "PetStore/Role" },
      actions: ["dynamodb:Query"],
      resources: [],
      reason: "a test",
      ...fields,
    },
    scope: "Staging",
    principal: "arn:aws:iam::111111111111:role/Role",
    resources: [TABLE],
    ...(fields.source ? { source: fields.source } : {}),
  });
  const role = "arn:aws:iam::111111111111:role/Role";
  const request = (context: Record<string, string | string[]>, action = "dynamodb:Query", resource = TABLE) => ({
    action,
    resource,
    context,
  });

  it("matches actions case-insensitively and resources as IAM wildcards, for its own principal only", () => {
    expect(wildcardMatch("dynamodb:Get*", "dynamodb:getitem", true)).toBe(true);
    expect(wildcardMatch("arn:aws:lambda:*:*:function:f:*", "arn:aws:lambda:eu-west-1:1:function:f")).toBe(false);
    expect(covers(row({}), role, request({}, "DynamoDB:query"))).toBe(true);
    expect(covers(row({}), "arn:aws:iam::111111111111:role/Other", request({}))).toBe(false);
    expect(covers(row({}), role, request({}, "dynamodb:Query", `${TABLE}-other`))).toBe(false);
  });

  it("covers a partitioned request only when every partition it names is the row's, and never one that names none", () => {
    const partitioned = row({ partitions: ["PET", "SYNTHETIC_PET#*"] });
    expect(covers(partitioned, role, request({ "dynamodb:LeadingKeys": ["SYNTHETIC_PET#key_1"] }))).toBe(true);
    expect(covers(partitioned, role, request({ "dynamodb:LeadingKeys": ["PET", "APIKEY"] }))).toBe(false);
    expect(covers(partitioned, role, request({}))).toBe(false);
  });

  it("covers a service's request only from the row's source", () => {
    const sourced = row({ source: { "aws:SourceAccount": "111111111111" } });
    expect(covers(sourced, role, request({ "aws:SourceAccount": "111111111111" }))).toBe(true);
    expect(covers(sourced, role, request({ "aws:SourceAccount": "333333333333" }))).toBe(false);
    expect(covers(sourced, role, request({}))).toBe(false);
  });

  it("names an assumed-role session by its role", () => {
    expect(principalOf({ principal: "arn:aws:sts::111111111111:assumed-role/Role/Fn" })).toBe(role);
    expect(principalOf({ principal: "lambda.amazonaws.com" })).toBe("lambda.amazonaws.com");
  });
});

describe("the CloudFormation response URL is as strict as the pre-signed S3 URL", () => {
  const body = Buffer.from(
    JSON.stringify({
      Status: "SUCCESS",
      RequestId: "r",
      StackId: "s",
      LogicalResourceId: "l",
      PhysicalResourceId: "p",
    }),
  );
  it("accepts one PUT with the issued query, no Content-Type and a complete body", () => {
    expect(responseUrlRefusal("PUT", "q=1", "q=1", "", body)).toBeUndefined();
    expect(responseUrlRefusal("PUT", "q=1", "q=1", undefined, body)).toBeUndefined();
  });
  it("refuses another method, a changed query, a Content-Type, an oversized or incomplete body", () => {
    expect(responseUrlRefusal("POST", "q=1", "q=1", "", body)).toMatch(/POST .*SignatureDoesNotMatch/);
    expect(responseUrlRefusal("PUT", "q=1", "q=2", "", body)).toMatch(/changed query string/);
    expect(responseUrlRefusal("PUT", "q=1", "q=1", "application/json", body)).toMatch(
      /Content-Type "application\/json"/,
    );
    expect(responseUrlRefusal("PUT", "q=1", "q=1", "", Buffer.alloc(5000, 32))).toMatch(/5000-byte body/);
    expect(
      responseUrlRefusal(
        "PUT",
        "q=1",
        "q=1",
        "",
        Buffer.from(
          JSON.stringify({
            Status: "FAILED",
            RequestId: "r",
            StackId: "s",
            LogicalResourceId: "l",
            PhysicalResourceId: "p",
          }),
        ),
      ),
    ).toMatch(/without Reason/);
  });
});

describe("the AWS stand-in answers a call as AWS would, when it is made", () => {
  const standIn = new AwsStandIn();
  beforeAll(async () => {
    await standIn.start();
    const setup = standIn.setupClient(REHEARSAL_REGION);
    await setup.send(
      new CreateTableCommand({
        TableName: "pets",
        AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    setup.destroy();
  });
  afterAll(() => standIn.stop());

  const client = (region: string) =>
    new DynamoDBClient({
      region,
      endpoint: standIn.endpoint,
      credentials: { accessKeyId: "ASIATEST", secretAccessKey: "s" },
      maxAttempts: 1,
    });

  it("gives the SDK AWS's AccessDeniedException for a denied call, and the region mismatch for a call signed elsewhere", async () => {
    standIn.authorize = async (call) =>
      call.region !== REHEARSAL_REGION
        ? {
            status: 400,
            errorType: "InvalidSignatureException",
            message: `Credential should be scoped to a valid region, not '${call.region}'.`,
          }
        : {
            status: 400,
            errorType: "AccessDeniedException",
            message:
              "User: x is not authorized to perform: dynamodb:GetItem on resource: y because no identity-based policy allows the dynamodb:GetItem action",
          };
    const denied = await client(REHEARSAL_REGION)
      .send(new GetItemCommand({ TableName: "pets", Key: { pk: { S: "PET" } } }))
      .catch((error: Error) => error);
    expect(denied).toMatchObject({
      name: "AccessDeniedException",
      message: expect.stringMatching(/^User: x is not authorized to perform: dynamodb:GetItem/),
    });
    const elsewhere = await client("us-east-1")
      .send(new GetItemCommand({ TableName: "pets", Key: { pk: { S: "PET" } } }))
      .catch((error: Error) => error);
    expect(elsewhere).toMatchObject({ name: "InvalidSignatureException" });
    expect(standIn.calls.map((call) => [call.region, call.refused?.split(":")[0]])).toEqual([
      [REHEARSAL_REGION, "AccessDeniedException"],
      ["us-east-1", "InvalidSignatureException"],
    ]);
    standIn.authorize = undefined;
  });
});

describe("docs/testing.md", () => {
  it("lists exactly the matrix rows no rehearsed call exercises, principal by principal, each with its reason", async () => {
    const { readFileSync } = await import("node:fs");
    const doc = readFileSync(new URL("../../docs/testing.md", import.meta.url), "utf8");
    const table = /<!-- unexercised:start -->([\s\S]*)<!-- unexercised:end -->/.exec(doc)?.[1] ?? "";
    const rows = table
      .split("\n")
      .filter((line) => line.startsWith("| `"))
      .map((line) => {
        const [, principal = "", actions = ""] = line.split("|").map((cell) => cell.trim());
        return `${principal.replaceAll("`", "")}: ${actions.replaceAll("`", "")}`;
      });
    const principalName = (row: AccessRow) =>
      "role" in row.principal ? row.principal.role : "service" in row.principal ? row.principal.service : "the account";
    const expected = accessMatrix
      .filter((row) => row.unexercised)
      .map((row) => `${principalName(row)}: ${row.actions.join(", ")}`);
    expect(rows).toEqual(expected);
    for (const row of accessMatrix) expect(row.reason.length).toBeGreaterThan(20);
  });
});

describe("nothing rehearsed is optional", () => {
  it("names each function, alias and API method not driven, and each step that did not make the call it exists to exercise", async () => {
    const { undrivenParts } = await import("../../scripts/rehearse/rehearse");
    const stage = {
      skipped: [],
      functions: [
        { logicalId: "CreatePet", invocations: 2, refusedInvocations: 0 },
        { logicalId: "Idle", invocations: 0, refusedInvocations: 0 },
        { logicalId: "Refused", invocations: 0, refusedInvocations: 1 },
      ],
      aliases: new Map([
        ["arn:aws:lambda:eu-west-1:111111111111:function:create:live", "CreatePet"],
        ["arn:aws:lambda:eu-west-1:111111111111:function:idle:live", "Idle"],
      ]),
      invokedAliases: new Set(["arn:aws:lambda:eu-west-1:111111111111:function:create:live"]),
      api: { methods: () => ["POST /pets", "DELETE /pets"], called: new Set(["POST /pets"]) },
    };
    const created = await evaluate(
      {
        caller: "CreatePet",
        action: "dynamodb:UpdateItem",
        resource: TABLE,
        context: {},
        because: "t",
        step: "POST /v1/pets",
      },
      { principal, principalAccount: STAGING_ACCOUNT },
    );
    const expected = [
      { step: "POST /v1/pets", caller: "CreatePet", action: "dynamodb:PutItem" },
      { step: "POST /v1/pets", caller: "Failed", action: "dynamodb:PutItem" },
    ];
    expect(undrivenParts(stage, expected, [created], new Set(["Failed"]))).toEqual([
      "function Idle was never invoked by any scenario step",
      "alias arn:aws:lambda:eu-west-1:111111111111:function:idle:live was never invoked",
      "API method DELETE /pets was never called",
      'step "POST /v1/pets" made no dynamodb:PutItem call from CreatePet, which it exists to exercise',
    ]);
  });
});
