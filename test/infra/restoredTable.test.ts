/**
 * Switching a stage to a table restored by `npm run restore` (`<stage>:tableName` in cdk.json): the
 * service stack's functions, permissions, alarms and outputs point at the restored table, while the
 * data stack, and so the old table, stays exactly as it was: a normal deploy neither deletes nor
 * replaces it. The release check sees the switch as permissions moving to another table, which
 * must be acknowledged, and nothing stateful replaced or removed (docs/deploy.md, "Restoring the
 * table to a point in time").
 */
import { describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { deployedStages } from "../../infra/deployment";
import { compareStack, type StackTemplate } from "../../scripts/releaseCheck/compare";
import type { CfnTemplate } from "../../scripts/releaseCheck/stateful";
import { synthesizedStages } from "./app";

const RESTORED = "petstore-prod-restored-202605040930";
const { stackName, dataStackName, tableName } = deployedStages.prod;

const synthesize = (context: Record<string, unknown> = {}) => {
  const synthesized = synthesizedStages({ stages: [stageConfigs.Production], policyValidation: false, context });
  expect(synthesized.failure).toBeUndefined();
  return {
    service: synthesized.template("Production").toJSON() as CfnTemplate,
    data: synthesized.dataTemplate("Production").toJSON() as CfnTemplate,
  };
};
const before = synthesize();
const after = synthesize({ "prod:tableName": RESTORED });

/** How often a template names `name` (not as the start of a longer name). */
const mentions = (template: CfnTemplate, name: string) =>
  JSON.stringify(template).match(new RegExp(`${name}(?![\\w.-])`, "g"))?.length ?? 0;
const resourcesOf = (template: CfnTemplate, type: string) =>
  Object.values(template.Resources ?? {}).filter((resource) => resource.Type === type);

describe("a stage switched to a restored table", () => {
  it("gives every function the restored table's name", () => {
    const tableNames = resourcesOf(after.service, "AWS::Lambda::Function")
      .map(
        (fn) =>
          (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
            ?.PETS_TABLE_NAME,
      )
      .filter((name) => name !== undefined);
    // The API's functions; the synthetic check's get the name otherwise (next test).
    expect(tableNames.length).toBeGreaterThanOrEqual(3);
    expect(new Set(tableNames)).toEqual(new Set([RESTORED]));
  });

  it("grants the functions the restored table, and the original no longer", () => {
    const policies = JSON.stringify(resourcesOf(after.service, "AWS::IAM::Policy"));
    expect(policies).toContain(`:table/${RESTORED}`);
    expect(policies).toContain(`:table/${RESTORED}/index/byStatus`);
    expect(JSON.stringify(after.service)).not.toMatch(new RegExp(`table/${tableName}(?![\\w.-])`));
    expect(JSON.stringify(before.service)).not.toContain(RESTORED);
  });

  it("moves every mention of the table and nothing else (the API, firewall and alarms keep their petstore-prod names)", () => {
    const moved = mentions(after.service, RESTORED);
    expect(moved).toBeGreaterThan(0);
    expect(mentions(before.service, tableName) - mentions(after.service, tableName)).toBe(moved);
  });

  it("outputs the restored table's name, which npm run keys reads", () => {
    expect(after.service.Outputs).toMatchObject({ TableName: { Value: RESTORED } });
  });

  it("leaves the data stack, and the original table in it, exactly as it was", () => {
    expect(after.data).toEqual(before.data);
    const tables = Object.values(after.data.Resources ?? {}).filter((resource) =>
      /^AWS::DynamoDB::(Global)?Table$/.test(resource.Type),
    );
    expect(tables).toHaveLength(1);
    expect(tables[0]?.Properties?.TableName).toBe(tableName);
    expect(tables[0]?.DeletionPolicy).toBe("RetainExceptOnCreate");
  });

  it("is, to the release check, permissions moving to another table and nothing stateful replaced or removed", () => {
    const stack = (name: string, template: CfnTemplate): StackTemplate => ({
      stackName: name,
      environment: "aws://unknown-account/unknown-region",
      template,
    });
    const data = compareStack(stack(dataStackName, before.data), stack(dataStackName, after.data));
    expect(data.findings).toEqual([]);
    const service = compareStack(stack(stackName, before.service), stack(stackName, after.service));
    expect(service.findings.length).toBeGreaterThan(0);
    expect(new Set(service.findings.map((finding) => finding.change))).toEqual(new Set(["iam-widening"]));
  });
});
