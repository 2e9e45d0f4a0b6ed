/**
 * docs/capacity.md against its sources: every generated part must be what the stage config and
 * the recorded inputs render to, and the recorded request units, log lines, answer bytes and stack
 * facts must be what a fresh measurement on dynalite gives (request units are deterministic).
 * Durations are recorded by npm run bench:capacity and not re-measured here; the cold-start
 * figures must be the ones npm run bench last published in docs/performance.md.
 */
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { routes } from "../../lib/routes";
import {
  CAPACITY_DOC,
  type CapacityInputs,
  documentedInputs,
  readColdStart,
  renderSections,
  replaceSections,
  stackFacts,
} from "../../scripts/bench/capacity";
import { COSTED_KINDS, coldCaseOf } from "../../scripts/bench/costed";
import { PAGE } from "../../scripts/bench/report";
import { measureRequestCost, type RequestCostResult } from "../../scripts/bench/requestCost";

const REGENERATE = "run npm run bench:capacity and commit docs/capacity.md";

describe("docs/capacity.md", () => {
  const document = readFileSync(CAPACITY_DOC, "utf8");
  const recorded: CapacityInputs = documentedInputs(document);
  let fresh: RequestCostResult;

  beforeAll(async () => {
    fresh = await measureRequestCost({ samples: 1 });
  }, 120_000);

  it("shows in every generated part what the stage config and its recorded inputs render to", () => {
    const rendered = replaceSections(document, renderSections(Object.values(stageConfigs), recorded));

    expect(rendered, REGENERATE).toBe(document);
  });

  it.each(COSTED_KINDS)("records the DynamoDB calls and request units %s uses now", (kind) => {
    const { calls, readUnits, writeUnits, indexWriteUnits, areas } = fresh.requests[kind];
    const documented = recorded.requests.requests[kind];

    expect({ calls, readUnits, writeUnits, indexWriteUnits, areas }, REGENERATE).toEqual({
      calls: documented.calls,
      readUnits: documented.readUnits,
      writeUnits: documented.writeUnits,
      indexWriteUnits: documented.indexWriteUnits,
      areas: documented.areas,
    });
    expect(fresh.keyLookup, REGENERATE).toEqual(recorded.requests.keyLookup);
  });

  it.each(COSTED_KINDS)(
    "records the log lines %s writes per request in each stage, to within the few bytes a latency's digits vary",
    (kind) => {
      for (const stageId of Object.keys(stageConfigs)) {
        const now = fresh.requests[kind].logs[stageId];
        const documented = recorded.requests.requests[kind].logs[stageId];
        expect(now?.events, REGENERATE).toBe(documented?.events);
        expect(Math.abs((now?.bytes ?? 0) - (documented?.bytes ?? 0)), REGENERATE).toBeLessThanOrEqual(12);
      }
    },
  );

  it.each(COSTED_KINDS)(
    "records the bytes of the answer %s gives, to within the few bytes an id's or a name's digits vary",
    (kind) => {
      const now = fresh.requests[kind].response;
      const documented = recorded.requests.requests[kind].response;

      expect(documented.bodyBytes).toBeGreaterThan(0);
      expect(Math.abs(now.bodyBytes - documented.bodyBytes), REGENERATE).toBeLessThanOrEqual(12);
      expect(Math.abs(now.headerBytes - documented.headerBytes), REGENERATE).toBeLessThanOrEqual(12);
    },
  );

  it("records the cold-start figures docs/performance.md publishes now, for every function and costed request", () => {
    const published = readColdStart(readFileSync(new URL(`../../${PAGE}`, import.meta.url), "utf8"));

    expect(recorded.coldStart, REGENERATE).toEqual(published);
    const cases = Object.keys(recorded.coldStart.firstResponseMs);
    expect(cases).toEqual([...new Set(COSTED_KINDS.map(coldCaseOf))]);
    expect(cases).toEqual(expect.arrayContaining(Object.keys(routes)));
  });

  it("records a measured duration for every request", () => {
    for (const request of Object.values(recorded.requests.requests)) {
      expect(request.durationMs.p50).toBeGreaterThan(0);
      expect(request.durationMs.p90).toBeGreaterThanOrEqual(request.durationMs.p50);
    }
  });

  it("records the stacks' architecture, memory, tracing, concurrency and firewall rules as the app builds them", async () => {
    expect(await stackFacts(), REGENERATE).toEqual(recorded.stacks);
  });
});
