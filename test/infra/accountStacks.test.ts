/**
 * The account stack a stage deploys into is found by one documented selector per stage
 * (`npx cdk deploy 'PetStore-Account-*Production*'`), whatever is pinned where: the selector the
 * pipeline (scripts/deliveryStage.ts) and docs/deploy.md use matches exactly the account stack in
 * that stage's account and region, in every pinning combination. Stacks are built, not synthesised
 * (no bundling): only their ids and environments are looked at.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app";
import { ACCOUNT_STACK_NAME, accountStackSelector, deployedStages } from "../../infra/deployment";
import { AccountStack } from "../../infra/stacks/accountStack";
import { scratchDirectory } from "../support/scratch";
import { featureFlags } from "./app";

const noBundling = { "aws:cdk:bundling-stacks": [] };
const pin = (stage: "staging" | "prod", account: string, region: string) => ({
  [`${stage}:account`]: account,
  [`${stage}:region`]: region,
});

/**
 * The CDK CLI's stack selection: a glob over the stack's id (hierarchical id), where `*` matches any
 * characters but `/` (minimatch, as the CLI uses it). Patterns here only use `*`.
 */
const selects = (selector: string, id: string) =>
  new RegExp(
    `^${selector
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join("[^/]*")}$`,
  ).test(id);

const combinations: [string, Record<string, string>][] = [
  ["nothing pinned", {}],
  ["only production pinned", pin("prod", "222222222222", "eu-west-1")],
  ["only staging pinned", pin("staging", "111111111111", "eu-west-1")],
  [
    "both stages in one account and region",
    { ...pin("staging", "111111111111", "eu-west-1"), ...pin("prod", "111111111111", "eu-west-1") },
  ],
  [
    "one account per stage",
    { ...pin("staging", "111111111111", "eu-west-1"), ...pin("prod", "222222222222", "eu-west-1") },
  ],
  [
    "one account, a region per stage",
    { ...pin("staging", "111111111111", "eu-west-1"), ...pin("prod", "111111111111", "us-east-2") },
  ],
];

describe.each(combinations)("account stacks with %s", (_, settings) => {
  const { app, stages } = buildApp({
    context: { ...featureFlags, ...noBundling, ...settings },
    outdir: scratchDirectory(),
  });
  const accountStacks = app.node.children.filter((child): child is AccountStack => child instanceof AccountStack);
  const environmentOf = (stack: { account: string; region: string }) => `${stack.account}/${stack.region}`;

  it.each(Object.values(deployedStages))(
    "selects exactly the $id stage's account stack, in its account and region",
    (deployed) => {
      const stage = stages.find((candidate) => candidate.node.id === deployed.id);
      if (!stage) throw new Error(`no stage ${deployed.id}`);

      const selected = accountStacks.filter((stack) => selects(accountStackSelector(deployed), stack.node.id));

      expect(selected).toHaveLength(1);
      expect(environmentOf(selected[0] as AccountStack)).toBe(environmentOf(stage.stack));
    },
  );

  it("has one account stack per account and region, each named PetStore-Account in CloudFormation", () => {
    const environments = new Set(stages.map((stage) => environmentOf(stage.stack)));

    expect(accountStacks).toHaveLength(environments.size);
    for (const stack of accountStacks) expect(stack.stackName).toBe(ACCOUNT_STACK_NAME);
  });
});

describe("the documented account stack selectors", () => {
  it("are the ones docs/deploy.md, docs/delivery.md and the README tell people to deploy", () => {
    for (const doc of ["docs/deploy.md", "docs/delivery.md", "README.md"]) {
      const text = readFileSync(new URL(`../../${doc}`, import.meta.url), "utf8");
      const deploys = [...text.matchAll(/npx cdk deploy '?(PetStore-Account[^\s']*)'?/g)].map((match) => match[1]);
      expect(deploys.length, doc).toBeGreaterThan(0);
      for (const selector of deploys) {
        expect(Object.values(deployedStages).map(accountStackSelector), `${doc}: ${selector}`).toContain(selector);
      }
    }
  });
});
