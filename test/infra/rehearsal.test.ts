/**
 * The deploy rehearsal (scripts/rehearse): each configuration synthesized once, every stage's
 * uploaded artifacts run on Node 24 and driven as their AWS callers drive them, every AWS call
 * they make authorized when made, the templates proven to allow exactly the access matrix and the
 * calls held to its rows. Then templates broken on purpose, one copy of the cloud assembly each, to
 * see the rehearsal name what broke (test/infra/accessMatrix.test.ts breaks the matrix's proof alone).
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { itemKeys, STATUS_INDEX } from "../../lib/db/table";
import { accessMatrix } from "../../scripts/rehearse/accessMatrix";
import { type AssemblyStack, type CfnTemplate, readAssembly, resourcesOf } from "../../scripts/rehearse/assembly";
import { rehearsalConfigurations } from "../../scripts/rehearse/configurations";
import { rehearseAssembly } from "../../scripts/rehearse/rehearse";
import type { RehearsalReport } from "../../scripts/rehearse/report";
import { summaryLine } from "../../scripts/rehearse/report";
import { synthesizeAll } from "../../scripts/rehearse/synth";
import { projectRoot } from "../support/processes";

let assemblies = new Map<string, string>();
/** Every cloud assembly directory the file made, removed at the end. */
const made: string[] = [];
const reports = new Map<string, RehearsalReport>();

beforeAll(async () => {
  assemblies = synthesizeAll(rehearsalConfigurations);
  made.push(...assemblies.values());
  for (const [name, directory] of assemblies) reports.set(name, await rehearseAssembly(directory));
}, 900_000);

afterAll(() => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

describe.each(rehearsalConfigurations.map((configuration) => configuration.name))("the %s deployment", (name) => {
  const report = () => reports.get(name) as RehearsalReport;

  it("rehearses with no failure", () => {
    expect(report().failures).toEqual([]);
    expect(summaryLine([report()])).toMatch(/; 0 failures$/);
  });

  it("runs all five project functions of each stage from their artifacts, and skips none", () => {
    expect(report().stages).toHaveLength(2);
    for (const stage of report().stages) {
      expect(stage.functions).toHaveLength(5);
      expect(stage.skipped).toEqual([]);
    }
  });

  it("drives the whole scenario: keys provisioned, rotated and revoked, the contract, the scheduled check", () => {
    for (const stage of report().stages) {
      const names = stage.scenario.map((check) => check.name);
      for (const expected of [
        /Create .* answers SUCCESS/,
        /Update .* answers SUCCESS/,
        /Delete .* answers SUCCESS/,
        /idempotent replay/,
        /following Link rel=next to the end/,
        /list by status/,
        /Deprecation, Sunset/,
        /the revoked one 401/,
        /the scheduled run passes/,
      ]) {
        expect(
          names.some((candidate) => expected.test(candidate)),
          String(expected),
        ).toBe(true);
      }
    }
  });

  it("checks the calls of every function and the GSI query against the index ARN", () => {
    for (const stage of report().stages) {
      const callers = new Set(
        stage.calls.filter((call) => call.request.action.startsWith("dynamodb:")).map((call) => call.request.caller),
      );
      expect(callers.size).toBe(4);
      expect(stage.calls.some((call) => call.request.resource.endsWith(`/index/${STATUS_INDEX}`))).toBe(true);
      expect(stage.calls.some((call) => call.request.action === "secretsmanager:GetSecretValue")).toBe(true);
    }
  });

  it("proves the access matrix: nothing allowed outside its rows, no row denied, every call in a row, every row exercised or explained", () => {
    const { proof, callsOutside, staleRows } = report();
    expect(proof?.outside).toEqual([]);
    expect(proof?.deniedRows).toEqual([]);
    expect(proof?.problems).toEqual([]);
    expect(callsOutside).toEqual([]);
    expect(staleRows).toEqual([]);
    for (const stage of report().stages) {
      // The services' own calls were made and judged too: Lambda running each function, API
      // Gateway invoking the aliases, the scheduler assuming its role and invoking the check.
      const services = new Set(stage.calls.filter((d) => !d.principal.startsWith("arn:")).map((d) => d.principal));
      expect([...services].sort()).toEqual([
        "apigateway.amazonaws.com",
        "lambda.amazonaws.com",
        "scheduler.amazonaws.com",
      ]);
    }
  });
});

/**
 * A copy of the two-account assembly whose staging service stack (the one with functions) `edit`
 * changes; `editData` changes staging's data stack (its table).
 */
function brokenAssembly(
  edit: (template: CfnTemplate, stack: AssemblyStack) => void,
  editData?: (template: CfnTemplate, stack: AssemblyStack) => void,
): string {
  const copy = mkdtempSync(join(tmpdir(), "rehearsal-broken-"));
  made.push(copy);
  cpSync(assemblies.get("two-accounts") as string, copy, { recursive: true });
  const stacks = readAssembly(copy).filter((candidate) => candidate.displayName.startsWith("Staging"));
  const stack = stacks.find(
    (candidate) => resourcesOf(candidate.template, "AWS::Lambda::Function").length > 0,
  ) as AssemblyStack;
  edit(stack.template, stack);
  writeFileSync(stack.templateFile, JSON.stringify(stack.template));
  const data = stacks.find((candidate) => candidate !== stack);
  if (editData && data) {
    editData(data.template, data);
    writeFileSync(data.templateFile, JSON.stringify(data.template));
  }
  return copy;
}

/** The role of a function, and the ARN of the stage's table, from the template alone. */
const roleOf = (fn: Record<string, unknown>) => (fn.Role as { "Fn::GetAtt": string[] })["Fn::GetAtt"][0] as string;

/** The function behind the API operation, its role's policy statements, from the template alone. */
function operation(template: CfnTemplate, operationId: string) {
  const properties = (logicalId: string) => template.Resources[logicalId]?.Properties ?? {};
  const [, method] =
    resourcesOf(template, "AWS::ApiGateway::Method").find(
      ([, candidate]) => candidate.Properties?.OperationName === operationId,
    ) ?? [];
  const uri = JSON.stringify((method?.Properties?.Integration as { Uri?: unknown } | undefined)?.Uri);
  const aliasId = /"Ref":"([^"]+)"/.exec(uri)?.[1] as string;
  const functionId = (properties(aliasId).FunctionName as { Ref: string }).Ref;
  const roleId = (properties(functionId).Role as { "Fn::GetAtt": string[] })["Fn::GetAtt"][0] as string;
  const [policyId, policy] = resourcesOf(template, "AWS::IAM::Policy").find(([, candidate]) =>
    ((candidate.Properties?.Roles ?? []) as { Ref: string }[]).some((ref) => ref.Ref === roleId),
  ) as unknown as [string, { Properties: { PolicyDocument: { Statement: Record<string, unknown>[] } } }];
  return { functionId, policyId, statements: policy.Properties.PolicyDocument.Statement, fn: properties(functionId) };
}

const leadingKeys = (statement: Record<string, unknown>) => JSON.stringify(statement.Condition ?? {});

describe("a template broken on purpose", () => {
  it("names the function, action, resource and statement for a missing APIKEY read, a narrowed LeadingKeys pattern and a GSI query granted on the table only", async () => {
    let names: Record<string, string> = {};
    const copy = brokenAssembly((template) => {
      const getPet = operation(template, "getPet");
      getPet.statements.splice(
        getPet.statements.findIndex((statement) => leadingKeys(statement).includes(`"${itemKeys.apiKeyPartition}"`)),
        1,
      );
      const createPet = operation(template, "createPet");
      const idempotency = createPet.statements.find((statement) =>
        leadingKeys(statement).includes("IDEMPOTENCY#*"),
      ) as Record<string, unknown>;
      idempotency.Condition = JSON.parse(leadingKeys(idempotency).replace("IDEMPOTENCY#*", "IDEMPOTENCY#admin-*"));
      const listPets = operation(template, "listPets");
      const index = listPets.statements.find((statement) =>
        JSON.stringify(statement.Resource).includes("/index/"),
      ) as Record<string, unknown>;
      // The index ARN without its `/index/<name>`: the table's own ARN.
      index.Resource = JSON.parse(JSON.stringify(index.Resource).replace(`/index/${STATUS_INDEX}`, ""));
      names = {
        getPet: getPet.functionId,
        createPet: createPet.functionId,
        createPetPolicy: createPet.policyId,
        listPets: listPets.functionId,
        listPetsPolicy: listPets.policyId,
      };
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    const failure = (pattern: RegExp) => failures.find((candidate) => pattern.test(candidate)) ?? failures.join("\n");

    expect(failure(new RegExp(`${names.getPet} would be denied dynamodb:GetItem`))).toMatch(
      new RegExp(
        `table/${deployedStages.staging.tableName} with \\{"dynamodb:LeadingKeys":\\["APIKEY"\\]\\}[\\s\\S]*does not hold for \\["APIKEY"\\]`,
      ),
    );
    expect(failure(new RegExp(`${names.createPet} would be denied dynamodb:PutItem`))).toMatch(
      new RegExp(
        `IDEMPOTENCY#[^"]+"\\]\\}[\\s\\S]*${names.createPetPolicy} statement \\d+: .*IDEMPOTENCY#admin-\\*[\\s\\S]*ForAllValues:StringLike dynamodb:LeadingKeys does not hold`,
      ),
    );
    expect(
      failure(new RegExp(`${names.listPets} would be denied dynamodb:Query on \\S+/index/${STATUS_INDEX}`)),
    ).toMatch(
      new RegExp(`${names.listPetsPolicy} statement \\d+: .* names the action, but its Resource does not match`),
    );
    expect(failures.length).toBeGreaterThanOrEqual(3);
    // The narrowed pattern refuses the claim and then the clean-up that forgets it: one grant, one block.
    const createPetBlocks = failures.filter((candidate) => candidate.includes(`${names.createPet} would be denied`));
    expect(createPetBlocks, createPetBlocks.join("\n=====\n")).toHaveLength(1);
    expect(createPetBlocks[0]).toMatch(/also with: .*dynamodb:DeleteItem on/);
  });

  it("names the function that lost an environment variable and the one whose handler export is missing", async () => {
    let names: Record<string, string> = {};
    const copy = brokenAssembly((template) => {
      const getPet = operation(template, "getPet");
      const variables = (getPet.fn.Environment as { Variables: Record<string, unknown> }).Variables;
      delete variables.PETS_TABLE_NAME;
      const listPets = operation(template, "listPets");
      listPets.fn.Handler = "index.handlr";
      names = { getPet: getPet.functionId, listPets: listPets.functionId };
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    expect(
      failures.find((failure) => failure.includes(names.getPet as string) && failure.includes("starts (init)")),
    ).toMatch(/ConfigError: .*PETS_TABLE_NAME is not set/);
    expect(
      failures.find((failure) => failure.includes(names.listPets as string) && failure.includes("starts (init)")),
    ).toMatch(/Runtime\.HandlerNotFound: index\.handlr is undefined or not exported/);
  });

  it("reports a topic key that lets CloudWatch in only with confused-deputy conditions AWS documents for the topic policy alone", async () => {
    const copy = brokenAssembly((template) => {
      const [, key] =
        resourcesOf(template, "AWS::KMS::Key").find(([candidate]) => candidate.startsWith("MonitoringAlarmTopicKey")) ??
        [];
      const policy = key?.Properties?.KeyPolicy as { Statement: Record<string, unknown>[] } | undefined;
      const statement = (policy?.Statement ?? []).find((candidate) =>
        JSON.stringify(candidate.Principal).includes("cloudwatch.amazonaws.com"),
      ) as Record<string, unknown>;
      statement.Condition = { StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } };
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });

    expect(
      failures.find((failure) =>
        /access matrix row denied: .*cloudwatch\.amazonaws\.com may kms:Decrypt/.test(failure),
      ),
    ).toMatch(/CloudWatch encrypts notifications[\s\S]*aws:SourceAccount does not hold for "\(absent\)"/);
  });
});

describe("least privilege: the templates allow exactly the access matrix, from every policy source", () => {
  it("names AdministratorAccess attached by ARN, an AWS::IAM::RolePolicy, an AWS::IAM::Policy on *, and the statement of each, once", async () => {
    let names: Record<string, string> = {};
    const copy = brokenAssembly((template) => {
      const getPet = operation(template, "getPet");
      const listPets = operation(template, "listPets");
      const createPet = operation(template, "createPet");
      const getPetRole = template.Resources[roleOf(getPet.fn)] as { Properties: Record<string, unknown> };
      getPetRole.Properties.ManagedPolicyArns = [
        { "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":iam::aws:policy/AdministratorAccess"]] },
      ];
      template.Resources.BrokenRolePolicy = {
        Type: "AWS::IAM::RolePolicy",
        Properties: {
          RoleName: { Ref: roleOf(createPet.fn) },
          PolicyName: "everything-on-the-table",
          PolicyDocument: {
            Version: "2012-10-17",
            Statement: [{ Effect: "Allow", Action: "dynamodb:*", Resource: "*" }],
          },
        },
      };
      template.Resources.BrokenPolicy = {
        Type: "AWS::IAM::Policy",
        Properties: {
          Roles: [{ Ref: roleOf(listPets.fn) }],
          PolicyName: "secrets-and-keys",
          PolicyDocument: {
            Version: "2012-10-17",
            Statement: [{ Effect: "Allow", Action: ["secretsmanager:GetSecretValue", "kms:Decrypt"], Resource: "*" }],
          },
        },
      };
      names = { getPetRole: roleOf(getPet.fn), createPetRole: roleOf(createPet.fn), listPetsRole: roleOf(listPets.fn) };
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    const blocks = (pattern: RegExp) => failures.filter((candidate) => pattern.test(candidate));

    const admin = blocks(/allowed by: AWS managed policy AdministratorAccess statement 1/);
    expect(admin).toHaveLength(1);
    expect(admin[0]).toMatch(new RegExp(`${names.getPetRole}.*\\n\\s+allowed by.*\\n\\s+requests \\(\\d{4,}\\)`));
    const rolePolicy = blocks(/allowed by: BrokenRolePolicy statement 1: .*"Action":"dynamodb:\*","Resource":"\*"/);
    expect(rolePolicy).toHaveLength(1);
    expect(rolePolicy[0]).toMatch(new RegExp(names.createPetRole as string));
    const policy = blocks(/allowed by: BrokenPolicy statement 1: .*secretsmanager:GetSecretValue","kms:Decrypt"/);
    expect(policy).toHaveLength(1);
    expect(policy[0]).toMatch(/secretsmanager:GetSecretValue on arn:aws:secretsmanager:/);
  });

  it("fails a bundle edited to issue an extra DeleteItem: granted and in a row that says no scenario makes it, or not granted at all", async () => {
    let createPet = "";
    /** The staging create function's bundle, with a raw DeleteItem at init signed with its own credentials as the SDK would. */
    const withDeleteItem = (pk: string) =>
      brokenAssembly((template, stack) => {
        const operationOf = operation(template, "createPet");
        createPet = operationOf.functionId;
        const asset = stack.assets.get(String((operationOf.fn.Code as { S3Key: unknown }).S3Key)) as string;
        const entry = join(asset, "index.mjs");
        const deleteItem = `await fetch(process.env.AWS_ENDPOINT_URL_DYNAMODB, { method: "POST", headers: { "content-type": "application/x-amz-json-1.0", "x-amz-target": "DynamoDB_20120810.DeleteItem", authorization: \`AWS4-HMAC-SHA256 Credential=\${process.env.AWS_ACCESS_KEY_ID}/20260101/\${process.env.AWS_REGION}/dynamodb/aws4_request, SignedHeaders=host, Signature=0\` }, body: JSON.stringify({ TableName: process.env.PETS_TABLE_NAME, Key: { pk: { S: ${JSON.stringify(pk)} }, sk: { S: "0000000000000001" } } }) });\n`;
        writeFileSync(entry, `${deleteItem}${readFileSync(entry, "utf8")}`);
      });
    const granted = await rehearseAssembly(withDeleteItem("IDEMPOTENCY#key_edited"), { only: /^Staging/ });
    expect(granted.failures.join("\n")).toMatch(
      /CreatePetRole.* may dynamodb:DeleteItem .* says "unexercised: the scenario's creates do not fail between the claim and the pet", yet CreatePet\w+ made dynamodb:DeleteItem/,
    );
    const notGranted = await rehearseAssembly(withDeleteItem("PET"), { only: /^Staging/ });
    expect(notGranted.failures.join("\n")).toMatch(
      new RegExp(
        `${createPet} would be denied dynamodb:DeleteItem on \\S+ with \\{"dynamodb:LeadingKeys":\\["PET"\\]\\}`,
      ),
    );
  });

  it("fails on a row that nothing exercises and that says not why, naming it", async () => {
    const matrix = accessMatrix.map((row) =>
      row.actions.includes("dynamodb:DeleteItem") ? { ...row, unexercised: undefined } : row,
    );
    const report = await rehearseAssembly(assemblies.get("one-account") as string, { matrix });
    const stale = report.failures.filter((failure) =>
      failure.includes("no rehearsed call exercised dynamodb:DeleteItem"),
    );
    // Once per stage, each naming the row and what to do.
    expect(stale).toHaveLength(2);
    expect(stale[0]).toMatch(
      /CreatePetRole.* may dynamodb:DeleteItem .* in partitions IDEMPOTENCY#\*.*is stale \(remove it and its grant\) or says why with unexercised/,
    );
  });
});

describe("every policy AWS evaluates applies to the functions' own calls, when they are made", () => {
  it("answers a call a table or secret resource policy denies with AWS's AccessDeniedException, and names what the client saw", async () => {
    let getPetRole = "";
    const copy = brokenAssembly(
      (template) => {
        getPetRole = roleOf(operation(template, "getPet").fn);
        const [secretId] = resourcesOf(template, "AWS::SecretsManager::Secret")[0] ?? [];
        template.Resources.BrokenSecretPolicy = {
          Type: "AWS::SecretsManager::ResourcePolicy",
          Properties: {
            SecretId: { Ref: secretId },
            ResourcePolicy: {
              Version: "2012-10-17",
              Statement: [{ Effect: "Deny", Principal: "*", Action: "secretsmanager:GetSecretValue", Resource: "*" }],
            },
          },
        };
      },
      (data) => {
        const [, table] =
          resourcesOf(data, "AWS::DynamoDB::Table")[0] ?? resourcesOf(data, "AWS::DynamoDB::GlobalTable")[0] ?? [];
        const properties = (table?.Properties ?? {}) as Record<string, unknown>;
        const policy = {
          PolicyDocument: {
            Version: "2012-10-17",
            Statement: [
              {
                Effect: "Deny",
                Principal: "*",
                Action: "dynamodb:GetItem",
                Resource: "*",
              },
            ],
          },
        };
        const [replica] = Array.isArray(properties.Replicas) ? (properties.Replicas as Record<string, unknown>[]) : [];
        if (replica) replica.ResourcePolicy = policy;
        else properties.ResourcePolicy = policy;
      },
    );
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    const failure = (pattern: RegExp) => failures.find((candidate) => pattern.test(candidate)) ?? failures.join("\n");
    expect(failure(/GetPet\w+ would be denied dynamodb:GetItem/)).toMatch(
      /AccessDeniedException: User: arn:aws:sts::111111111111:assumed-role\/[^ ]+ is not authorized to perform: dynamodb:GetItem on resource: \S+ with an explicit deny in a resource-based policy\n\s+why: explicitly denied by \w+ table resource policy statement 1[\s\S]*what its caller saw: .*HTTP 500/,
    );
    expect(failure(/SyntheticCheckCheck\w+ would be denied secretsmanager:GetSecretValue/)).toMatch(
      /secret resource policy[\s\S]*scenario steps: the scheduler's run of/,
    );
    expect(getPetRole).not.toBe("");
  });
});

describe("every policy AWS evaluates applies to the services' calls", () => {
  it("refuses API Gateway's invocation without the function's permission when it is made (the client sees a 500), and reports a topic policy that denies the alarms", async () => {
    let listPets = "";
    const copy = brokenAssembly((template) => {
      const [permission] =
        resourcesOf(template, "AWS::Lambda::Permission").find(([, candidate]) =>
          JSON.stringify(candidate.Properties?.FunctionName).includes("ListPets"),
        ) ?? [];
      delete template.Resources[permission as string];
      listPets = operation(template, "listPets").functionId;
      const [, topicPolicy] =
        resourcesOf(template, "AWS::SNS::TopicPolicy").find(([id]) => id.startsWith("MonitoringAlarmTopic")) ?? [];
      const document = topicPolicy?.Properties?.PolicyDocument as { Statement: Record<string, unknown>[] };
      document.Statement.push({
        Effect: "Deny",
        Principal: { Service: "cloudwatch.amazonaws.com" },
        Action: "sns:Publish",
        Resource: "*",
      });
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    const failure = (pattern: RegExp) => failures.find((candidate) => pattern.test(candidate)) ?? failures.join("\n");

    expect(failure(/apigateway\.amazonaws\.com would be denied lambda:InvokeFunction on \S+ListPets/)).toMatch(
      /because no resource-based policy allows the lambda:InvokeFunction action[\s\S]*scenario steps: GET \/v1\/pets[\s\S]*what its caller saw: .*HTTP 500/,
    );
    expect(failure(/access matrix row denied: .*cloudwatch\.amazonaws\.com may sns:Publish/)).toMatch(
      /explicitly denied by MonitoringAlarmTopic\w+ topic policy statement \d+: .*"Effect":"Deny"/,
    );
    // The missing permission is one root cause: no second block from the static check, and the
    // function it stopped is not blamed for calls it never got to make.
    expect(failures.filter((candidate) => /apigateway\.amazonaws\.com .*ListPets/.test(candidate))).toHaveLength(1);
    expect(failures.join("\n")).not.toMatch(
      new RegExp(`function ${listPets} was never invoked|from ${listPets}, which it exists`),
    );
  });
});

describe("nothing in the assembly is optional", () => {
  it("drives a schedule whose target is qualified with $LATEST, and fails on one that names no function", async () => {
    const latest = brokenAssembly((template) => {
      const [, schedule] = resourcesOf(template, "AWS::Scheduler::Schedule")[0] ?? [];
      const target = schedule?.Properties?.Target as { Arn: unknown };
      target.Arn = { "Fn::Join": ["", [target.Arn, ":$LATEST"]] };
    });
    const passed = await rehearseAssembly(latest, { only: /^Staging/ });
    // Lambda runs $LATEST for the qualified ARN: the check is driven and passes. What remains is
    // least privilege: the scheduler's grant on the unqualified ARN is no longer used.
    expect(passed.stages[0]?.scenario.find((check) => /the scheduled run passes/.test(check.name))?.ok).toBe(true);
    expect(passed.failures.length).toBeGreaterThan(0);
    for (const failure of passed.failures) expect(failure).toMatch(/SchedulerRole/);

    const nowhere = brokenAssembly((template) => {
      const [, schedule] = resourcesOf(template, "AWS::Scheduler::Schedule")[0] ?? [];
      (schedule?.Properties?.Target as { Arn: unknown }).Arn = "arn:aws:lambda:eu-west-1:111111111111:function:gone";
    });
    const { failures } = await rehearseAssembly(nowhere, { only: /^Staging/ });
    expect(failures.join("\n")).toMatch(
      /its target is a function of the stage failed: arn:aws:lambda:eu-west-1:111111111111:function:gone is no function/,
    );
    expect(failures.join("\n")).toMatch(/not rehearsed: function SyntheticCheckCheck\w+ was never invoked/);
  });

  it("fails an empty assembly and an unpinned one, saying why", async () => {
    const empty = mkdtempSync(join(tmpdir(), "rehearsal-empty-"));
    made.push(empty);
    const { version } = JSON.parse(
      readFileSync(join(assemblies.get("one-account") as string, "manifest.json"), "utf8"),
    );
    writeFileSync(join(empty, "manifest.json"), JSON.stringify({ version, artifacts: {} }));
    const report = await rehearseAssembly(empty);
    expect(report.failures.join("\n")).toMatch(/holds no stage stack .* nothing to rehearse/);
    expect(summaryLine([report])).toMatch(/; [1-9]\d* failures$/);

    const unpinned = brokenAssembly(() => undefined);
    const manifestFile = join(unpinned, "assembly-Staging", "manifest.json");
    writeFileSync(
      manifestFile,
      readFileSync(manifestFile, "utf8").replaceAll(
        "aws://111111111111/eu-west-1",
        "aws://unknown-account/unknown-region",
      ),
    );
    const { failures } = await rehearseAssembly(unpinned, { only: /^Nothing/ });
    expect(failures.join("\n")).toMatch(
      /Staging\/PetStore is not pinned to an account and region \(aws:\/\/unknown-account\/unknown-region\)/,
    );
    // Its ARNs cannot be known, so the matrix is not proven on made-up ones: one cause, its blocks only.
    expect(failures.every((failure) => /is not pinned to an account and region/.test(failure))).toBe(true);

    const partial = brokenAssembly(() => undefined);
    const rootManifest = JSON.parse(readFileSync(join(partial, "manifest.json"), "utf8"));
    for (const id of Object.keys(rootManifest.artifacts)) if (/Production/.test(id)) delete rootManifest.artifacts[id];
    writeFileSync(join(partial, "manifest.json"), JSON.stringify(rootManifest));
    const partialReport = await rehearseAssembly(partial, { only: /^Nothing/ });
    expect(partialReport.failures.join("\n")).toMatch(
      /has no stack of the Production stage \(Production-PetStore\): it is partial/,
    );
  });
});

describe("the stand-ins are as strict as AWS", () => {
  it("times out a handler that sleeps past its Timeout, refuses a callback handler as Node 24 does, and refuses a call signed for another region", async () => {
    let names: Record<string, string> = {};
    const copy = brokenAssembly((template, stack) => {
      const getPet = operation(template, "getPet");
      const listPets = operation(template, "listPets");
      const assetOf = (fn: Record<string, unknown>) =>
        stack.assets.get(String(((fn.Code as { S3Key: unknown }).S3Key as string) ?? "")) as string;
      mkdirSync(assetOf(getPet.fn), { recursive: true });
      writeFileSync(
        join(assetOf(getPet.fn), "sleepy.mjs"),
        "export const handler = async () => new Promise((resolve) => setTimeout(resolve, 5000));\n",
      );
      getPet.fn.Handler = "sleepy.handler";
      getPet.fn.Timeout = 1;
      writeFileSync(
        join(assetOf(listPets.fn), "callback.js"),
        "exports.handler = (event, context, callback) => callback(null, { statusCode: 200, body: '[]' });\n",
      );
      listPets.fn.Handler = "callback.handler";
      // Code that signs its calls for another region than the stage's.
      const createPet = operation(template, "createPet");
      const entry = join(assetOf(createPet.fn), "index.mjs");
      writeFileSync(entry, `process.env.AWS_REGION = "us-east-1";\n${readFileSync(entry, "utf8")}`);
      names = { getPet: getPet.functionId, listPets: listPets.functionId, createPet: createPet.functionId };
    });
    const { failures } = await rehearseAssembly(copy, { only: /^Staging/ });
    const all = failures.join("\n");
    expect(all).toMatch(
      new RegExp(
        `${names.listPets}: starts \\(init\\) failed: Runtime\\.CallbackHandlerDeprecated: ERROR: AWS Lambda has removed support for callback-based function handlers`,
      ),
    );
    expect(all).toMatch(/get \(deprecated\): 200 .* failed: HTTP 502/);
    expect(all).toMatch(
      new RegExp(
        `${names.getPet} failed with Sandbox\\.Timedout: RequestId: \\S+ Error: Task timed out after 1\\.00 seconds`,
      ),
    );
    // The timeout is reported once, as itself, with what its callers saw; the role of the function
    // it stopped is not blamed for rows it never got to exercise.
    expect(failures.filter((failure) => failure.includes(`${names.getPet} failed with Sandbox.Timedout`))).toHaveLength(
      1,
    );
    expect(failures.find((failure) => failure.includes(`${names.getPet} failed with Sandbox.Timedout`))).toMatch(
      /not an IAM finding[\s\S]*what its caller saw: .*HTTP 502/,
    );
    expect(all).not.toMatch(/no rehearsed call exercised .*GetPetRole/);
    expect(all).toMatch(
      new RegExp(`${names.createPet} called dynamodb:\\w+ in us-east-1, but the stage is in eu-west-1`),
    );
  });
});

describe("npm run rehearse", () => {
  it("answers a missing assembly directory with one readable line and exit 2", () => {
    const result = spawnSync(
      `${projectRoot}node_modules/.bin/tsx`,
      ["scripts/rehearse/main.ts", "--assembly", "/nonexistent/cdk.out"],
      {
        cwd: projectRoot,
        encoding: "utf8",
      },
    );
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^rehearse: \/nonexistent\/cdk\.out does not exist/),
    ]);
  });

  it("prints a last line that sums the rehearsal up", () => {
    const line = summaryLine([...reports.values()]);
    expect(line).toMatch(
      /^rehearsal: \d+ calls from 20 functions and 12 service principals allowed; \d+ must-deny denied; \d+ matrix rows, \d+ principals, \d+ requests evaluated; 0 failures$/,
    );
    expect(readFileSync(join(projectRoot, "package.json"), "utf8")).toContain(
      '"rehearse": "node scripts/requireNode.mjs && tsx scripts/rehearse/main.ts"',
    );
  });
});
