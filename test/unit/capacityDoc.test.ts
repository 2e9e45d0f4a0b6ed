/** How docs/capacity.md's figures follow from a stage's config and the recorded measurements. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type StageConfig, stageConfigs } from "../../infra/config";
import { LATER_DAY_ONLY } from "../../lib/auth/dynamoKeyUsageStore";
import { routes } from "../../lib/routes";
import {
  answerBytes,
  awsLimits,
  BUSY_COLD_SHARE,
  CAPACITY_DOC,
  COLD_START_SHARES,
  ceilings,
  coldStartCost,
  coldStartFigureId,
  coldStartLines,
  concurrencyFit,
  costLines,
  costTotals,
  documentedInputs,
  KEY_USE_RECORDS,
  keyUseCost,
  QUIET_COLD_SHARE,
  readColdStart,
  renderCeilings,
  renderConcurrency,
  renderCost,
  renderKeyUseCost,
  renderTrigger,
  SHARDING_TRIGGER,
  shardingTrigger,
  trafficLevels,
  unitPrices,
  xrayLines,
  xrayTracedShare,
} from "../../scripts/bench/capacity";
import { COSTED_KINDS, coldCaseOf } from "../../scripts/bench/costed";
import { figure, markdownTables, PAGE_MARKERS } from "../../scripts/bench/report";
import { BENCH_RUNTIMES } from "../../scripts/bench/runtimes";
import { MINIMUM_UNRESERVED_CONCURRENCY } from "../../scripts/preflight/checks";

const page = readFileSync(CAPACITY_DOC, "utf8");
const inputs = documentedInputs(page);
const production = stageConfigs.Production;
const withApi = (config: StageConfig, throttlingRateLimit: number): StageConfig => ({
  ...config,
  api: { throttlingRateLimit, throttlingBurstLimit: throttlingRateLimit * 2 },
});
const configs = Object.values(stageConfigs);
/** The cells of the "Binds first" row for a stage: its own row, or the one every stage shares. */
const bindsFirst = (markdown: string, stageId: string) =>
  markdown
    .split("\n")
    .find((line) => line.startsWith(`| Binds first, ${stageId} |`) || line.startsWith("| Binds first |"))
    ?.split("|")
    .map((cell) => cell.trim());

describe("a stage's ceilings", () => {
  it.each(Object.values(stageConfigs))(
    "puts the configured stage throttle first for every request in $id, as the page says",
    (config) => {
      const row = bindsFirst(renderCeilings(configs, inputs), config.id);

      expect(row?.slice(2, 7)).toEqual(
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
    const raised = configs.map((config) => (config.id === production.id ? withApi(production, 5_000) : config));
    const row = bindsFirst(renderCeilings(raised, inputs), production.id);

    expect(row?.[5]).toBe("**1,000** (DynamoDB `PET` partition; DynamoDB `byStatus` partition; DynamoDB id counter)");
    expect(row?.[2]).toBe("**3,000** (DynamoDB `PET` partition)");
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
    expect(renderCost(configs, inputs)).toContain(`prices as of ${unitPrices.asOf}`);
  });
});

describe("what traffic adds to the cost", () => {
  it("traces every request at one a second or less, and the reservoir plus 5% of the rest above", () => {
    expect(xrayTracedShare(0.2)).toBe(1);
    expect(xrayTracedShare(1)).toBe(1);
    expect(xrayTracedShare(10)).toBeCloseTo((1 + 0.05 * 9) / 10);
    expect(xrayTracedShare(100)).toBeCloseTo(0.0595);
    expect(xrayTracedShare(1e6)).toBeCloseTo(0.05, 4);
  });

  it("prices X-Ray per trace recorded at each traffic level, none above what the stage's throttles let through", () => {
    for (const config of Object.values(stageConfigs)) {
      const lines = xrayLines(config, inputs);
      const most = config.api.throttlingRateLimit * 3;

      expect(lines.map((line) => line.requestsPerSecond)).toEqual(trafficLevels(config));
      expect(Math.max(...trafficLevels(config))).toBeLessThanOrEqual(most);
      for (const line of lines) {
        expect(line.perMillion.getPet).toBeCloseTo(
          xrayTracedShare(line.requestsPerSecond) * unitPrices.xrayPerMillionTracesRecorded,
        );
      }
    }
    expect(trafficLevels(stageConfigs.Staging)).toEqual([1, 60]);
  });

  it("bills a cold start's first response, rounded up, beyond a warm request, at the stage's memory and architecture", () => {
    const stack = inputs.stacks.Production;
    const perMs =
      (production.functions.memoryMb / 1024 / 1000) * unitPrices.lambdaPerGbSecond[stack?.architecture ?? "arm64"];
    const firstResponseMs = inputs.coldStart.firstResponseMs.createPet ?? Number.NaN;
    const cost = coldStartCost(production, inputs, "createPet");
    const warmMs = Math.ceil(inputs.requests.requests.createPet.durationMs.p50);

    expect(stack?.memoryMb).toBe(production.functions.memoryMb);
    expect(cost.coldBilledMs).toBe(Math.ceil(firstResponseMs));
    expect(cost.extraDollars).toBeCloseTo((Math.ceil(firstResponseMs) - warmMs) * perMs, 12);
    const lines = coldStartLines(production, inputs);
    expect(lines.map((line) => line.share)).toEqual([...COLD_START_SHARES]);
    expect(lines.at(-1)?.perMillion.createPet).toBeCloseTo(1e6 * cost.extraDollars);
  });

  it("prices the idempotent create's cold start on its own bench case, and a list by status on the list's", () => {
    const billed = (kind: "createPetIdempotent" | "listPetsByStatus", kase: string) => {
      const ms = inputs.coldStart.firstResponseMs[kase] ?? Number.NaN;
      expect(coldStartCost(production, inputs, kind).coldBilledMs).toBe(Math.ceil(ms));
    };

    expect(coldCaseOf("createPetIdempotent")).toBe("createPetIdempotent");
    billed("createPetIdempotent", "createPetIdempotent");
    billed("listPetsByStatus", "listPets");
    expect(() =>
      coldStartCost(production, { ...inputs, coldStart: { ...inputs.coldStart, firstResponseMs: {} } }, "getPet"),
    ).toThrow("docs/capacity.md records no cold start of getPet: run npm run bench:capacity");
  });

  it("prices data transfer out on the answer's body and headers and API Gateway's part", () => {
    const transfer = costLines(production, inputs).find((line) => line.item.startsWith("Data transfer out"));
    const { bodyBytes, headerBytes } = inputs.requests.requests.listPets.response;

    expect(answerBytes("listPets", inputs)).toBeGreaterThan(bodyBytes + headerBytes);
    expect(transfer?.perMillion.listPets).toBeCloseTo(
      (answerBytes("listPets", inputs) * 1e6 * unitPrices.dataTransferOutPerGb) / 2 ** 30,
    );
    // A page of 20 pets is over a KB: the audit's "about $0.05-0.20 per million" holds.
    expect(transfer?.perMillion.listPets).toBeGreaterThan(0.05);
    expect(transfer?.perMillion.listPets).toBeLessThan(0.2);
  });

  it("adds to each total the lines of its traffic level and cold-start share, and nothing else", () => {
    const every = costLines(production, inputs);
    const [busy, quiet] = costTotals(production, inputs);
    const top = Math.max(...trafficLevels(production));
    const line = (lines: { item: string; perMillion: Record<string, number> }[], kind: string) =>
      lines.reduce((sum, l) => sum + (l.perMillion[kind] ?? 0), 0);
    const xray = (rps: number) => xrayLines(production, inputs).filter((l) => l.requestsPerSecond === rps);
    const cold = (share: number) => coldStartLines(production, inputs).filter((l) => l.share === share);

    expect(busy?.perMillion.getPet).toBeCloseTo(
      line(every, "getPet") + line(xray(top), "getPet") + line(cold(BUSY_COLD_SHARE), "getPet"),
    );
    expect(quiet?.perMillion.getPet).toBeCloseTo(
      line(every, "getPet") + line(xray(1), "getPet") + line(cold(QUIET_COLD_SHARE), "getPet"),
    );
  });
});

describe("the account's Lambda concurrency quota", () => {
  const apiFunctions = 3;

  it("lets a stage deploy only where its reservations leave Lambda's 100 unreserved", () => {
    for (const config of Object.values(stageConfigs)) {
      const needed = apiFunctions * config.functions.reservedConcurrency + 2;
      expect(concurrencyFit(config, needed + MINIMUM_UNRESERVED_CONCURRENCY).fits).toBe(true);
      expect(concurrencyFit(config, needed + MINIMUM_UNRESERVED_CONCURRENCY - 1).fits).toBe(false);
      expect(concurrencyFit(config, 10)).toMatchObject({ fits: false, largestPerFunction: 0 });
    }
    expect(concurrencyFit(stageConfigs.Staging, 400).fits).toBe(true);
    expect(concurrencyFit(production, 400)).toMatchObject({ fits: false, quotaNeeded: 702, largestPerFunction: 99 });
  });

  it("shows on the page what binds with a quota of 10 and of 400, and the commands that read the account's", () => {
    const table = renderConcurrency(Object.values(stageConfigs));

    expect(table).toMatch(/^\| 10 \| 0 \| \*\*refused\*\*.*\| \*\*refused\*\*.*$/m);
    expect(table).toMatch(/^\| 400 \| 300 \| deploys .*\| \*\*refused\*\*: needs a quota of 702/m);
    expect(page.includes(table), "run npm run bench:capacity").toBe(true);
    expect(page).toContain("aws service-quotas get-service-quota --service-code lambda --quota-code L-B99A9384");
    expect(page).toContain("aws lambda get-account-settings");
    expect(page).toContain("AccountLimit.ConcurrentExecutions");
    expect(page).toContain("UnreservedConcurrentExecutions");
  });
});

describe("the trigger past the first ceiling", () => {
  it("fires on a creates rate below production's POST throttle, as infra/config.ts sets it", () => {
    const trigger = shardingTrigger(production);

    expect(trigger.postThrottle).toBe(production.api.throttlingRateLimit);
    expect(trigger.createsPerSecond).toBeGreaterThan(0);
    expect(trigger.createsPerSecond).toBeLessThan(production.api.throttlingRateLimit);
    expect(trigger.createsPerPeriod).toBe(trigger.createsPerSecond * 300);
    expect(trigger.periods * 5).toBeGreaterThanOrEqual(SHARDING_TRIGGER.sustainedMinutes);
  });

  it("names the metric and the access-log query that show it, on the page", () => {
    const text = renderTrigger(production);

    expect(text).toContain(`at ${shardingTrigger(production).createsPerSecond} per second or more`);
    expect(text).toContain("`PetsCreated`");
    expect(text).toContain('errorType = "THROTTLED"');
    expect(page.includes(text), "run npm run bench:capacity").toBe(true);
    expect(page).not.toMatch(/above a third of the measured ceiling/);
  });
});

describe("the cold-start figures, read from the bench's published page", () => {
  const lambda = BENCH_RUNTIMES.find((runtime) => runtime.name === "lambda")?.version;
  const publish = (rows: [id: string, value: number, runtime?: string][]) =>
    `${PAGE_MARKERS.start}\n\n${markdownTables(
      rows.map(([id, value, runtime = lambda]) =>
        figure({ id, section: "2 Cold start", runtime, label: id, value, unit: "ms", method: "test" }),
      ),
    )}\n\n${PAGE_MARKERS.end}`;
  const cases = ["listPets", "getPet", "createPet", "createPetIdempotent"];
  const complete: [string, number][] = [
    ["coldStart.node24.nodeStartMs", 24],
    ...cases.map((kase, i): [string, number] => [coldStartFigureId(kase), 100.5 + i]),
  ];

  it("takes each case's cold first response on Lambda's Node, and Node's start, from the page", () => {
    const read = readColdStart(publish(complete));

    expect(coldStartFigureId("getPet")).toBe("coldStart.node24.getPet.oursMs");
    expect(read.firstResponseMs).toEqual({
      listPets: 100.5,
      getPet: 101.5,
      createPet: 102.5,
      createPetIdempotent: 103.5,
    });
    expect(read.nodeStartMs).toBe(24);
    expect(read.source).toBe(`docs/performance.md, coldStart.node24.<operation>.oursMs, on Node ${lambda}`);
  });

  it("fails with one line naming the figure when the page lacks one, or has it from another Node", () => {
    const without = complete.filter(([id]) => id !== coldStartFigureId("listPets"));
    const stale = complete.map(([id, value]): [string, number, string] => [id, value, "v22.19.0"]);

    expect(() => readColdStart(publish(without))).toThrow(
      /^docs\/performance\.md has no coldStart\.node24\.listPets\.oursMs: run npm run bench$/,
    );
    expect(() => readColdStart("# Performance\n")).toThrow("docs/performance.md has no coldStart.node24.");
    expect(() => readColdStart(publish(stale))).toThrow(
      `docs/performance.md has coldStart.node24.listPets.oursMs on Node v22.19.0, not ${lambda}: run npm run bench`,
    );
  });
});

describe("the cold-start cost the page sums up in words", () => {
  it("bounds what its tables say a million cold starts add, for every request", () => {
    // A bound rather than the run's range: the tables move with every bench run, the sentence need not.
    const [, bound] = /Cold starts add under \$(\d+) per million/.exec(page) ?? [];
    const rows = page.split("\n").filter((line) => line.startsWith("| Cold starts in every request"));
    const added = rows.flatMap((row) => [...row.matchAll(/\$(\d+\.\d+)/g)].map((match) => Number(match[1])));
    const computed = configs.flatMap((config) =>
      COSTED_KINDS.map((kind) => 1e6 * coldStartCost(config, inputs, kind).extraDollars),
    );

    // One row when the stages bill alike, else one a stage: every stage's figure for every request is on the page.
    expect(added.length).toBe(rows.length * COSTED_KINDS.length);
    expect(added.length).toBeGreaterThan(0);
    expect(bound).toBeDefined();
    expect(Math.max(...added, ...computed)).toBeLessThan(Number(bound));
  });
});

describe("keys' last-use records", () => {
  const operations = Object.keys(routes).length;

  it.each(Object.values(stageConfigs))(
    "costs $id a write unit per key and operation a day in one container, and one per reserved container at most",
    (config) => {
      const cost = keyUseCost(config);
      const monthOf = (unitsPerKeyDay: number) =>
        (unitsPerKeyDay * KEY_USE_RECORDS.keys * KEY_USE_RECORDS.daysPerMonth * unitPrices.dynamoPerMillionWriteUnits) /
        1e6;

      expect(cost.unitsPerKeyDay).toEqual({
        fewest: operations,
        most: operations * config.functions.reservedConcurrency,
      });
      expect(cost.month.fewest).toBeCloseTo(monthOf(operations), 9);
      expect(cost.month.most).toBeCloseTo(monthOf(operations * config.functions.reservedConcurrency), 9);
    },
  );

  it("keeps the KEYUSE partition below its write limit at every stage's throttle, as the page says", () => {
    for (const config of Object.values(stageConfigs)) {
      expect(keyUseCost(config).peakWritesPerSecond).toBe(operations * config.api.throttlingRateLimit);
      expect(keyUseCost(config).peakWritesPerSecond).toBeLessThan(awsLimits.partitionWriteUnitsPerSecond);
    }
  });

  it("shows the figures and the write price they use on the page", () => {
    expect(page.includes(renderKeyUseCost(Object.values(stageConfigs))), "run npm run bench:capacity").toBe(true);
    expect(page).toContain(`$${unitPrices.dynamoPerMillionWriteUnits} per million`);
    expect(page).toContain(`about ${KEY_USE_RECORDS.itemBytes} bytes per key and operation`);
    expect(page).toContain(`\`${LATER_DAY_ONLY}\``);
  });
});
