/**
 * The access matrix proof (scripts/rehearse/proof.ts) on the synthesized two-account assembly,
 * then on copies of its templates broken by hand, one way each, in the classes an audit found the
 * rehearsal blind to: conditions and partitions, principals beyond the stage's roles, wildcards that
 * cover a used resource, widenings an allowance used to hide, and a report that named the wrong thing.
 * Each broken copy must fail with its cause named.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AccessRow, accessMatrix } from "../../scripts/rehearse/accessMatrix";
import { type AssemblyStack, type CfnTemplate, readAssembly, resourcesOf } from "../../scripts/rehearse/assembly";
import { OTHER_ACCOUNT, rehearsalConfigurations } from "../../scripts/rehearse/configurations";
import type { Decision } from "../../scripts/rehearse/iam";
import { principalOf } from "../../scripts/rehearse/iam";
import { checkCalls, type ProofResult, proveMatrix } from "../../scripts/rehearse/proof";
import { failureBlocks } from "../../scripts/rehearse/report";
import { synthesizeAll } from "../../scripts/rehearse/synth";

let directories = new Map<string, string>();
let stacks: AssemblyStack[] = [];
let committed: ProofResult;

beforeAll(async () => {
  directories = synthesizeAll(rehearsalConfigurations.filter((configuration) => configuration.name === "two-accounts"));
  stacks = readAssembly(directories.get("two-accounts") as string);
  committed = await proveMatrix(stacks);
}, 300_000);

afterAll(() => {
  for (const directory of directories.values()) rmSync(directory, { recursive: true, force: true });
});

type Resources = CfnTemplate["Resources"];
/** Staging's service stack (the one with functions) and its data stack, as copies `edit` may change. */
async function proveBroken(edit: (service: Resources, data: Resources) => void, matrix?: readonly AccessRow[]) {
  const copies = stacks.map((stack) => ({ ...stack, template: structuredClone(stack.template) }));
  const staging = copies.filter((stack) => stack.displayName.startsWith("Staging/"));
  const service = staging.find((stack) => resourcesOf(stack.template, "AWS::Lambda::Function").length) as AssemblyStack;
  const data = staging.find((stack) => stack !== service) as AssemblyStack;
  edit(service.template.Resources, data.template.Resources);
  const proof = await proveMatrix(copies, matrix);
  const allowed = proof.outside.map(
    (decision) =>
      `${principalOf(decision)} ${decision.request.action} ${decision.request.resource} ${JSON.stringify(decision.request.context)}`,
  );
  return { proof, allowed, failures: failureBlocks([], [], proof, [], []) };
}

/** The logical id of the resource whose construct path ends so (`ListPetsRole`), in Staging's stacks. */
const idOf = (pathEnd: string): string => {
  for (const stack of stacks.filter((candidate) => candidate.displayName.startsWith("Staging/"))) {
    for (const [logicalId, path] of stack.constructPaths) if (path.endsWith(`/${pathEnd}/Resource`)) return logicalId;
  }
  throw new Error(`no construct ${pathEnd}`);
};
/** The ARN of a Staging role by construct path end, as the proof names it. */
const roleArn = (pathEnd: string): string => {
  const bound = committed.rows.find(
    (row) => row.scope === "Staging" && "role" in row.row.principal && row.row.principal.role.endsWith(pathEnd),
  );
  return bound?.principal as string;
};
type Statement = Record<string, unknown>;
/** A policy document property (`AssumeRolePolicyDocument`, `KeyPolicy`…) of a Staging resource, by construct path end. */
const documentOf = (resources: Resources, pathEnd: string, property: string) =>
  resources[idOf(pathEnd)]?.Properties?.[property] as { Statement: Statement[] };
const statementsOf = (resources: Resources, role: string): Statement[] => {
  const [, policy] = resourcesOf({ Resources: resources }, "AWS::IAM::Policy").find(([, candidate]) =>
    JSON.stringify(candidate.Properties?.Roles).includes(`"${idOf(role)}"`),
  ) as unknown as [string, { Properties: { PolicyDocument: { Statement: Statement[] } } }];
  return policy.Properties.PolicyDocument.Statement;
};
const TABLE = "arn:aws:dynamodb:eu-west-1:111111111111:table/petstore-staging";
const policyOf = (...statements: Statement[]) => ({ Version: "2012-10-17", Statement: statements });
/** The one failure block naming the pattern; the whole list when none does. */
const blockNaming = (failures: string[], pattern: RegExp) =>
  failures.filter((failure) => pattern.test(failure)).length === 1
    ? (failures.find((failure) => pattern.test(failure)) as string)
    : failures.join("\n---\n");

describe("the committed templates", () => {
  it("allow exactly the access matrix: nothing outside its rows, no row denied, every function on its own role", () => {
    expect(committed.problems).toEqual([]);
    expect(
      committed.outside.map(
        (decision) => `${decision.principal} ${decision.request.action} ${decision.request.resource}`,
      ),
    ).toEqual([]);
    expect(committed.deniedRows).toEqual([]);
    // Both stages' rows and the account stacks', over the roles, the named services, the account roots, an outsider and an anonymous caller.
    expect(committed.rows.length).toBe(
      2 * accessMatrix.filter((row) => !JSON.stringify(row).includes("PetStore-Account/")).length + 2 * 2,
    );
    expect(committed.principals).toBeGreaterThanOrEqual(20);
    expect(committed.evaluated).toBeGreaterThan(2_000);
  });
});

describe("conditions and partitions are judged", () => {
  it("fails a Query statement whose LeadingKeys condition is removed, naming the role, statement and the APIKEY partition", async () => {
    const { failures } = await proveBroken((service) => {
      const query = statementsOf(service, "ListPetsRole").find(
        (statement) =>
          statement.Action === "dynamodb:Query" && String(JSON.stringify(statement.Condition)).includes('"PET"'),
      ) as Statement;
      delete query.Condition;
    });
    expect(blockNaming(failures, /ListPetsRole.* allowed what no row/)).toMatch(
      /ListPetsRoleDefaultPolicy\w+ statement \d+: \{"Effect":"Allow","Action":"dynamodb:Query".*dynamodb:Query on .*table\/petstore-staging with \{"dynamodb:LeadingKeys":\["APIKEY"\]\}/s,
    );
  });

  it("fails a customer managed policy granting GetItem on the whole table", async () => {
    const { failures } = await proveBroken((service) => {
      service.WholeTable = {
        Type: "AWS::IAM::ManagedPolicy",
        Properties: {
          Roles: [{ Ref: idOf("GetPetRole") }],
          PolicyDocument: policyOf({ Effect: "Allow", Action: "dynamodb:GetItem", Resource: TABLE }),
        },
      };
    });
    expect(blockNaming(failures, /WholeTable \(customer managed\)/)).toMatch(/GetPetRole.*LeadingKeys":\["COUNTER"\]/s);
  });

  it("fails a partition-scoped dynamodb:* (ForAllValues holds for a Scan, which names no partition)", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      statementsOf(service, "GetPetRole").push({
        Effect: "Allow",
        Action: "dynamodb:*",
        Resource: TABLE,
        Condition: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": ["PET"] } },
      });
    });
    expect(blockNaming(failures, /"Action":"dynamodb:\*"/)).toMatch(/GetPetRole.*ForAllValues/s);
    expect(allowed).toContain(`${roleArn("GetPetRole")} dynamodb:Scan ${TABLE} {}`);
    expect(allowed).toContain(`${roleArn("GetPetRole")} dynamodb:DeleteItem ${TABLE} {"dynamodb:LeadingKeys":["PET"]}`);
  });

  it("fails two functions sharing one role", async () => {
    const { failures } = await proveBroken((service) => {
      (service[idOf("GetPetFunction")]?.Properties as Statement).Role = { "Fn::GetAtt": [idOf("ListPetsRole"), "Arn"] };
    });
    expect(blockNaming(failures, /function PetStore\/GetPetFunction runs with/)).toMatch(
      /ListPetsRole.*not its own role PetStore\/GetPetRole/,
    );
  });
});

describe("every principal AWS would evaluate is asked", () => {
  it("fails a trust policy that adds the account root", async () => {
    const { failures } = await proveBroken((service) => {
      const trust = documentOf(service, "GetPetRole", "AssumeRolePolicyDocument");
      trust.Statement.push({
        Effect: "Allow",
        Principal: { AWS: "arn:aws:iam::111111111111:root" },
        Action: "sts:AssumeRole",
      });
    });
    expect(blockNaming(failures, /arn:aws:iam::111111111111:root is allowed/)).toMatch(
      /sts:AssumeRole on .*GetPetRole/s,
    );
  });

  it("fails a trust policy open to every principal of the account, which no role of the assembly needs to be", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      const trust = documentOf(service, "GetPetRole", "AssumeRolePolicyDocument");
      trust.Statement.push({
        Effect: "Allow",
        Principal: { AWS: "*" },
        Action: "sts:AssumeRole",
        Condition: { StringEquals: { "aws:PrincipalAccount": "111111111111" } },
      });
    });
    expect(allowed.some((line) => /^arn:aws:iam::111111111111:root sts:AssumeRole \S+GetPetRole/.test(line))).toBe(
      true,
    );
    expect(allowed.some((line) => line.startsWith(`arn:aws:iam::${OTHER_ACCOUNT}:root `))).toBe(false);
    expect(blockNaming(failures, /"aws:PrincipalAccount":"111111111111"/)).toMatch(/GetPetRole/);
  });

  it("fails topic, key and table policies that grant another account", async () => {
    const { failures, allowed } = await proveBroken((service, data) => {
      const topicPolicy = documentOf(service, "Monitoring/AlarmTopic/Policy", "PolicyDocument");
      topicPolicy.Statement.push({
        Effect: "Allow",
        Principal: { AWS: OTHER_ACCOUNT },
        Action: "sns:Publish",
        Resource: "*",
      });
      const keyPolicy = documentOf(service, "Logs/Key", "KeyPolicy");
      keyPolicy.Statement.push({
        Effect: "Allow",
        Principal: { AWS: `arn:aws:iam::${OTHER_ACCOUNT}:root` },
        Action: "kms:Decrypt",
        Resource: "*",
      });
      const table = data[idOf("Table")]?.Properties as { Replicas: Statement[] };
      (table.Replicas[0] as Statement).ResourcePolicy = {
        PolicyDocument: policyOf({
          Effect: "Allow",
          Principal: { AWS: OTHER_ACCOUNT },
          Action: "dynamodb:GetItem",
          Resource: "*",
        }),
      };
    });
    const root = `arn:aws:iam::${OTHER_ACCOUNT}:root`;
    expect(
      allowed.filter((line) => line.startsWith(`${root} sns:Publish arn:aws:sns:eu-west-1:111111111111:`)),
    ).not.toEqual([]);
    expect(
      allowed.filter((line) => line.startsWith(`${root} kms:Decrypt arn:aws:kms:eu-west-1:111111111111:key/`)),
    ).not.toEqual([]);
    expect(allowed).toContain(`${root} dynamodb:GetItem ${TABLE} {"dynamodb:LeadingKeys":["APIKEY"]}`);
    // One block for each policy, naming its statement.
    expect(failures.filter((failure) => failure.includes(root))).toHaveLength(3);
    expect(blockNaming(failures, /table resource policy statement 1/)).toMatch(new RegExp(root));
  });

  it("fails a Lambda permission for another account's root on the live alias, and a public function URL", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      service.OtherAccountInvoke = {
        Type: "AWS::Lambda::Permission",
        Properties: {
          Action: "lambda:InvokeFunction",
          FunctionName: { Ref: idOf("GetPetFunction/Aliaslive") },
          Principal: `arn:aws:iam::${OTHER_ACCOUNT}:root`,
        },
      };
      service.PublicUrl = {
        Type: "AWS::Lambda::Url",
        Properties: { AuthType: "NONE", TargetFunctionArn: { "Fn::GetAtt": [idOf("ListPetsFunction"), "Arn"] } },
      };
      service.PublicUrlPermission = {
        Type: "AWS::Lambda::Permission",
        Properties: {
          Action: "lambda:InvokeFunctionUrl",
          FunctionName: { "Fn::GetAtt": [idOf("ListPetsFunction"), "Arn"] },
          Principal: "*",
          FunctionUrlAuthType: "NONE",
        },
      };
    });
    expect(blockNaming(failures, /Sid OtherAccountInvoke/)).toMatch(new RegExp(`arn:aws:iam::${OTHER_ACCOUNT}:root`));
    expect(blockNaming(failures, /Sid PublicUrlPermission/)).toMatch(/anonymous/);
    expect(
      allowed.some((line) =>
        new RegExp(`^arn:aws:iam::${OTHER_ACCOUNT}:root lambda:InvokeFunction \\S+GetPetFunction\\S+:live `).test(line),
      ),
    ).toBe(true);
    expect(
      allowed.some((line) =>
        /^anonymous lambda:InvokeFunctionUrl \S+ListPetsFunction\S+ \{"lambda:FunctionUrlAuthType":"NONE"\}$/.test(
          line,
        ),
      ),
    ).toBe(true);
  });

  it("reads IAM users and groups, and their policies", async () => {
    const { failures } = await proveBroken((service) => {
      service.Operators = {
        Type: "AWS::IAM::Group",
        Properties: {
          Policies: [
            {
              PolicyName: "read-keys",
              PolicyDocument: policyOf({ Effect: "Allow", Action: "secretsmanager:GetSecretValue", Resource: "*" }),
            },
          ],
        },
      };
      service.Operator = { Type: "AWS::IAM::User", Properties: { Groups: [{ Ref: "Operators" }] } };
      service.Deployer = {
        Type: "AWS::IAM::User",
        Properties: {
          Policies: [
            {
              PolicyName: "tables",
              PolicyDocument: policyOf({ Effect: "Allow", Action: "dynamodb:DeleteTable", Resource: TABLE }),
            },
          ],
        },
      };
    });
    expect(blockNaming(failures, /Operators inline policy read-keys/)).toMatch(
      /:user\/Staging-PetStore-Operator-\w+, .*:user\/member-of-Staging-PetStore-Operators/,
    );
    expect(blockNaming(failures, /Deployer inline policy tables/)).toMatch(
      /dynamodb:DeleteTable on .*petstore-staging/,
    );
  });
});

describe("ways the audit did not name", () => {
  it("fails an API Gateway permission without its SourceArn: another API of the account could invoke the alias", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      const [, permission] = resourcesOf({ Resources: service }, "AWS::Lambda::Permission").find(([, candidate]) =>
        JSON.stringify(candidate.Properties?.FunctionName).includes(idOf("ListPetsFunction/Aliaslive")),
      ) as [string, { Properties: Statement }];
      delete permission.Properties.SourceArn;
    });
    expect(
      allowed.some((line) =>
        /^apigateway\.amazonaws\.com lambda:InvokeFunction \S+ListPets\S+:live \{"aws:SourceArn":"arn:aws:execute-api:eu-west-1:111111111111:other\//.test(
          line,
        ),
      ),
    ).toBe(true);
    expect(blockNaming(failures, /apigateway\.amazonaws\.com is allowed/)).toMatch(/Lambda permissions of \S+ListPets/);
  });

  it("fails a scheduler trust policy without its SourceAccount condition (the confused deputy)", async () => {
    const { allowed } = await proveBroken((service) => {
      const trust = documentOf(service, "SyntheticCheck/SchedulerRole", "AssumeRolePolicyDocument");
      delete (trust.Statement[0] as Statement).Condition;
    });
    expect(
      allowed.filter((line) => /^scheduler\.amazonaws\.com sts:AssumeRole \S+SchedulerRole\S+ \{\}$/.test(line)),
    ).toHaveLength(1);
    expect(allowed.some((line) => line.includes('"aws:SourceAccount":"333333333333"'))).toBe(true);
  });

  it("fails a federated principal in a trust policy, and a secret policy for another account", async () => {
    const { failures } = await proveBroken((service) => {
      const trust = documentOf(service, "SyntheticCheck/CheckFunctionRole", "AssumeRolePolicyDocument");
      trust.Statement.push({
        Effect: "Allow",
        Principal: { Federated: "arn:aws:iam::111111111111:oidc-provider/token.actions.githubusercontent.com" },
        Action: "sts:AssumeRoleWithWebIdentity",
      });
      service.SharedSecret = {
        Type: "AWS::SecretsManager::ResourcePolicy",
        Properties: {
          SecretId: { Ref: idOf("SyntheticCheck/ApiKey") },
          ResourcePolicy: policyOf({
            Effect: "Allow",
            Principal: { AWS: OTHER_ACCOUNT },
            Action: "secretsmanager:GetSecretValue",
            Resource: "*",
          }),
        },
      };
    });
    expect(blockNaming(failures, /oidc-provider\/token\.actions\.githubusercontent\.com is allowed/)).toMatch(
      /sts:AssumeRoleWithWebIdentity on \S+CheckFunctionRole/,
    );
    expect(blockNaming(failures, /SharedSecret secret resource policy/)).toMatch(
      /secretsmanager:GetSecretValue on \S+:secret:SyntheticCheckApiKey/,
    );
  });

  it("fails a key policy opening the key to every principal of the account (kms:CallerAccount, which KMS always sends)", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      const keyPolicy = documentOf(service, "Logs/Key", "KeyPolicy");
      keyPolicy.Statement.push({
        Effect: "Allow",
        Principal: { AWS: "*" },
        Action: "kms:Decrypt",
        Resource: "*",
        Condition: { StringEquals: { "kms:CallerAccount": "111111111111" } },
      });
    });
    expect(allowed.some((line) => line.startsWith(`${roleArn("ListPetsRole")} kms:Decrypt arn:aws:kms:`))).toBe(true);
    expect(allowed.some((line) => line.startsWith("anonymous "))).toBe(false);
    expect(blockNaming(failures, /"kms:CallerAccount":"111111111111"/)).toMatch(/ListPetsRole/);
  });

  it("fails a bucket whose policy lets anyone read it", async () => {
    const { allowed } = await proveBroken((service) => {
      service.Exports = { Type: "AWS::S3::Bucket", Properties: {} };
      service.ExportsPolicy = {
        Type: "AWS::S3::BucketPolicy",
        Properties: {
          Bucket: { Ref: "Exports" },
          PolicyDocument: policyOf({ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: "*" }),
        },
      };
    });
    expect(allowed.some((line) => /^anonymous s3:GetObject arn:aws:s3:::\S+Exports\S*\/rehearsal /.test(line))).toBe(
      true,
    );
  });

  it("fails a NotResource statement, which grants everything but what it names", async () => {
    const { failures } = await proveBroken((service) => {
      statementsOf(service, "GetPetRole").push({
        Effect: "Allow",
        Action: "dynamodb:GetItem",
        NotResource: `${TABLE}-archive`,
      });
    });
    expect(blockNaming(failures, /"NotResource":/)).toMatch(/GetPetRole[\s\S]*dynamodb:GetItem on/);
  });
});

describe("a wildcard that covers a used resource is still a widening", () => {
  it.each([
    [
      "secret:*",
      "SyntheticCheck/CheckFunctionRole",
      "secretsmanager:GetSecretValue",
      "arn:aws:secretsmanager:eu-west-1:111111111111:secret:*",
      / \S+:secret:SyntheticCheckApiKey\w+-\w+-other /,
    ],
    [
      "table/petstore-*",
      "GetPetRole",
      "dynamodb:Query",
      "arn:aws:dynamodb:eu-west-1:111111111111:table/petstore-*",
      / \S+:table\/petstore-staging-other /,
    ],
    [
      "function:*",
      "Rollout/ServiceRole",
      "lambda:UpdateAlias",
      "arn:aws:lambda:eu-west-1:111111111111:function:*",
      / \S+:function:Staging-PetStore-ListPets\S+-other /,
    ],
    [
      "every alias",
      "SyntheticCheck/SchedulerRole",
      "lambda:InvokeFunction",
      "arn:aws:lambda:eu-west-1:111111111111:function:*:*",
      / \S+:function:Staging-PetStore-ListPets\w+-\w+:live /,
    ],
  ])("fails %s granted to %s", async (_, role, action, resource, standIn) => {
    const { failures, allowed } = await proveBroken((service) => {
      statementsOf(service, role).push({ Effect: "Allow", Action: action, Resource: resource });
    });
    expect(blockNaming(failures, new RegExp(`"Resource":"${resource.replaceAll("*", "\\*")}"`))).toMatch(
      new RegExp(role.split("/").at(-1) as string),
    );
    expect(allowed.filter((line) => line.startsWith(`${roleArn(role)} ${action} `) && standIn.test(line))).not.toEqual(
      [],
    );
  });
});

describe("no allowance hides a widening", () => {
  it("fails DeleteItem on every pet, though the matrix lets the create function delete its idempotency claims", async () => {
    const { failures } = await proveBroken((service) => {
      statementsOf(service, "CreatePetRole").push({
        Effect: "Allow",
        Action: "dynamodb:DeleteItem",
        Resource: TABLE,
        Condition: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": ["PET"] } },
      });
    });
    expect(blockNaming(failures, /"Action":"dynamodb:DeleteItem"/)).toMatch(/dynamodb:DeleteItem on .*"PET"/s);
  });

  it("fails a call the scenario made that no row covers, and a row nothing exercised", () => {
    const [listPets] = committed.rows.filter(
      (bound) => bound.row.actions.includes("dynamodb:Query") && bound.row.partitions,
    );
    const call = (action: string, keys: string[]): Decision => ({
      request: {
        caller: "ListPetsFunction",
        action,
        resource: listPets?.resources[0] as string,
        context: { "dynamodb:LeadingKeys": keys },
        because: "test",
        step: "GET /v1/pets",
      },
      principal: `arn:aws:sts::111111111111:assumed-role/${listPets?.principal.split("/").at(-1)}/ListPetsFunction`,
      allowed: true,
      result: "Allowed",
      allowedBy: [],
      explanation: "",
    });
    const rows = committed.rows.filter((bound) => bound === listPets);
    const { outside, stale } = checkCalls(rows, [call("dynamodb:DeleteItem", ["PET"])], new Set());
    expect(outside.map((decision) => decision.request.action)).toEqual(["dynamodb:DeleteItem"]);
    expect(stale.join("\n")).toMatch(
      /no rehearsed call exercised dynamodb:Query on .* in PET; dynamodb:Query on .* in SYNTHETIC_PET#\*/,
    );
    expect(
      checkCalls(rows, [call("dynamodb:Query", ["PET"]), call("dynamodb:Query", ["SYNTHETIC_PET#key_1"])], new Set())
        .stale,
    ).toEqual([]);
    // A principal that failed for another reason is not judged for what it did not exercise.
    expect(checkCalls(rows, [], new Set([listPets?.principal as string])).stale).toEqual([]);
    const unexercised = { ...listPets, row: { ...listPets?.row, unexercised: "a test says so" } } as typeof listPets &
      object;
    expect(checkCalls([unexercised], [call("dynamodb:Query", ["PET"])], new Set()).stale.join()).toMatch(
      /says "unexercised: a test says so", yet/,
    );
  });

  it("fails a row the templates deny, and a row naming a construct the assembly lacks", async () => {
    const { failures } = await proveBroken(
      (service) => {
        const statements = statementsOf(service, "GetPetRole");
        statements.splice(
          statements.findIndex((statement) => String(JSON.stringify(statement.Condition)).includes('"APIKEY"')),
          1,
        );
      },
      [
        ...accessMatrix,
        {
          principal: { role: "PetStore/NoSuchRole" },
          actions: ["s3:GetObject"],
          resources: ["*"],
          reason: "a test row",
        },
      ],
    );
    expect(blockNaming(failures, /access matrix row denied: Staging: .*GetPetRole.*dynamodb:GetItem/)).toMatch(
      /APIKEY.*ImplicitlyDenied/s,
    );
    // Once for each stage it is bound to.
    expect(failures.filter((failure) => failure.includes("names PetStore/NoSuchRole, which"))).toHaveLength(2);
  });
});

describe("the report names each root cause once, as written", () => {
  it("shows NotAction in the cause line, and gives AdministratorAccess one block however much it allows", async () => {
    const { failures, allowed } = await proveBroken((service) => {
      statementsOf(service, "GetPetRole").push({ Effect: "Allow", NotAction: "dynamodb:GetItem", Resource: TABLE });
      (service[idOf("ListPetsRole")]?.Properties as Statement).ManagedPolicyArns = [
        "arn:aws:iam::aws:policy/AdministratorAccess",
      ];
    });
    expect(blockNaming(failures, /"NotAction":"dynamodb:GetItem"/)).toMatch(/GetPetRole/);
    expect(allowed).toContain(`${roleArn("GetPetRole")} dynamodb:Scan ${TABLE} {}`);
    const admin = failures.filter((failure) => failure.includes("AWS managed policy AdministratorAccess"));
    expect(admin).toHaveLength(1);
    expect(admin[0]).toMatch(/requests \(\d{3,}\)/);
  });

  it("folds what the callers saw into the failure of a function that timed out, and judges none of its rows", () => {
    const steps = ["GET /v1/pets", "GET /v1/pets?status=available"];
    const stage = {
      stack: "Staging/PetStore",
      account: "111111111111",
      region: "eu-west-1",
      scenario: steps.map((step) => ({
        caller: "client",
        name: `${step} answers 200`,
        ok: false,
        detail: "503",
        steps: [step],
      })),
      calls: [],
      unmodelled: [],
      wrongRegion: [],
      functionErrors: [
        {
          caller: "ListPetsFunction",
          errorType: "Sandbox.Timedout",
          errorMessage: "Task timed out after 1.00 seconds",
          steps,
        },
      ],
      policyProblems: [],
      eventProblems: [],
      undriven: [],
    } as unknown as Parameters<typeof failureBlocks>[0][number];
    const blocks = failureBlocks([stage], [], undefined, [], []);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]).toMatch(
      /ListPetsFunction failed with Sandbox.Timedout.*not an IAM finding.*what its caller saw: client: GET \/v1\/pets answers 200 failed: 503/s,
    );
  });
});
