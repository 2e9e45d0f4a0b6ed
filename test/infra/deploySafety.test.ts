/**
 * Deploy safety: stages pinned to the configured account and region, the account stack that owns
 * API Gateway's account-wide setting, termination protection and the recommended feature flags.
 * Bundling is skipped here (no stack needs its functions' code to be judged).
 */
import { readFileSync } from "node:fs";
import { Match, Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app";
import { ACCOUNT_STACK_NAME, AccountStack } from "../../infra/stacks/accountStack";
import { CONTROL_TOWER_PLUGIN } from "../../infra/stacks/controlTower";
import { scratchDirectory } from "../support/scratch";
import { featureFlags, synthesizedStages } from "./app";

const noBundling = { "aws:cdk:bundling-stacks": [] };
const sharedAccount = {
  ...noBundling,
  "staging:account": "111111111111",
  "staging:region": "eu-west-1",
  "prod:account": "111111111111",
  "prod:region": "eu-west-1",
};

let shared: ReturnType<typeof synthesizedStages>;
let separate: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  // No bundling: these assertions read templates and construct metadata, never the functions' code.
  shared = synthesizedStages({ context: { ...noBundling, ...sharedAccount } });
  // Production's account from the environment, as a CI job would set it.
  separate = synthesizedStages({
    context: { ...noBundling, "staging:account": "111111111111", "staging:region": "eu-west-1" },
    environment: { PETSTORE_PROD_ACCOUNT: "222222222222", PETSTORE_PROD_REGION: "us-east-2" },
  });
});

const accountStacksOf = (synth: ReturnType<typeof synthesizedStages>) =>
  synth.app.node.children.filter((child): child is AccountStack => child instanceof AccountStack);

describe("deploy safety", () => {
  it("pins each stage's stack to the account and region configured for it", () => {
    const environments = Object.fromEntries(
      separate.stages.map((stage) => [stage.node.id, `${stage.stack.account}/${stage.stack.region}`]),
    );

    expect(environments).toEqual({ Staging: "111111111111/eu-west-1", Production: "222222222222/us-east-2" });
  });

  it("tells the CDK CLI which account each stack belongs to, so credentials for another are refused", () => {
    const manifest = separate.app.synth().manifest;
    const environments = Object.values(manifest.artifacts ?? {})
      .filter((artifact) => artifact.type === "aws:cloudformation:stack")
      .map((artifact) => artifact.environment)
      .sort();

    // The nested stage assemblies hold the stage stacks; the app's own holds the account stacks.
    expect(environments).toEqual(["aws://111111111111/eu-west-1", "aws://222222222222/us-east-2"]);
    for (const stage of separate.stages) {
      const stageArtifacts = Object.values(stage.synth().manifest.artifacts ?? {}).filter(
        (artifact) => artifact.type === "aws:cloudformation:stack",
      );
      // The service stack and the data stack, both pinned.
      expect(stageArtifacts.map((artifact) => artifact.environment)).toEqual([
        `aws://${stage.stack.account}/${stage.stack.region}`,
        `aws://${stage.stack.account}/${stage.stack.region}`,
      ]);
    }
  });

  it("passes the Control Tower checks with nothing but Lambda-in-VPC acknowledged once stages are pinned", () => {
    const acknowledged = shared.app.node
      .findAll()
      .flatMap((construct) =>
        construct.node.metadata
          .filter((entry) => entry.type === "aws:cdk:acknowledged-rules")
          .flatMap((entry) => Object.keys(entry.data as Record<string, string>)),
      )
      .filter((id) => id.startsWith(`${CONTROL_TOWER_PLUGIN}::`));
    const permissions = shared.stages.flatMap((stage) =>
      Object.values(Template.fromStack(stage.stack).findResources("AWS::Lambda::Permission")),
    );

    expect(shared.failure).toBeUndefined();
    expect(new Set(acknowledged)).toEqual(new Set([`${CONTROL_TOWER_PLUGIN}::lambda_inside_vpc_check`]));
    expect(permissions.length).toBeGreaterThan(0);
    for (const permission of permissions) expect(permission.Properties.SourceAccount).toBe("111111111111");
  });

  it("owns API Gateway's CloudWatch role once per account and region: one account stack when stages share one", () => {
    const [accountStack, ...others] = accountStacksOf(shared);
    if (!accountStack) throw new Error("no account stack");
    const template = Template.fromStack(accountStack);
    const [roleId] = Object.keys(template.findResources("AWS::IAM::Role"));

    expect(others).toEqual([]);
    expect(accountStack.node.id).toBe("PetStore-Account-Staging-Production");
    expect(accountStack.stackName).toBe(ACCOUNT_STACK_NAME);
    expect(`${accountStack.account}/${accountStack.region}`).toBe("111111111111/eu-west-1");
    // Deleting it loses nothing (all retained), and a failed first create stays retryable.
    expect(accountStack.terminationProtection).toBe(false);
    template.hasResource("AWS::ApiGateway::Account", {
      Properties: { CloudWatchRoleArn: { "Fn::GetAtt": [roleId, "Arn"] } },
      DeletionPolicy: "RetainExceptOnCreate",
    });
    template.hasResource("AWS::IAM::Role", {
      Properties: {
        AssumeRolePolicyDocument: {
          Statement: [Match.objectLike({ Principal: { Service: "apigateway.amazonaws.com" } })],
        },
      },
      DeletionPolicy: "RetainExceptOnCreate",
    });
    for (const stage of shared.stages) Template.fromStack(stage.stack).resourceCountIs("AWS::ApiGateway::Account", 0);
  });

  it("makes one account stack per account and region when the stages are in different ones", () => {
    const stacks = accountStacksOf(separate).map((stack) => ({
      id: stack.node.id,
      name: stack.stackName,
      environment: `${stack.account}/${stack.region}`,
    }));

    expect(stacks).toEqual([
      {
        id: `${ACCOUNT_STACK_NAME}-Staging`,
        name: ACCOUNT_STACK_NAME,
        environment: "111111111111/eu-west-1",
      },
      {
        id: `${ACCOUNT_STACK_NAME}-Production`,
        name: ACCOUNT_STACK_NAME,
        environment: "222222222222/us-east-2",
      },
    ]);
  });

  it("protects production's data, and only production's, against stack deletion; no service stack is protected", () => {
    const protection = Object.fromEntries(
      shared.stages.map((stage) => [
        stage.node.id,
        { data: stage.dataStack.terminationProtection, service: stage.stack.terminationProtection },
      ]),
    );

    expect(protection).toEqual({
      Staging: { data: false, service: false },
      Production: { data: true, service: false },
    });
  });

  it("adopts the account's existing API Gateway CloudWatch role by a setting, creating no role of its own", () => {
    const existing = "arn:aws:iam::111111111111:role/team-apigateway-logs";
    // The account stack's template only: no bundling, and the policy checks are the test above's.
    const { app } = buildApp({
      context: { ...featureFlags, ...noBundling, ...sharedAccount, "prod:apiGatewayCloudWatchRoleArn": existing },
      policyValidation: false,
      outdir: scratchDirectory(),
    });
    const [accountStack] = app.node.children.filter((child): child is AccountStack => child instanceof AccountStack);
    if (!accountStack) throw new Error("no account stack");
    const template = Template.fromStack(accountStack);

    template.resourceCountIs("AWS::IAM::Role", 0);
    template.hasResource("AWS::ApiGateway::Account", {
      Properties: { CloudWatchRoleArn: existing },
      DeletionPolicy: "RetainExceptOnCreate",
    });
    expect(() =>
      buildApp({
        outdir: scratchDirectory(),
        context: {
          ...sharedAccount,
          "prod:apiGatewayCloudWatchRoleArn": existing,
          "staging:apiGatewayCloudWatchRoleArn": "arn:aws:iam::111111111111:role/other",
        },
      }),
    ).toThrow(/name different roles, but the stages share one account and region/);
    expect(() =>
      buildApp({
        stages: [],
        outdir: scratchDirectory(),
        context: { ...sharedAccount, "prod:apiGatewayCloudWatchRoleArn": "arn:aws:iam::999999999999:role/x" },
      }),
    ).toThrow(
      "Invalid deployment settings: prod:apiGatewayCloudWatchRoleArn must be in the stage's account (prod:account)",
    );
  });

  it("relies on the pinned CDK CLI retrying a failed first create itself, which termination protection would refuse", () => {
    // docs/deploy.md section 3 rests on two things the CDK CLI does (the installed aws-cdk package,
    // deployStack and FullCloudFormationDeployment.changeSetDeployment): a stack in ROLLBACK_COMPLETE
    // or ROLLBACK_FAILED is deleted before it is created again, and a stack's termination protection
    // is set after its change set is created, before it runs, so a protected stack could not be deleted.
    const cli = readFileSync(new URL("../../node_modules/aws-cdk/lib/index.js", import.meta.url), "utf8");

    expect(cli).toMatch(
      /get isCreationFailure\(\) \{\s*return this\.name === [\w.]+\.ROLLBACK_COMPLETE \|\| this\.name === [\w.]+\.ROLLBACK_FAILED;/,
    );
    expect(cli).toContain("that had previously failed creation. Deleting it before attempting to re-create it.");
    expect(cli).toMatch(
      /const changeSetReport = await this\.createChangeSet\([^)]*\);\s*const changeSetDescription = changeSetReport\.changeSet;\s*await this\.updateTerminationProtection\(\);/,
    );
  });

  it("sets every feature flag aws-cdk-lib recommends, to the recommended value (cdk.json)", () => {
    const recommended = JSON.parse(
      readFileSync(new URL("../../node_modules/aws-cdk-lib/recommended-feature-flags.json", import.meta.url), "utf8"),
    ) as Record<string, unknown>;

    expect(Object.keys(recommended).length).toBeGreaterThan(50);
    for (const [flag, value] of Object.entries(recommended)) {
      expect(featureFlags[flag], flag).toEqual(value);
    }
  });
});
