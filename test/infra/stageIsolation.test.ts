/**
 * Stages that share an account cannot starve each other, and every resource says which stage it
 * belongs to: each function's reserved concurrency (infra/config.ts), the project and stage tags on
 * every stack and taggable resource (infra/tags.ts), in a two-account and a one-account synthesis.
 * Built without bundling: only the templates are read.
 */

import { readFileSync } from "node:fs";
import { CfnResource, TagManager } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import type { Construct } from "constructs";
import { describe, expect, it } from "vitest";
import { buildApp } from "../../infra/app";
import { BACKGROUND_RESERVED_CONCURRENCY, stageConfigs, stageReservedConcurrency } from "../../infra/config";
import { routeList } from "../../lib/routes";
import { scratchDirectory } from "../support/scratch";
import { featureFlags } from "./app";

const noBundling = { "aws:cdk:bundling-stacks": [] };
/** Lambda keeps this many executions of an account unreserved; the default quota is 1,000. */
const UNRESERVED_MINIMUM = 100;
const DEFAULT_ACCOUNT_CONCURRENCY = 1000;

const configurations: [string, Record<string, string>][] = [
  [
    "two accounts",
    {
      "staging:account": "111111111111",
      "staging:region": "eu-west-1",
      "prod:account": "222222222222",
      "prod:region": "eu-west-1",
      "prod:alarmEmails": "ops@example.com",
    },
  ],
  [
    "one account",
    {
      "staging:account": "111111111111",
      "staging:region": "eu-west-1",
      "prod:account": "111111111111",
      "prod:region": "eu-west-1",
      "prod:alarmEmails": "ops@example.com",
    },
  ],
];

/** A template's tag list or map as a plain object. */
function tagsOf(resource: { Properties?: { Tags?: unknown } }): Record<string, string> {
  const tags = resource.Properties?.Tags;
  if (Array.isArray(tags)) {
    return Object.fromEntries((tags as { Key: string; Value: string }[]).map((tag) => [tag.Key, tag.Value]));
  }
  return (tags ?? {}) as Record<string, string>;
}

describe.each(configurations)("stages in %s", (_, settings) => {
  const { app, stages } = buildApp({
    context: { ...featureFlags, ...noBundling, ...settings, githubRepository: "octo-org/pets" },
    policyValidation: false,
    outdir: scratchDirectory(),
  });
  const stacks = app.node.findAll().filter((node) => node instanceof CfnResource);
  const reserved = (stage: (typeof stages)[number]) =>
    Object.values(Template.fromStack(stage.stack).findResources("AWS::Lambda::Function")).map(
      (fn) => fn.Properties.ReservedConcurrentExecutions as number | undefined,
    );

  it("reserves each API function the stage's burst share, and each background function one execution", () => {
    for (const stage of stages) {
      const values = reserved(stage);
      const { reservedConcurrency } = stage.config.functions;

      expect(values.filter((value) => value === reservedConcurrency)).toHaveLength(routeList.length);
      expect(values.filter((value) => value === BACKGROUND_RESERVED_CONCURRENCY)).toHaveLength(
        values.length - routeList.length,
      );
      expect(values.reduce<number>((sum, value) => sum + (value ?? 0), 0)).toBe(
        stageReservedConcurrency(stage.config, routeList.length),
      );
    }
  });

  it("fits both stages' reservations in one account's default quota, leaving Lambda's unreserved minimum, as docs/deploy.md says", () => {
    const total = stages.reduce((sum, stage) => sum + stageReservedConcurrency(stage.config, routeList.length), 0);
    const deploy = readFileSync(new URL("../../docs/deploy.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const [staging, production] = [stageConfigs.Staging, stageConfigs.Production];

    expect(total + UNRESERVED_MINIMUM).toBeLessThanOrEqual(DEFAULT_ACCOUNT_CONCURRENCY);
    expect(deploy).toContain(
      `${staging.functions.reservedConcurrency} per API function in staging, ${production.functions.reservedConcurrency} in production`,
    );
    expect(deploy).toContain(
      `throttled at staging's ${stageReservedConcurrency(staging, routeList.length)} executions`,
    );
    expect(deploy).toContain(`Both stages reserve ${total} of the default 1,000`);
  });

  it("tags every stack with the project and the stage(s) it serves", () => {
    const allStacks = app.node.findAll().filter((node) => "templateOptions" in node) as unknown as {
      node: Construct["node"];
      tags: TagManager;
      stackName: string;
    }[];

    expect(allStacks.length).toBeGreaterThanOrEqual(5);
    for (const stack of allStacks) {
      const tags = stack.tags.tagValues();
      expect(tags.project, stack.stackName).toBe("petstore");
      expect(tags.stage, stack.stackName).toMatch(/^(staging|prod|staging\+prod)$/);
    }
    for (const stage of stages) {
      expect(stage.stack.tags.tagValues()).toEqual({ project: "petstore", stage: stage.config.stage });
      expect(stage.dataStack.tags.tagValues()).toEqual({ project: "petstore", stage: stage.config.stage });
    }
  });

  it("tags every taggable resource of each stage with the project and that stage", () => {
    let checked = 0;
    for (const stage of stages) {
      for (const stack of [stage.stack, stage.dataStack]) {
        const resources = Template.fromStack(stack).toJSON().Resources as Record<
          string,
          { Type: string; Properties?: { Tags?: unknown } }
        >;
        const taggable = stack.node
          .findAll()
          .filter((node): node is CfnResource => node instanceof CfnResource && TagManager.of(node) !== undefined)
          .map((node) => stack.getLogicalId(node));
        for (const logicalId of taggable) {
          const resource = resources[logicalId];
          if (!resource) continue; // removed from the template (the API's own Endpoint output's siblings)
          expect(tagsOf(resource), `${stack.stackName} ${logicalId} (${resource.Type})`).toMatchObject({
            project: "petstore",
            stage: stage.config.stage,
          });
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(stacks.length).toBeGreaterThan(checked);
  });

  it("tags each stage's table, whose tags live on its replica", () => {
    for (const stage of stages) {
      const [table] = Object.values(Template.fromStack(stage.dataStack).findResources("AWS::DynamoDB::GlobalTable"));
      const [replica] = (table?.Properties.Replicas ?? []) as { Properties?: { Tags?: unknown } }[];

      expect(tagsOf({ Properties: replica as { Tags?: unknown } })).toEqual({
        project: "petstore",
        stage: stage.config.stage,
      });
    }
  });
});
