/**
 * The deploy rehearsal (scripts/rehearse): each configuration synthesized once, every stage's
 * uploaded artifacts run on Node 24 and driven as their AWS callers drive them, every AWS call
 * they make allowed by their role, every must-deny call denied, every service principal's call
 * allowed from the stage and denied from elsewhere. Then templates broken on purpose, one copy of
 * the cloud assembly each, to see the rehearsal name what broke.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { itemKeys, STATUS_INDEX } from "../../lib/db/table";
import { type AssemblyStack, type CfnTemplate, readAssembly, resourcesOf } from "../../scripts/rehearse/assembly";
import { rehearsalConfigurations } from "../../scripts/rehearse/configurations";
import { type RehearsalReport, rehearseAssembly } from "../../scripts/rehearse/rehearse";
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

  it("has each service principal allowed from the stage and denied from elsewhere", () => {
    for (const stage of report().stages) {
      const services = new Set(
        stage.services.map((entry) => entry.decision.request.caller.replace(/^logs\..*/, "logs")),
      );
      expect([...services].sort()).toEqual([
        "apigateway.amazonaws.com",
        "cloudwatch.amazonaws.com",
        "codedeploy.amazonaws.com",
        "logs",
        "scheduler.amazonaws.com",
      ]);
      expect(stage.services.filter((entry) => entry.expected === "deny").length).toBeGreaterThan(10);
    }
  });
});

/** A copy of the two-account assembly whose one stage template `edit` changes. */
function brokenAssembly(edit: (template: CfnTemplate, stack: AssemblyStack) => void): string {
  const copy = mkdtempSync(join(tmpdir(), "rehearsal-broken-"));
  made.push(copy);
  cpSync(assemblies.get("two-accounts") as string, copy, { recursive: true });
  // Staging's service stack: the one with functions (its table is in a data stack of its own).
  const stack = readAssembly(copy).find(
    (candidate) =>
      candidate.displayName.startsWith("Staging") &&
      resourcesOf(candidate.template, "AWS::Lambda::Function").length > 0,
  ) as AssemblyStack;
  edit(stack.template, stack);
  writeFileSync(stack.templateFile, JSON.stringify(stack.template));
  return copy;
}

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
      failures.find((failure) => /cloudwatch\.amazonaws\.com is denied kms:GenerateDataKey/.test(failure)),
    ).toMatch(
      /CloudWatch publishing to the encrypted Monitoring\w+Topic[0-9A-F]{8} and Monitoring\w+Topic[0-9A-F]{8}\)[\s\S]*aws:SourceAccount does not hold for "\(absent\)"/,
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
      /^rehearsal: \d+ calls from 20 functions and 20 service principals allowed; \d+ must-deny denied; 0 failures$/,
    );
    expect(readFileSync(join(projectRoot, "package.json"), "utf8")).toContain(
      '"rehearse": "node scripts/requireNode.mjs && tsx scripts/rehearse/main.ts"',
    );
  });
});
