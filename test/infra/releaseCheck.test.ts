/**
 * The release check's decisions (scripts/releaseCheck/compare.ts) on templates the CDK synthesizes:
 * the real app's, and the production table defined elsewhere, as a careless refactoring would.
 * It refuses a renamed or moved table construct, a key-schema change and a table no longer retained;
 * backups, indexes, encryption and TTL weakened in place; a stage moved to another account or region
 * (without calling its changed ARNs a widening); it lets a code change pass, and an acknowledged
 * replacement; it lists permissions a release adds.
 */
import { App, RemovalPolicy, Stack, Token } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as iam from "aws-cdk-lib/aws-iam";
import { Construct } from "constructs";
import { describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { deployedStages } from "../../infra/deployment";
import { petTableProps } from "../../infra/stacks/dataStack";
import { type Acknowledgement, judge } from "../../scripts/releaseCheck/acknowledgements";
import { compareAssemblies, compareStack, type Finding, type StackTemplate } from "../../scripts/releaseCheck/compare";
import { markdownReport } from "../../scripts/releaseCheck/report";
import { type CfnTemplate, statefulResources } from "../../scripts/releaseCheck/stateful";
import { scratchDirectory } from "../support/scratch";
import { featureFlags, synthesizedStages } from "./app";

const UNPINNED = "aws://unknown-account/unknown-region";
const production = stageConfigs.Production;
const dataStackName = deployedStages.prod.dataStackName;
const serviceStackName = deployedStages.prod.stackName;

const stackTemplate = (stackName: string, template: unknown): StackTemplate => ({
  stackName,
  environment: UNPINNED,
  template: template as CfnTemplate,
});

/** Production's data stack with the table defined by `define` instead (same props unless it changes them). */
function dataStackWith(define: (stack: Stack) => void): StackTemplate {
  const stack = new Stack(new App({ context: featureFlags, outdir: scratchDirectory() }), "PetStoreData", {
    stackName: dataStackName,
  });
  define(stack);
  return stackTemplate(dataStackName, Template.fromStack(stack).toJSON());
}

/** The real app's stacks, with each stack's environment as the cloud assembly names it. */
function appStacks(context: Record<string, string> = {}): StackTemplate[] {
  const { app } = synthesizedStages({ policyValidation: false, context });
  return app.node
    .findAll()
    .filter((construct): construct is Stack => Stack.isStack(construct))
    .map((stack) => ({
      ...stackTemplate(stack.stackName, Template.fromStack(stack).toJSON()),
      environment: `aws://${Token.isUnresolved(stack.account) ? "unknown-account" : stack.account}/${Token.isUnresolved(stack.region) ? "unknown-region" : stack.region}`,
    }));
}
const realStacks = appStacks();
const realStack = (name: string) => realStacks.find((stack) => stack.stackName === name) as StackTemplate;
const deployedData = realStack(dataStackName);

/** Every finding of comparing the deployed production data stack with `release`. */
const findingsAgainst = (release: StackTemplate) => compareStack(deployedData, release).findings;

/** Every finding against production's table defined with `changes` to its props. */
const findingsWithTable = (changes: Partial<dynamodb.TablePropsV2>) =>
  findingsAgainst(
    dataStackWith((stack) => new dynamodb.TableV2(stack, "Table", { ...petTableProps(production), ...changes })),
  );
/** A key-schema change: the sort key renamed. */
const sortKeyRenamed = { sortKey: { name: "sortKey", type: dynamodb.AttributeType.STRING } };

describe("the release check refuses to lose the table", () => {
  it("fails when the table's construct is renamed: its new logical id is a new, empty table", () => {
    const findings = findingsAgainst(
      dataStackWith((stack) => new dynamodb.TableV2(stack, "PetTable", petTableProps(production))),
    );

    expect(findings).toEqual([
      expect.objectContaining({
        stack: dataStackName,
        logicalId: "TableCD117FA1",
        resourceType: "AWS::DynamoDB::GlobalTable",
        change: "remove",
      }),
    ]);
    expect(findings[0]?.detail).toMatch(
      /^removed from the template: CloudFormation leaves it in the account, outside the stack, managed by nothing \(DeletionPolicy RetainExceptOnCreate\); PetTable\w+ of the same type is added instead: a renamed or moved construct gets a new logical id/,
    );
    expect(judge(findings, []).failing).toHaveLength(1);
  });

  it("fails when the table moves into a wrapper construct, which changes its logical id too", () => {
    const findings = findingsAgainst(
      dataStackWith((stack) => new dynamodb.TableV2(new Construct(stack, "Data"), "Table", petTableProps(production))),
    );

    expect(findings.map((finding) => [finding.logicalId, finding.change])).toEqual([["TableCD117FA1", "remove"]]);
  });

  it("fails when the key schema changes (the sort key renamed): CloudFormation can only replace the table", () => {
    const findings = findingsWithTable(sortKeyRenamed);

    expect(findings).toEqual([expect.objectContaining({ logicalId: "TableCD117FA1", change: "replace" })]);
    expect(findings[0]?.detail).toMatch(
      /^would be replaced \(.*KeySchema.* changes\): CloudFormation creates a new, empty one and leaves the old one outside the stack/,
    );
  });

  it("fails when production's table is no longer retained nor deletion-protected", () => {
    const findings = findingsWithTable({ removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false });

    expect(findings.map((finding) => finding.change)).toEqual(["protection-weakened"]);
    expect(findings[0]?.detail).toContain("DeletionPolicy RetainExceptOnCreate becomes Delete");
    expect(findings[0]?.detail).toContain("UpdateReplacePolicy Retain becomes Delete");
    expect(findings[0]?.detail).toContain("deletion protection is switched off");
  });

  it("fails when a stack holding the table leaves the app: it is no longer deployed as it is", () => {
    const [comparison] = compareAssemblies([deployedData], []);

    expect(comparison?.status).toBe("removed");
    expect(comparison?.findings.map((finding) => [finding.logicalId, finding.change])).toEqual([
      ["TableCD117FA1", "remove"],
    ]);
    expect(comparison?.findings[0]?.detail).toContain("its stack is no longer in the app");
  });
});

describe("the release check refuses to lose data, or the means to restore it, in place", () => {
  /** Each finding as [logical id, kind, detail]. */
  const summarized = (findings: Finding[]) =>
    findings.map((finding) => [finding.logicalId, finding.change, finding.detail]);

  it("fails when point-in-time recovery is switched off", () => {
    const findings = findingsWithTable({ pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: false } });

    expect(summarized(findings)).toEqual([
      [
        "TableCD117FA1",
        "backup-weakened",
        "point-in-time recovery is switched off: its 35 days of continuous backups are deleted, and nothing is left to restore from",
      ],
    ]);
  });

  it("fails when point-in-time recovery keeps 1 day instead of 35", () => {
    const findings = findingsWithTable({
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true, recoveryPeriodInDays: 1 },
    });

    expect(summarized(findings)).toEqual([
      [
        "TableCD117FA1",
        "backup-weakened",
        "point-in-time recovery keeps 1 instead of 35 days: the table can no longer be restored to a time more than 1 day back",
      ],
    ]);
  });

  it("fails when a global secondary index is deleted", () => {
    const findings = findingsWithTable({ globalSecondaryIndexes: [] });

    expect(summarized(findings)).toEqual([
      [
        "TableCD117FA1",
        "index-removed",
        "global secondary index byStatus is deleted: queries on it fail at once, and adding it back builds it again from the whole table",
      ],
    ]);
  });

  it("fails when deletion protection alone is switched off", () => {
    expect(summarized(findingsWithTable({ deletionProtection: false }))).toEqual([
      ["TableCD117FA1", "protection-weakened", "deletion protection is switched off"],
    ]);
  });

  it("fails when the table is encrypted with another key (AWS's managed key instead of DynamoDB's own)", () => {
    const findings = findingsWithTable({ encryption: dynamodb.TableEncryptionV2.awsManagedKey() });

    expect(findings.map((finding) => [finding.logicalId, finding.change])).toEqual([
      ["TableCD117FA1", "encryption-changed"],
    ]);
    expect(findings[0]?.detail).toMatch(
      /^encryption changes \(SSESpecification \(none\) becomes \{"SSEEnabled":true,"SSEType":"KMS"\}\): whatever reads it must be able to use the new key/,
    );
  });

  it("fails when the time-to-live attribute changes, and when TTL is switched off", () => {
    expect(summarized(findingsWithTable({ timeToLiveAttribute: "ttl" }))).toEqual([
      [
        "TableCD117FA1",
        "ttl-changed",
        "the time-to-live attribute expiresAt becomes ttl: items that carry only expiresAt stop expiring, and items whose ttl holds a past time are deleted",
      ],
    ]);
    expect(summarized(findingsWithTable({ timeToLiveAttribute: undefined }))).toEqual([
      [
        "TableCD117FA1",
        "ttl-changed",
        "time to live on attribute expiresAt is switched off: items stop expiring and stay readable past their expiry",
      ],
    ]);
  });

  it("reports encryption changes on other stateful types: a log group's key", () => {
    const logGroup = (kmsKeyId?: string): StackTemplate =>
      stackTemplate("Logs", {
        Resources: { Logs: { Type: "AWS::Logs::LogGroup", Properties: { KmsKeyId: kmsKeyId } } },
      });

    const { findings } = compareStack(logGroup("arn:aws:kms:eu-west-1:111111111111:key/a"), logGroup(undefined));

    expect(summarized(findings)).toEqual([
      [
        "Logs",
        "encryption-changed",
        'encryption changes (KmsKeyId "arn:aws:kms:eu-west-1:111111111111:key/a" becomes (none)): whatever reads it must be able to use the new key, and what the old key encrypted (backups, exports, old versions) still needs the old one',
      ],
    ]);
  });
});

describe("a stage moved to another account or region", () => {
  const pinned = { "prod:account": "111111111111", "prod:region": "eu-west-1" };
  const deployed = appStacks(pinned);
  const production = (stacks: StackTemplate[]) =>
    stacks.filter((stack) => /^(Production-|PetStore-Account)/.test(stack.stackName) && stack.environment !== UNPINNED);

  it.each([
    ["region", { ...pinned, "prod:region": "us-east-1" }, "region us-east-1", "aws://111111111111/us-east-1"],
    ["account", { ...pinned, "prod:account": "222222222222" }, "account 222222222222", "aws://222222222222/eu-west-1"],
  ])(
    "is one finding per stateful resource, a new, empty one in the other %s, and no IAM widening",
    (_, context, where, to) => {
      const moved = appStacks(context);

      const comparisons = compareAssemblies(deployed, moved);
      const findings = comparisons.flatMap((comparison) => comparison.findings);

      const statefulInProduction = production(deployed).flatMap((stack) =>
        statefulResources(stack.template).map((resource) => [stack.stackName, resource.logicalId]),
      );
      expect(statefulInProduction.length).toBeGreaterThan(1);
      expect(findings.map((finding) => [finding.stack, finding.logicalId])).toEqual(
        expect.arrayContaining(statefulInProduction),
      );
      expect(findings).toHaveLength(statefulInProduction.length);
      expect(new Set(findings.map((finding) => finding.change))).toEqual(new Set(["moved"]));
      expect(findings.find((finding) => finding.logicalId === "TableCD117FA1")?.detail).toBe(
        `the stack moves from aws://111111111111/eu-west-1 to ${to}: the release creates a new, empty AWS::DynamoDB::GlobalTable in ${where}, and the deployed one stays in aws://111111111111/eu-west-1 with its data`,
      );
      expect(
        comparisons.filter((comparison) => comparison.status === "moved").map((comparison) => comparison.stackName),
      ).toEqual(
        production(moved)
          .map((stack) => stack.stackName)
          .sort(),
      );
    },
  );

  it("is no move when a stage is pinned for the first time", () => {
    const findings = compareAssemblies(realStacks, deployed).flatMap((comparison) => comparison.findings);

    expect(findings.filter((finding) => finding.change === "moved")).toEqual([]);
  });
});

describe("what the release check lets through", () => {
  it("passes the app against itself: every stack unchanged, nothing found", () => {
    const comparisons = compareAssemblies(realStacks, realStacks);

    expect(comparisons.map((comparison) => comparison.status)).toEqual(realStacks.map(() => "unchanged"));
    expect(comparisons.flatMap((comparison) => comparison.findings)).toEqual([]);
  });

  it("passes a code change of every function: new bundles and new versions replace nothing stateful", () => {
    // What a code change does to the service stack (as `npm run release-check` shows it): each
    // function's bundle has a new hash, and its version a new logical id that its alias points to.
    const deployed = realStack(serviceStackName);
    const text = JSON.stringify(deployed.template);
    const resources = deployed.template.Resources ?? {};
    const versions = Object.keys(resources).filter((id) => resources[id]?.Type === "AWS::Lambda::Version");
    const bundles = Object.values(resources)
      .filter((resource) => resource.Type === "AWS::Lambda::Function")
      .map((resource) => (resource.Properties?.Code as { S3Key?: string } | undefined)?.S3Key)
      .filter((key): key is string => key !== undefined);
    let changed = text;
    for (const id of versions) changed = changed.replaceAll(id, `${id.slice(0, -8)}c0dec4a6`);
    for (const key of bundles) changed = changed.replaceAll(key, `${"f".repeat(64)}.zip`);
    expect(versions.length).toBeGreaterThan(0);
    expect(bundles.length).toBeGreaterThan(0);

    const comparison = compareStack(deployed, stackTemplate(serviceStackName, JSON.parse(changed)));

    expect(comparison.status).toBe("changed");
    expect(comparison.findings).toEqual([]);
  });

  it("passes an acknowledged replacement, listing it with its reason, and reports an acknowledgement that matches nothing", () => {
    const findings = findingsWithTable(sortKeyRenamed);
    const acknowledgement: Acknowledgement = {
      stack: "*-PetStoreData",
      logicalId: "TableCD117FA1",
      change: "replace",
      reason: "The table is re-created empty on purpose; its data was exported to S3 first.",
    };
    const stale: Acknowledgement = { ...acknowledgement, change: "remove" };

    const verdict = judge(findings, [acknowledgement, stale]);

    expect(verdict.failing).toEqual([]);
    expect(verdict.acknowledged).toEqual([{ finding: findings[0], acknowledgement }]);
    expect(verdict.stale).toEqual([stale]);
  });

  it("passes a first release: with nothing deployed, every stack is new, its permissions too, and nothing is found", () => {
    const comparisons = compareAssemblies([], realStacks);

    expect(comparisons.map((comparison) => comparison.status)).toEqual(realStacks.map(() => "added"));
    expect(comparisons.every((comparison) => comparison.diff.permissionsBroadened)).toBe(false);
    expect(comparisons.some((comparison) => comparison.diff.permissionsBroadened)).toBe(true);
    expect(comparisons.flatMap((comparison) => comparison.findings)).toEqual([]);
  });
});

describe("access a release widens", () => {
  /** A deployed stack with one role reading the production table; `widen` changes what it may do. */
  function roleStack(widen: (table: dynamodb.ITableV2, role: iam.Role) => void): StackTemplate {
    const stack = new Stack(new App({ context: featureFlags, outdir: scratchDirectory() }), "Service", {
      stackName: serviceStackName,
    });
    const table = dynamodb.TableV2.fromTableName(stack, "Table", production.tableName);
    const role = new iam.Role(stack, "Reader", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
    widen(table, role);
    return stackTemplate(serviceStackName, Template.fromStack(stack).toJSON());
  }

  it("fails on a function given write access to the table, naming the policy and what it now grants", () => {
    const deployed = roleStack((table, role) => table.grantReadData(role));
    const release = roleStack((table, role) => table.grantReadWriteData(role));

    const { findings } = compareStack(deployed, release);

    expect(findings).toEqual([
      expect.objectContaining({
        change: "iam-widening",
        resourceType: "AWS::IAM::Policy",
        logicalId: expect.stringMatching(/^ReaderDefaultPolicy/),
      }),
    ]);
    // Only what it could not do before: reading stays as it was.
    expect(findings[0]?.detail).toMatch(/^grants Allow (dynamodb:\w+ )*dynamodb:PutItem .*on arn:/);
    expect(findings[0]?.detail).not.toContain("dynamodb:GetItem");
  });

  it("finds nothing when permissions narrow, although the statement changes", () => {
    const deployed = roleStack((table, role) => table.grantReadWriteData(role));
    const release = roleStack((table, role) => table.grantReadData(role));

    expect(compareStack(deployed, release).findings).toEqual([]);
  });

  it("fails on a security group rule opened to the internet", () => {
    const groupStack = (open: boolean) => {
      const stack = new Stack(new App({ context: featureFlags, outdir: scratchDirectory() }), "Service", {
        stackName: serviceStackName,
      });
      new ec2.CfnSecurityGroup(stack, "Group", {
        groupDescription: "functions",
        securityGroupIngress: open ? [{ ipProtocol: "tcp", fromPort: 22, toPort: 22, cidrIp: "0.0.0.0/0" }] : [],
      });
      return stackTemplate(serviceStackName, Template.fromStack(stack).toJSON());
    };

    const { findings } = compareStack(groupStack(false), groupStack(true));

    expect(findings).toEqual([expect.objectContaining({ logicalId: "Group", change: "security-group-widening" })]);
    expect(findings[0]?.detail).toBe("allows ingress TCP 22 from Everyone (IPv4)");
  });
});

describe("the run's summary", () => {
  it("shows the findings and each changed stack's diff as cdk diff formats it", () => {
    const release = dataStackWith((stack) => new dynamodb.TableV2(stack, "PetTable", petTableProps(production)));
    const comparisons = compareAssemblies([deployedData, realStack(serviceStackName)], [release]);
    const verdict = judge(
      comparisons.flatMap((comparison) => comparison.findings),
      [],
    );

    const markdown = markdownReport(comparisons, verdict, { head: "the working tree", base: "main (commit 0123)" });

    expect(markdown).toMatch(
      /^### Release check: the working tree against main \(commit 0123\)\n\nrelease-check: FAILED/,
    );
    expect(markdown).toContain(
      `- **FAIL** \`${dataStackName}\` \`TableCD117FA1\` (AWS::DynamoDB::GlobalTable), remove:`,
    );
    expect(markdown).toContain(`<details><summary>${dataStackName} (${UNPINNED}): 2 resource changes</summary>`);
    expect(markdown).toMatch(
      /```diff\n[^`]*\[-\] AWS::DynamoDB::GlobalTable TableCD117FA1 orphan\n\[\+\] AWS::DynamoDB::GlobalTable PetTable/,
    );
    expect(markdown).toContain(`<summary>${serviceStackName} (${UNPINNED}): no longer in the app</summary>`);
  });
});
