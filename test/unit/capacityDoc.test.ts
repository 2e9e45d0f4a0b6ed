/** How docs/capacity.md's figures follow from a stage's config and the recorded measurements. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type StageConfig, stageConfigs } from "../../infra/config";
import {
  CAPACITY_DOC,
  ceilings,
  costLines,
  documentedInputs,
  renderCeilings,
  renderCost,
  unitPrices,
} from "../../scripts/bench/capacity";

const inputs = documentedInputs(readFileSync(CAPACITY_DOC, "utf8"));
const production = stageConfigs.Production;
const withApi = (config: StageConfig, throttlingRateLimit: number): StageConfig => ({
  ...config,
  api: { throttlingRateLimit, throttlingBurstLimit: throttlingRateLimit * 2 },
});
const bindsFirst = (markdown: string) =>
  markdown
    .split("\n")
    .find((line) => line.startsWith("| Binds first |"))
    ?.split("|")
    .map((cell) => cell.trim());

describe("a stage's ceilings", () => {
  it.each(Object.values(stageConfigs))(
    "puts the configured stage throttle first for every request in $id, as the page says",
    (config) => {
      const row = bindsFirst(renderCeilings(config, inputs));

      expect(row?.slice(3, 8)).toEqual(
        Array(5).fill(`**${config.api.throttlingRateLimit}** (API Gateway stage throttle)`),
      );
    },
  );

  it("has one production client meet its firewall limit below the stage throttle, as the page says", () => {
    const perClient = ceilings(production, inputs).filter((c) => c.perClient && c.resource.startsWith("AWS WAF"));
    const lowest = Math.min(...perClient.map((c) => c.perRequest.listPets ?? Infinity));

    expect(lowest).toBeLessThan(production.api.throttlingRateLimit);
  });

  it("puts DynamoDB's per-partition write limit first for creates once the throttle is above it", () => {
    const row = bindsFirst(renderCeilings(withApi(production, 5_000), inputs));

    expect(row?.[6]).toBe(
      "**1,000** (DynamoDB `PET` partition; DynamoDB `byStatus` index; DynamoDB id counter item (`COUNTER`))",
    );
    expect(row?.[3]).toBe("**3,000** (DynamoDB `PET` partition)");
  });

  it("divides a partition's limit by the units one request spends there", () => {
    const idempotent = ceilings(production, inputs).find((c) => c.resource.includes("idempotency partition"));
    const units = inputs.requests.requests.createPetIdempotent.areas.idempotencyRecords?.writeUnits ?? 0;

    expect(units).toBeGreaterThan(0);
    expect(idempotent?.perRequest.createPetIdempotent).toBeCloseTo(1_000 / units);
    expect(idempotent?.perClient).toBe(true);
  });

  it("lists the firewall's rate rules only for a stage that has a firewall", () => {
    const resources = (config: StageConfig) => ceilings(config, inputs).map((c) => c.resource);

    expect(resources(production).filter((name) => name.startsWith("AWS WAF"))).toHaveLength(2);
    expect(resources({ ...production, edgeProtection: undefined }).some((name) => name.startsWith("AWS WAF"))).toBe(
      false,
    );
  });
});

describe("a stage's cost per million requests", () => {
  it("charges DynamoDB for the measured read and write units, index writes included", () => {
    const dynamo = costLines(production, inputs).find((line) => line.item.startsWith("DynamoDB"));
    const create = inputs.requests.requests.createPet;

    expect(dynamo?.perMillion.createPet).toBeCloseTo(
      create.readUnits * unitPrices.dynamoPerMillionReadUnits +
        (create.writeUnits + create.indexWriteUnits) * unitPrices.dynamoPerMillionWriteUnits,
    );
  });

  it("charges Lambda for the measured duration rounded up to the millisecond at the stack's memory and architecture", () => {
    const duration = costLines(production, inputs).find((line) => line.item.startsWith("Lambda duration"));
    const stack = inputs.stacks.Production;
    const ms = Math.ceil(inputs.requests.requests.getPet.durationMs.p50);

    expect(stack?.memoryMb).toBe(production.functions.memoryMb);
    expect(duration?.perMillion.getPet).toBeCloseTo(
      (ms / 1000) *
        ((stack?.memoryMb ?? 0) / 1024) *
        unitPrices.lambdaPerGbSecond[stack?.architecture ?? "arm64"] *
        1e6,
    );
  });

  it("charges AWS WAF only where the stage has a firewall, and says when its prices were taken", () => {
    const items = (config: StageConfig) => costLines(config, inputs).map((line) => line.item);

    expect(items(production)).toContain("AWS WAF requests");
    expect(items(stageConfigs.Staging)).not.toContain("AWS WAF requests");
    expect(renderCost(production, inputs)).toContain(`prices as of ${unitPrices.asOf}`);
  });
});
