/**
 * The GitHub Actions deploy roles (infra/stacks/deliveryAccessStack.ts), synthesised through the
 * real app entry with cdk context, as `npx cdk deploy PetStore-DeliveryAccess -c …` does. Without
 * stage stacks, so no function is bundled. Expected values are written out from GitHub's and the
 * CDK bootstrap's documented formats, not taken from the code under test.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as iam from "aws-cdk-lib/aws-iam";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app";
import { deployedStages } from "../../infra/deployment";
import {
  DELIVERY_ACCESS_STACK_NAME,
  DeliveryAccessStack,
  DeliveryConfigError,
  deliveryAccessConfigFromContext,
} from "../../infra/stacks/deliveryAccessStack";
import { scratchDirectory } from "../support/scratch";

type Resource = { Type: string; Properties: Record<string, unknown> };
type Template = { Resources: Record<string, Resource>; Outputs: Record<string, { Value: unknown }> };

const repository = "octo-org/pets";
const existingProviderArn = "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com";

function synthesizeDeliveryAccess(context: Record<string, unknown>, change?: (stack: DeliveryAccessStack) => void) {
  const outdir = scratchDirectory("cdk-delivery-");
  const { app } = buildApp({ stages: [], outdir, context });
  const stack = app.node.tryFindChild(DELIVERY_ACCESS_STACK_NAME);
  if (!(stack instanceof DeliveryAccessStack)) throw new Error("no delivery access stack");
  change?.(stack);
  let failure: unknown;
  try {
    app.synth();
  } catch (error) {
    failure = error;
  }
  const template = () =>
    JSON.parse(readFileSync(join(outdir, `${DELIVERY_ACCESS_STACK_NAME}.template.json`), "utf8")) as Template;
  return { failure, stack, template };
}

function resourcesOfType(template: Template, type: string): [string, Resource][] {
  return Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
}

function deployRoleOf(template: Template, stageId: string): [string, Resource] {
  const roles = resourcesOfType(template, "AWS::IAM::Role").filter(([logicalId]) =>
    logicalId.startsWith(`${stageId}DeployRole`),
  );
  expect(roles).toHaveLength(1);
  return roles[0] as [string, Resource];
}

type Statement = { Action: string | string[] };
const actionsOf = (statements: Statement[]) => statements.flatMap((statement) => [statement.Action].flat()).sort();
/** What npm run preflight calls (scripts/preflight/checks.ts): reads only. */
const preflightActions = [
  "apigateway:GET",
  "cloudformation:DescribeStacks",
  "cloudformation:ListStackResources",
  "lambda:GetAccountSettings",
  "lambda:GetFunctionConcurrency",
];

const bootstrapRole = (qualifier: string, kind: string) => ({
  "Fn::Sub": `arn:\${AWS::Partition}:iam::\${AWS::AccountId}:role/cdk-${qualifier}-${kind}-role-\${AWS::AccountId}-\${AWS::Region}`,
});

describe("delivery access stack: only with configuration", () => {
  it("is not part of the app when the context names no repository, so a plain synth is unchanged", () => {
    const { app, stages } = buildApp({ stages: [], outdir: scratchDirectory() });

    expect(stages).toEqual([]);
    expect(app.node.tryFindChild(DELIVERY_ACCESS_STACK_NAME)).toBeUndefined();
    expect(app.node.children.filter((child) => child instanceof DeliveryAccessStack)).toEqual([]);
  });

  it("is added under its own name when the context names the repository", () => {
    const { stack } = synthesizeDeliveryAccess({ githubRepository: repository });

    expect(stack.stackName).toBe("PetStore-DeliveryAccess");
  });
});

describe("delivery access stack: GitHub's OIDC provider", () => {
  const { template } = synthesizeDeliveryAccess({ githubRepository: repository });

  it("creates the provider for GitHub's issuer and the STS audience, with no thumbprint", () => {
    const providers = resourcesOfType(template(), "AWS::IAM::OIDCProvider");

    expect(providers).toHaveLength(1);
    expect(providers[0]?.[1].Properties).toEqual({
      Url: "https://token.actions.githubusercontent.com",
      ClientIdList: ["sts.amazonaws.com"],
      // Cost tags (infra/tags.ts): this stack serves both stages when none is pinned.
      Tags: [
        { Key: "project", Value: "petstore" },
        { Key: "stage", Value: "staging+prod" },
      ],
    });
  });

  it("uses an existing provider instead when a stage of the account names it (an account has only one)", () => {
    const existing = synthesizeDeliveryAccess({
      githubRepository: repository,
      "prod:githubOidcProviderArn": existingProviderArn,
    }).template();

    expect(resourcesOfType(existing, "AWS::IAM::OIDCProvider")).toEqual([]);
    for (const stage of Object.values(deployedStages)) {
      const [, role] = deployRoleOf(existing, stage.id);
      const document = role.Properties.AssumeRolePolicyDocument as { Statement: { Principal: unknown }[] };
      expect(document.Statement.map((statement) => statement.Principal)).toEqual([{ Federated: existingProviderArn }]);
    }
  });
});

describe("delivery access stack: one deploy role per stage", () => {
  const {
    template,
    failure,
    stack: stackOf,
  } = (() => {
    const synthesized = synthesizeDeliveryAccess({ githubRepository: repository });
    return { ...synthesized, stack: () => synthesized.stack };
  })();

  it("holds nothing but the provider, one deploy role per stage and production's read-only preview role", () => {
    const types = Object.values(template().Resources).map((resource) => resource.Type);

    expect(types.sort()).toEqual(["AWS::IAM::OIDCProvider", "AWS::IAM::Role", "AWS::IAM::Role", "AWS::IAM::Role"]);
  });

  it("lets the production-preview environment only read: the pre-flight calls and assuming the CDK lookup role", () => {
    const roles = resourcesOfType(template(), "AWS::IAM::Role").filter(([logicalId]) =>
      logicalId.startsWith("ProductionPreviewRole"),
    );
    expect(roles).toHaveLength(1);
    const [logicalId, role] = roles[0] as [string, Resource];
    const policies = role.Properties.Policies as { PolicyName: string; PolicyDocument: { Statement: Statement[] } }[];

    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(
      '"token.actions.githubusercontent.com:sub":"repo:octo-org/pets:environment:production-preview"',
    );
    expect(policies.map((policy) => policy.PolicyName)).toEqual(["AssumeCdkLookupRole", "Preflight"]);
    expect(policies[0]?.PolicyDocument.Statement).toEqual([
      { Effect: "Allow", Action: "sts:AssumeRole", Resource: bootstrapRole("hnb659fds", "lookup") },
    ]);
    expect(actionsOf(policies[1]?.PolicyDocument.Statement ?? [])).toEqual(preflightActions);
    expect(role.Properties.MaxSessionDuration).toBe(3600);
    expect(template().Outputs.ProductionPreviewRoleArn?.Value).toEqual({ "Fn::GetAtt": [logicalId, "Arn"] });
  });

  for (const stage of Object.values(deployedStages)) {
    it(`${stage.id}: trusts only this repository's jobs in the GitHub environment ${stage.githubEnvironment}, for the STS audience`, () => {
      const [, role] = deployRoleOf(template(), stage.id);
      const [providerId] = resourcesOfType(template(), "AWS::IAM::OIDCProvider")[0] ?? [];

      expect(role.Properties.AssumeRolePolicyDocument).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Effect: "Allow",
            Action: "sts:AssumeRoleWithWebIdentity",
            Principal: { Federated: { Ref: providerId } },
            Condition: {
              StringEquals: {
                "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
                "token.actions.githubusercontent.com:sub": `repo:octo-org/pets:environment:${stage.githubEnvironment}`,
              },
            },
          },
        ],
      });
    });

    it(`${stage.id}: may only assume the CDK bootstrap roles (deploy, publishing, lookup) of its account and region, and make the pre-flight's read-only calls`, () => {
      const [, role] = deployRoleOf(template(), stage.id);
      const [, preflight] = role.Properties.Policies as {
        PolicyName: string;
        PolicyDocument: { Statement: Statement[] };
      }[];

      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
      expect(role.Properties.PermissionsBoundary).toBeUndefined();
      expect(preflight?.PolicyName).toBe("Preflight");
      expect(actionsOf(preflight?.PolicyDocument.Statement ?? [])).toEqual(preflightActions);
      expect((role.Properties.Policies as unknown[]).slice(0, 1)).toEqual([
        {
          PolicyName: "AssumeCdkBootstrapRoles",
          PolicyDocument: {
            Version: "2012-10-17",
            Statement: [
              {
                Effect: "Allow",
                Action: "sts:AssumeRole",
                Resource: [
                  bootstrapRole("hnb659fds", "deploy"),
                  bootstrapRole("hnb659fds", "file-publishing"),
                  bootstrapRole("hnb659fds", "image-publishing"),
                  bootstrapRole("hnb659fds", "lookup"),
                ],
              },
            ],
          },
        },
      ]);
    });

    it(`${stage.id}: may set the state of its own stage's alarm delivery test alarm and read its history, no other alarm's, and read its paging topic's subscriptions`, () => {
      const [, role] = deployRoleOf(template(), stage.id);
      const policies = role.Properties.Policies as { PolicyName: string; PolicyDocument: unknown }[];

      expect(policies.map((policy) => policy.PolicyName)).toEqual([
        "AssumeCdkBootstrapRoles",
        "Preflight",
        "AlarmDeliveryTest",
        "SmokeKey",
      ]);
      expect(policies[2]?.PolicyDocument).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "AlarmDeliveryTest",
            Effect: "Allow",
            Action: ["cloudwatch:SetAlarmState", "cloudwatch:DescribeAlarmHistory"],
            // arn:${Partition}:cloudwatch:${Region}:${Account}:alarm:${AlarmName} (Service Authorization Reference)
            Resource: {
              "Fn::Join": [
                "",
                [
                  "arn:",
                  { Ref: "AWS::Partition" },
                  ":cloudwatch:",
                  { Ref: "AWS::Region" },
                  ":",
                  { Ref: "AWS::AccountId" },
                  `:alarm:petstore-${stage.stage}-alarm-delivery-test`,
                ],
              ],
            },
          },
          {
            Sid: "AlarmDeliveryTestSubscriptions",
            Effect: "Allow",
            Action: "sns:ListSubscriptionsByTopic",
            // CloudFormation names the stage's alarm topic `<stack name>-<logical id>-<suffix>`.
            Resource: {
              "Fn::Join": [
                "",
                [
                  "arn:",
                  { Ref: "AWS::Partition" },
                  ":sns:",
                  { Ref: "AWS::Region" },
                  ":",
                  { Ref: "AWS::AccountId" },
                  `:${stage.stackName}-MonitoringAlarmTopic*`,
                ],
              ],
            },
          },
          {
            Sid: "AlarmDeliveryTestFilterPolicies",
            Effect: "Allow",
            Action: "sns:GetSubscriptionAttributes",
            Resource: "*",
          },
        ],
      });
    });

    it(`${stage.id}: may also read the subscriptions of the existing paging topic its settings name`, () => {
      const pager = `arn:aws:sns:eu-west-1:123456789012:${stage.stage}-pager`;
      const configured = synthesizeDeliveryAccess({
        githubRepository: repository,
        [`${stage.stage}:alarmTopicArn`]: pager,
      }).template();
      const [, role] = deployRoleOf(configured, stage.id);
      const policies = role.Properties.Policies as {
        PolicyName: string;
        PolicyDocument: { Statement: { Sid?: string; Resource: unknown }[] };
      }[];
      const statement = policies
        .find((policy) => policy.PolicyName === "AlarmDeliveryTest")
        ?.PolicyDocument.Statement.find((candidate) => candidate.Sid === "AlarmDeliveryTestSubscriptions");

      expect(statement?.Resource).toEqual([expect.objectContaining({ "Fn::Join": expect.any(Array) }), pager]);
    });

    it(`${stage.id}: may write API key records in its own stage's table and nothing else there, for the smoke checks' synthetic key`, () => {
      const [, role] = deployRoleOf(template(), stage.id);
      const policies = role.Properties.Policies as { PolicyName: string; PolicyDocument: unknown }[];

      expect(policies.find((policy) => policy.PolicyName === "SmokeKey")?.PolicyDocument).toEqual({
        Version: "2012-10-17",
        Statement: [
          {
            Sid: "SmokeKey",
            Effect: "Allow",
            // One conditional PutItem (npm run keys -- create); no read, query, update or delete.
            Action: "dynamodb:PutItem",
            Resource: {
              "Fn::Join": [
                "",
                [
                  "arn:",
                  { Ref: "AWS::Partition" },
                  ":dynamodb:",
                  { Ref: "AWS::Region" },
                  ":",
                  { Ref: "AWS::AccountId" },
                  `:table/petstore-${stage.stage}`,
                ],
              ],
            },
            // The API key records' partition only (lib/db/table.ts): no pet, counter or idempotency record.
            Condition: { "ForAllValues:StringEquals": { "dynamodb:LeadingKeys": ["APIKEY"] } },
          },
        ],
      });
    });

    it(`${stage.id}: writes the key into the restored table its settings switch the stage to`, () => {
      const restored = `petstore-${stage.stage}-restored-20260501`;
      const [, role] = deployRoleOf(
        synthesizeDeliveryAccess({ githubRepository: repository, [`${stage.stage}:tableName`]: restored }).template(),
        stage.id,
      );
      const policies = role.Properties.Policies as { PolicyName: string; PolicyDocument: unknown }[];
      const document = JSON.stringify(policies.find((policy) => policy.PolicyName === "SmokeKey")?.PolicyDocument);

      expect(document).toContain(`:table/${restored}"`);
      expect(document).not.toContain(`:table/petstore-${stage.stage}"`);
    });

    it(`${stage.id}: allows sessions of two hours, long enough for a canary deploy that rolls back`, () => {
      const [, role] = deployRoleOf(template(), stage.id);

      expect(role.Properties.MaxSessionDuration).toBe(7200);
    });

    it(`${stage.id}: its ARN is a stack output, to set as the environment's AWS_DEPLOY_ROLE_ARN`, () => {
      const [logicalId] = deployRoleOf(template(), stage.id);

      expect(template().Outputs[`${stage.id}DeployRoleArn`]?.Value).toEqual({ "Fn::GetAtt": [logicalId, "Arn"] });
    });
  }

  it("names the bootstrap roles of the qualifier the cdk context gives", () => {
    const qualified = synthesizeDeliveryAccess({
      githubRepository: repository,
      "@aws-cdk/core:bootstrapQualifier": "pets01",
    }).template();

    const [, role] = deployRoleOf(qualified, deployedStages.prod.id);
    const [policy] = role.Properties.Policies as { PolicyDocument: { Statement: { Resource: unknown }[] } }[];
    expect(policy?.PolicyDocument.Statement[0]?.Resource).toEqual([
      bootstrapRole("pets01", "deploy"),
      bootstrapRole("pets01", "file-publishing"),
      bootstrapRole("pets01", "image-publishing"),
      bootstrapRole("pets01", "lookup"),
    ]);
  });

  it("matches the repository exactly as given, including the immutable-id form of newer repositories", () => {
    const immutable = synthesizeDeliveryAccess({ githubRepository: "octo-org@123456/pets@456789" }).template();

    const [, role] = deployRoleOf(immutable, deployedStages.staging.id);
    expect(JSON.stringify(role.Properties.AssumeRolePolicyDocument)).toContain(
      '"token.actions.githubusercontent.com:sub":"repo:octo-org@123456/pets@456789:environment:staging"',
    );
  });

  it("passes cdk-nag (AwsSolutions, Serverless), with only the pre-flight's and alarms:verify's unavoidable wildcards acknowledged", () => {
    const acknowledged = stackOf()
      .node.findAll()
      .flatMap((construct) =>
        construct.node.metadata
          .filter((entry) => entry.type === "aws:cdk:acknowledged-rules")
          .flatMap((entry) => Object.keys(entry.data as Record<string, string>)),
      );

    expect(failure).toBeUndefined();
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const id of acknowledged) {
      expect(id).toMatch(
        /^AwsSolutions::AwsSolutions-IAM5\[Resource::(\*|.*:stack\/[\w-]+\/\*|.*:function:[\w-]+-\*|.*:sns:.*:[\w-]+-MonitoringAlarmTopic\*)\]$/,
      );
    }
  });

  it("is checked by cdk-nag: a managed policy on a deploy role fails synth", () => {
    const widened = synthesizeDeliveryAccess({ githubRepository: repository }, (stack) => {
      stack.deployRoles
        .get("staging")
        ?.addManagedPolicy(iam.ManagedPolicy.fromAwsManagedPolicyName("AdministratorAccess"));
    });

    expect(String(widened.failure)).toContain("AwsSolutions-IAM4");
  });
});

describe("delivery access configuration from cdk context", () => {
  const configFrom = (context: Record<string, unknown>) => () => deliveryAccessConfigFromContext((key) => context[key]);

  it.each([
    ["a wildcard", "octo-org/*"],
    ["a whole owner", "octo-org"],
    ["a subject suffix", "octo-org/pets:ref:refs/heads/main"],
    ["an empty name", ""],
    ["a URL", "https://github.com/octo-org/pets"],
  ])("refuses a repository that is %s, which would not match or would widen the trust", (_, githubRepository) => {
    expect(configFrom({ githubRepository })).toThrow(DeliveryConfigError);
    expect(configFrom({ githubRepository })).toThrow(/githubRepository must be owner\/repo/);
  });

  it("refuses a provider ARN that is not GitHub's issuer, and one of another account than the stage's", () => {
    const settings = (context: Record<string, string>) => () =>
      buildApp({ stages: [], outdir: scratchDirectory(), context: { githubRepository: repository, ...context } });
    expect(
      settings({ "prod:githubOidcProviderArn": "arn:aws:iam::123456789012:oidc-provider/accounts.google.com" }),
    ).toThrow(
      "Invalid deployment setting context prod:githubOidcProviderArn: must be the ARN of the account's IAM OIDC provider for token.actions.githubusercontent.com.",
    );
    expect(
      settings({
        "prod:account": "222222222222",
        "prod:region": "eu-west-1",
        "prod:githubOidcProviderArn": existingProviderArn,
      }),
    ).toThrow("prod:githubOidcProviderArn must be in the stage's account (prod:account)");
  });

  it("refuses the app-wide provider ARN, which gave every account the same provider", () => {
    expect(configFrom({ githubRepository: repository, githubOidcProviderArn: existingProviderArn })).toThrow(
      /githubOidcProviderArn would apply to every account; .* set staging:githubOidcProviderArn and\/or prod:githubOidcProviderArn in cdk\.json instead\./,
    );
    expect(configFrom({ githubOidcProviderArn: existingProviderArn })).toThrow(DeliveryConfigError);
  });

  it("refuses a bootstrap qualifier cdk bootstrap would not accept", () => {
    expect(configFrom({ githubRepository: repository, "@aws-cdk/core:bootstrapQualifier": "a*b" })).toThrow(
      /bootstrapQualifier must be a cdk bootstrap qualifier/,
    );
  });

  it("makes a deploy role for every deployed stage by default (one stack when no stage is pinned)", () => {
    expect(configFrom({ githubRepository: repository })()?.stages).toEqual(Object.values(deployedStages));
  });

  it("cdk synth with a bad repository prints one readable line and fails", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", "infra/app.ts"], {
      encoding: "utf8",
      env: {
        ...process.env,
        CDK_OUTDIR: scratchDirectory(),
        CDK_CONTEXT_JSON: JSON.stringify({ githubRepository: "octo-org/*" }),
      },
    });

    expect(result.status).toBe(1);
    expect(result.stderr.trim()).toBe(
      'githubRepository must be owner/repo as the OIDC sub claim names it, not "octo-org/*".',
    );
  });
});

describe("delivery access stacks: one per account, with only that account's stages", () => {
  const build = (context: Record<string, unknown>) => {
    const outdir = scratchDirectory("cdk-delivery-");
    const { app } = buildApp({ stages: [], outdir, context: { githubRepository: repository, ...context } });
    const stacks = app.node.children.filter(
      (child): child is DeliveryAccessStack => child instanceof DeliveryAccessStack,
    );
    app.synth();
    const templateOf = (stack: DeliveryAccessStack) =>
      JSON.parse(readFileSync(join(outdir, `${stack.artifactId}.template.json`), "utf8")) as Template;
    return { stacks, templateOf };
  };
  const environmentsOf = (template: Template) =>
    resourcesOfType(template, "AWS::IAM::Role").map(([, role]) => {
      const document = role.Properties.AssumeRolePolicyDocument as {
        Statement: { Condition: { StringEquals: Record<string, string> } }[];
      };
      return document.Statement[0]?.Condition.StringEquals["token.actions.githubusercontent.com:sub"];
    });

  it("puts staging's role only in staging's account and production's only in production's", () => {
    const { stacks, templateOf } = build({
      "staging:account": "111111111111",
      "staging:region": "eu-west-1",
      "prod:account": "222222222222",
      "prod:region": "us-east-2",
    });

    expect(stacks.map((stack) => [stack.node.id, stack.stackName, `${stack.account}/${stack.region}`])).toEqual([
      ["PetStore-DeliveryAccess-111111111111", "PetStore-DeliveryAccess", "111111111111/eu-west-1"],
      ["PetStore-DeliveryAccess-222222222222", "PetStore-DeliveryAccess", "222222222222/us-east-2"],
    ]);
    const [staging, production] = stacks.map(templateOf) as [Template, Template];
    expect(environmentsOf(staging)).toEqual(["repo:octo-org/pets:environment:staging"]);
    expect(environmentsOf(production)).toEqual([
      "repo:octo-org/pets:environment:production",
      "repo:octo-org/pets:environment:production-preview",
    ]);
    // Each role may assume the bootstrap roles of its own stage's region only.
    const [, productionRole] = deployRoleOf(production, "Production");
    expect(JSON.stringify(productionRole.Properties.Policies)).toContain(`deploy-role-\${AWS::AccountId}-us-east-2`);
    // and set the state of its own stage's delivery test alarm there.
    expect(JSON.stringify(productionRole.Properties.Policies)).toContain(
      ":cloudwatch:us-east-2:222222222222:alarm:petstore-prod-alarm-delivery-test",
    );
    expect(JSON.stringify(productionRole.Properties.Policies)).not.toContain("AWS::Region");
    expect(Object.keys(staging.Outputs)).toEqual(["StagingDeployRoleArn"]);
    expect(Object.keys(production.Outputs)).toEqual(["ProductionDeployRoleArn", "ProductionPreviewRoleArn"]);
  });

  it("trusts each account's own existing OIDC provider, set per stage, and creates one only where none is named", () => {
    const productionProvider = "arn:aws:iam::222222222222:oidc-provider/token.actions.githubusercontent.com";
    const { stacks, templateOf } = build({
      "staging:account": "111111111111",
      "staging:region": "eu-west-1",
      "prod:account": "222222222222",
      "prod:region": "eu-west-1",
      "prod:githubOidcProviderArn": productionProvider,
    });
    const [staging, production] = stacks.map(templateOf) as [Template, Template];
    const principals = (template: Template) =>
      resourcesOfType(template, "AWS::IAM::Role").map(
        ([, role]) =>
          (role.Properties.AssumeRolePolicyDocument as { Statement: { Principal: unknown }[] }).Statement[0]?.Principal,
      );

    expect(resourcesOfType(staging, "AWS::IAM::OIDCProvider")).toHaveLength(1);
    expect(resourcesOfType(production, "AWS::IAM::OIDCProvider")).toEqual([]);
    expect(principals(production)).toEqual([{ Federated: productionProvider }, { Federated: productionProvider }]);
    expect(JSON.stringify(principals(staging))).not.toContain("222222222222");
  });

  it("keeps both roles in one stack when both stages are pinned to one account", () => {
    const { stacks, templateOf } = build({
      "staging:account": "111111111111",
      "staging:region": "eu-west-1",
      "prod:account": "111111111111",
      "prod:region": "eu-west-1",
    });

    expect(stacks.map((stack) => stack.node.id)).toEqual(["PetStore-DeliveryAccess-111111111111"]);
    expect(environmentsOf(templateOf(stacks[0] as DeliveryAccessStack)).sort()).toEqual([
      "repo:octo-org/pets:environment:production",
      "repo:octo-org/pets:environment:production-preview",
      "repo:octo-org/pets:environment:staging",
    ]);
  });

  it("refuses to pin one stage but not the other, whose role would land wherever the credentials point", () => {
    expect(() => build({ "prod:account": "222222222222", "prod:region": "eu-west-1" })).toThrow(
      new DeliveryConfigError(
        "Deploy roles: prod is pinned to an account but staging is not; pin every stage (<stage>:account and <stage>:region in cdk.json) so that each account holds only its own stages' deploy roles.",
      ),
    );
  });
});
