/**
 * The service principals' checks of the deploy rehearsal (scripts/rehearse/servicePrincipals.ts) on
 * a small hand-made stage template: one function behind an alias that API Gateway invokes and a
 * schedule invokes, each with its role. The well-formed template passes; each broken one is reported
 * by the check that its break concerns, and by no other.
 */
import { describe, expect, it } from "vitest";
import type { CfnResource } from "../../scripts/rehearse/assembly";
import { OTHER_ACCOUNT } from "../../scripts/rehearse/configurations";
import { type ServicePrincipalStage, servicePrincipalChecks } from "../../scripts/rehearse/servicePrincipals";
import { handMadeResolver } from "../support/handMadeStack";

const trust = (principal: Record<string, unknown>, condition?: Record<string, unknown>) => ({
  Version: "2012-10-17",
  Statement: [
    { Effect: "Allow", Principal: principal, Action: "sts:AssumeRole", ...(condition ? { Condition: condition } : {}) },
  ],
});

/** The statements of a role's trust policy in the resources, to break. */
function trustStatements(resources: Record<string, CfnResource>, roleLogicalId: string) {
  const document = resources[roleLogicalId]?.Properties?.AssumeRolePolicyDocument as
    | { Statement: Record<string, unknown>[] }
    | undefined;
  if (!document) throw new Error(`no role ${roleLogicalId} with a trust policy`);
  return document.Statement;
}

/** The stage's resources, fresh for each test to break its own copy. */
function stageResources(): Record<string, CfnResource> {
  return {
    Api: { Type: "AWS::ApiGateway::RestApi", Properties: { Name: "pets" } },
    ApiStage: { Type: "AWS::ApiGateway::Stage", Properties: { RestApiId: { Ref: "Api" }, StageName: "v1" } },
    Pets: {
      Type: "AWS::ApiGateway::Resource",
      Properties: {
        RestApiId: { Ref: "Api" },
        ParentId: { "Fn::GetAtt": ["Api", "RootResourceId"] },
        PathPart: "pets",
      },
    },
    FnRole: {
      Type: "AWS::IAM::Role",
      Properties: { AssumeRolePolicyDocument: trust({ Service: "lambda.amazonaws.com" }) },
    },
    Fn: {
      Type: "AWS::Lambda::Function",
      Properties: { Role: { "Fn::GetAtt": ["FnRole", "Arn"] }, Handler: "index.handler", Runtime: "nodejs22.x" },
    },
    FnAlias: { Type: "AWS::Lambda::Alias", Properties: { FunctionName: { Ref: "Fn" }, Name: "live" } },
    GetPets: {
      Type: "AWS::ApiGateway::Method",
      Properties: {
        HttpMethod: "GET",
        RestApiId: { Ref: "Api" },
        ResourceId: { Ref: "Pets" },
        Integration: {
          Type: "AWS_PROXY",
          Uri: {
            "Fn::Join": [
              "",
              [
                "arn:aws:apigateway:",
                { Ref: "AWS::Region" },
                ":lambda:path/2015-03-31/functions/",
                { Ref: "FnAlias" },
                "/invocations",
              ],
            ],
          },
        },
      },
    },
    GetPetsPermission: {
      Type: "AWS::Lambda::Permission",
      Properties: {
        FunctionName: { Ref: "FnAlias" },
        Principal: "apigateway.amazonaws.com",
        Action: "lambda:InvokeFunction",
        SourceArn: {
          "Fn::Join": [
            "",
            [
              "arn:aws:execute-api:",
              { Ref: "AWS::Region" },
              ":",
              { Ref: "AWS::AccountId" },
              ":",
              { Ref: "Api" },
              "/v1/GET/pets",
            ],
          ],
        },
      },
    },
    SchedulerRole: {
      Type: "AWS::IAM::Role",
      Properties: {
        AssumeRolePolicyDocument: trust(
          { Service: "scheduler.amazonaws.com" },
          { StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } },
        ),
      },
    },
    SchedulerRolePolicy: {
      Type: "AWS::IAM::Policy",
      Properties: {
        PolicyName: "invoke",
        Roles: [{ Ref: "SchedulerRole" }],
        PolicyDocument: {
          Version: "2012-10-17",
          Statement: [{ Effect: "Allow", Action: "lambda:InvokeFunction", Resource: { "Fn::GetAtt": ["Fn", "Arn"] } }],
        },
      },
    },
    Schedule: {
      Type: "AWS::Scheduler::Schedule",
      Properties: {
        ScheduleExpression: "rate(5 minutes)",
        Target: { Arn: { "Fn::GetAtt": ["Fn", "Arn"] }, RoleArn: { "Fn::GetAtt": ["SchedulerRole", "Arn"] } },
      },
    },
  };
}

function stageOf(resources: Record<string, CfnResource>): ServicePrincipalStage {
  return { resolver: handMadeResolver(resources), functions: [{ logicalId: "Fn", roleLogicalId: "FnRole" }] };
}

/** Each expectation the template does not meet, as `<expected> <caller> <action>: <because>`. */
async function unmet(resources: Record<string, CfnResource>): Promise<string[]> {
  return (await servicePrincipalChecks(stageOf(resources)))
    .filter(({ decision, expected }) => decision.allowed !== (expected === "allow"))
    .map(
      ({ decision: { request }, expected }) => `${expected} ${request.caller} ${request.action}: ${request.because}`,
    );
}

describe("service principals' checks", () => {
  it("allow each service's call from the stage and deny it from elsewhere, on a well-formed stage", async () => {
    const expectations = await servicePrincipalChecks(stageOf(stageResources()));

    expect(await unmet(stageResources())).toEqual([]);
    const seen = (expected: "allow" | "deny", caller: string, action: string) =>
      expectations.filter(
        (entry) =>
          entry.expected === expected &&
          entry.decision.request.caller === caller &&
          entry.decision.request.action === action,
      ).length;
    expect(seen("allow", "apigateway.amazonaws.com", "lambda:InvokeFunction")).toBe(1);
    expect(seen("deny", "apigateway.amazonaws.com", "lambda:InvokeFunction")).toBe(2);
    expect(seen("allow", "lambda.amazonaws.com", "sts:AssumeRole")).toBe(1);
    expect(seen("deny", `arn:aws:iam::${OTHER_ACCOUNT}:root`, "sts:AssumeRole")).toBe(2);
    expect(seen("allow", "scheduler.amazonaws.com", "sts:AssumeRole")).toBe(1);
    expect(seen("deny", "scheduler.amazonaws.com", "sts:AssumeRole")).toBe(1);
    expect(seen("deny", "lambda.amazonaws.com", "sts:AssumeRole")).toBe(1);
    expect(seen("allow", "scheduler.amazonaws.com", "lambda:InvokeFunction")).toBe(1);
  });

  it("report a trust policy that lets any account assume a function's role", async () => {
    const resources = stageResources();
    trustStatements(resources, "FnRole").push(...trust({ AWS: "*" }).Statement);

    expect(await unmet(resources)).toEqual([
      `deny arn:aws:iam::${OTHER_ACCOUNT}:root sts:AssumeRole: Lambda assuming FnRole, the execution role of Fn, by a principal of another account`,
    ]);
  });

  it("report a function's role that Lambda cannot assume", async () => {
    const resources = stageResources();
    Object.assign(resources.FnRole?.Properties ?? {}, {
      AssumeRolePolicyDocument: trust({ Service: "ec2.amazonaws.com" }),
    });

    expect(await unmet(resources)).toEqual([
      "allow lambda.amazonaws.com sts:AssumeRole: Lambda assuming FnRole, the execution role of Fn",
    ]);
  });

  it("report an API Gateway permission without SourceArn: another API of the account may invoke the alias", async () => {
    const resources = stageResources();
    const permission = resources.GetPetsPermission?.Properties ?? {};
    delete permission.SourceArn;
    permission.SourceAccount = { Ref: "AWS::AccountId" };

    expect(await unmet(resources)).toEqual([
      "deny apigateway.amazonaws.com lambda:InvokeFunction: API Gateway invoking the alias for v1/GET/pets, from another API",
    ]);
  });

  it("report a scheduler role that Lambda may assume too", async () => {
    const resources = stageResources();
    for (const statement of trustStatements(resources, "SchedulerRole")) {
      statement.Principal = { Service: ["scheduler.amazonaws.com", "lambda.amazonaws.com"] };
    }

    expect(await unmet(resources)).toEqual([
      "deny lambda.amazonaws.com sts:AssumeRole: Schedule assuming its role, by lambda.amazonaws.com, which the role is not for",
    ]);
  });
});
