/**
 * The logical ids of every stateful resource, pinned: the table, the KMS keys, the secret, the log
 * groups and whatever the templates retain (scripts/releaseCheck/stateful.ts decides from the
 * templates, so a resource added later is covered without anyone listing it). CloudFormation knows a
 * resource only by its logical id, which the CDK derives from the construct's id and its place in the
 * tree: a construct renamed or moved is, to CloudFormation, a new, empty resource, and the old one is
 * deleted, or orphaned when retained. A new stateful resource, a renamed one or a changed deletion
 * policy fails here, with what to do; `npm run release-check` refuses the same in a release.
 */
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { type CfnTemplate, keepsData, statefulResources } from "../../scripts/releaseCheck/stateful";
import { synthesizedStages } from "./app";

/** Each stage's service stack holds the same resources; only what it keeps differs by stage. */
const serviceStack = (deletionPolicy: string) => ({
  AccessLogs8B620ECA: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  CreatePetLogs05953A9A: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  ExecutionLogs6FEE23C8: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  GetPetLogs4F231AC3: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  ListPetsLogs912AF886: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  LogsKeyB5D1D597: `AWS::KMS::Key, ${deletionPolicy}`,
  MonitoringAlarmTopicKeyFFA45DC9: `AWS::KMS::Key, ${deletionPolicy}`,
  // The synthetic check's own API key: deleted with the stack in both stages, since a deploy issues
  // a new one (infra/stacks/syntheticCheck.ts).
  SyntheticCheckApiKeyDAABB2A7: "AWS::SecretsManager::Secret, Delete",
  SyntheticCheckCheckFunctionLogsF10E767B: `AWS::Logs::LogGroup, ${deletionPolicy}`,
  SyntheticCheckKeyFunctionLogs82007FDE: `AWS::Logs::LogGroup, ${deletionPolicy}`,
});

/** CloudFormation stack name → logical id → "type, DeletionPolicy". */
const PINNED: Record<string, Record<string, string>> = {
  [deployedStages.staging.dataStackName]: { TableCD117FA1: "AWS::DynamoDB::GlobalTable, Delete" },
  [deployedStages.staging.stackName]: serviceStack("Delete"),
  [deployedStages.prod.dataStackName]: { TableCD117FA1: "AWS::DynamoDB::GlobalTable, RetainExceptOnCreate" },
  [deployedStages.prod.stackName]: serviceStack("RetainExceptOnCreate"),
  // The account-wide API Gateway setting and its role outlive the stack (infra/stacks/accountStack.ts).
  "PetStore-Account": {
    ApiGatewayAccount: "AWS::ApiGateway::Account, RetainExceptOnCreate",
    ApiGatewayCloudWatchRole86F22A4D: "AWS::IAM::Role, RetainExceptOnCreate",
  },
};

const { app } = synthesizedStages({ policyValidation: false });
const templates = new Map(
  app.node
    .findAll()
    .filter((construct): construct is Stack => Stack.isStack(construct))
    .map((stack) => [stack.stackName, Template.fromStack(stack).toJSON() as CfnTemplate]),
);
const actual = (stackName: string): Record<string, string> =>
  Object.fromEntries(
    statefulResources(templates.get(stackName) ?? {}).map((resource) => [
      resource.logicalId,
      `${resource.type}, ${resource.deletionPolicy}`,
    ]),
  );

/** What changed and what to do about it, for the failure message. */
function explain(stackName: string, found: Record<string, string>, pinned: Record<string, string>): string {
  const gone = Object.keys(pinned).filter((id) => found[id] === undefined);
  const added = Object.keys(found).filter((id) => pinned[id] === undefined);
  const changed = Object.keys(found).filter((id) => pinned[id] !== undefined && pinned[id] !== found[id]);
  return [
    `The stateful resources of ${stackName} are not the pinned ones.`,
    gone.length > 0 ? `Gone: ${gone.join(", ")}.` : "",
    added.length > 0 ? `New or renamed: ${added.join(", ")}.` : "",
    changed.length > 0 ? `Type or DeletionPolicy changed: ${changed.join(", ")}.` : "",
    "A renamed logical id (a construct renamed, or moved under another parent) makes CloudFormation create a new, empty resource and delete the old one, or orphan it when it is retained: its data is lost to the stack.",
    'Keep the logical id: restore the construct\'s id and place (or pin it with overrideLogicalId). If the change is deliberate, acknowledge it for the release gate in release-acknowledgements.json with a reason, and update PINNED in test/infra/statefulResources.test.ts (docs/deploy.md, "Stateful resources").',
    "A new stateful resource only needs adding to PINNED.",
  ]
    .filter(Boolean)
    .map((line) => `${line}\n`)
    .join("");
}

describe("stateful resources keep their logical ids", () => {
  it("pins every stack of the app", () => {
    expect([...templates.keys()].sort()).toEqual(Object.keys(PINNED).sort());
  });

  it.each(Object.keys(PINNED))("%s: the same stateful resources, under the same logical ids", (stackName) => {
    const found = actual(stackName);
    const pinned = PINNED[stackName] ?? {};

    expect(found, explain(stackName, found, pinned)).toEqual(pinned);
  });

  it("production keeps every stateful resource when deleted or replaced, except the secret a deploy re-issues", () => {
    const production = [deployedStages.prod.dataStackName, deployedStages.prod.stackName].flatMap((stackName) =>
      Object.entries(templates.get(stackName)?.Resources ?? {}).filter(([id]) => actual(stackName)[id] !== undefined),
    );
    const notKept = production
      .filter(([, resource]) => !keepsData(resource.DeletionPolicy) || !keepsData(resource.UpdateReplacePolicy))
      .map(([id]) => id);

    expect(production.length).toBeGreaterThan(0);
    expect(notKept).toEqual(["SyntheticCheckApiKeyDAABB2A7"]);
  });
});
