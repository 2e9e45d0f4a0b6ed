/**
 * `npm run bench:capacity`: each stage's capacity and cost on paper (docs/capacity.md). The stage facts come from
 * infra/config.ts and the stacks built from it; the per-request facts are measured on dynalite (./requestCost.ts);
 * AWS's limits and unit prices are below, each with its source. The command measures, rewrites the generated parts of
 * docs/capacity.md and prints them; test/integration/capacityDoc.test.ts checks the page against the config and a fresh
 * measurement.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type StageConfig, stageReservedConcurrency } from "../../infra/config";
import { CREATES_NEAR_THROTTLE } from "../../infra/stacks/monitoring";
import type { TableArea } from "../../lib/db/table";
import { metricNames } from "../../lib/observability/metrics";
import { routes } from "../../lib/routes";
import { MINIMUM_UNRESERVED_CONCURRENCY } from "../preflight/checks";
import { COSTED_KINDS, COSTED_REQUESTS, type CostedRequest, coldCaseOf, LOG_EVENT_OVERHEAD_BYTES } from "./costed";
import { PAGE, readPublishedFigures } from "./report";
import type { RequestCostResult } from "./requestCost";
import { BENCH_RUNTIMES, type BenchRuntime, HOST_RUNTIME, rerunOnHost } from "./runtimes";

export const CAPACITY_DOC = new URL("../../docs/capacity.md", import.meta.url);
/** AWS's limits on the request path, as documented: a fresh account's defaults. */
export const awsLimits = {
  /** https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html */
  partitionWriteUnitsPerSecond: 1_000,
  partitionReadUnitsPerSecond: 3_000,
  /** Per account and region; new accounts start lower (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). */
  lambdaAccountConcurrency: 1_000,
  /** Per account and region, shared by every API (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html). */
  apiGatewayAccountRequestsPerSecond: 10_000,
  apiGatewayAccountBurst: 5_000,
} as const;

/**
 * Unit prices in US dollars, us-east-1, first pricing tier, as published on the date below at
 * https://aws.amazon.com/lambda/pricing/, https://aws.amazon.com/api-gateway/pricing/,
 * https://aws.amazon.com/dynamodb/pricing/on-demand/, https://aws.amazon.com/waf/pricing/,
 * https://aws.amazon.com/cloudwatch/pricing/, https://aws.amazon.com/xray/pricing/,
 * https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer, https://aws.amazon.com/kms/pricing/ and
 * https://aws.amazon.com/secrets-manager/pricing/. Prices change (DynamoDB on-demand halved on 2024-11-01): re-check
 * them before using the figures for a decision.
 */
export const unitPrices = {
  asOf: "2025-06-01",
  region: "us-east-1",
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecond: { arm64: 0.0000133334, x86_64: 0.0000166667 },
  apiGatewayRestPerMillionRequests: 3.5,
  dynamoPerMillionReadUnits: 0.125,
  dynamoPerMillionWriteUnits: 0.625,
  dynamoPerGbMonthStored: 0.25,
  wafPerMillionRequests: 0.6,
  wafPerWebAclMonth: 5,
  wafPerRuleMonth: 1,
  logsPerGbIngested: 0.5,
  /** A trace is one request, whatever services add segments to it (API Gateway's and Lambda's here). */
  xrayPerMillionTracesRecorded: 5,
  xrayFreeTracesRecordedPerMonth: 100_000,
  /** API Gateway bills data transfer out at the EC2 rates, after the account's first 100 GB a month. */
  dataTransferOutPerGb: 0.09,
  dataTransferOutFreeGbPerMonth: 100,
  cloudWatchAlarmMonth: 0.1,
  cloudWatchDashboardMonth: 3,
  kmsKeyMonth: 1,
  secretMonth: 0.4,
} as const;

/**
 * The share of requests X-Ray records at `requestsPerSecond` under its default rule, which API Gateway applies and
 * Lambda follows: a reservoir of one request a second across the account, then 5% of the rest
 * (https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html,
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-enabling-xray.html).
 */
export function xrayTracedShare(requestsPerSecond: number): number {
  if (!(requestsPerSecond > 0)) throw new Error("requests per second must be above 0");
  const [reservoir, fixedRate] = [1, 0.05];
  const traced = Math.min(requestsPerSecond, reservoir) + fixedRate * Math.max(requestsPerSecond - reservoir, 0);
  return traced / requestsPerSecond;
}

/** Traffic levels the X-Ray line is priced at, per stage; above its throttles a stage cannot go. */
export const TRAFFIC_LEVELS_PER_SECOND = [1, 100] as const;

/** Shares of requests that meet a cold start: the two the totals assume, then every request. */
export const BUSY_COLD_SHARE = 0.001;
export const QUIET_COLD_SHARE = 0.5;
export const COLD_START_SHARES = [BUSY_COLD_SHARE, QUIET_COLD_SHARE, 1] as const;

/** Lambda's Node (nodejs24.x), which the cold starts priced here are measured on. */
const LAMBDA_RUNTIME = BENCH_RUNTIMES.find((runtime) => runtime.name === "lambda") as BenchRuntime;
/** The bench's id of a case's cold first response on Lambda's Node (scripts/bench/cold.ts). */
export const coldStartFigureId = (kase: string) => `coldStart.${LAMBDA_RUNTIME.idPart}${kase}.oursMs`;

/**
 * The cold-start figures docs/performance.md publishes, read from its text (one line if one is missing): by cold case,
 * the median ms from spawn() of a fresh `node` to its first answer, and Node's bare start (spawn to exit of an empty
 * script), which each first response includes. docs/capacity.md records them.
 */
export function readColdStart(performancePage: string) {
  const published = readPublishedFigures(performancePage);
  const value = (id: string) => {
    const row = published.find((candidate) => candidate.id === id);
    if (!row || !Number.isFinite(row.value)) throw new Error(`${PAGE} has no ${id}: run npm run bench`);
    if (row.node !== LAMBDA_RUNTIME.version)
      throw new Error(`${PAGE} has ${id} on Node ${row.node}, not ${LAMBDA_RUNTIME.version}: run npm run bench`);
    return row.value;
  };
  const cases = [...new Set(COSTED_KINDS.map(coldCaseOf))];
  return {
    source: `${PAGE}, ${coldStartFigureId("<operation>")}, on Node ${LAMBDA_RUNTIME.version}`,
    firstResponseMs: Object.fromEntries(cases.map((kase) => [kase, value(coldStartFigureId(kase))])),
    nodeStartMs: value(`coldStart.${LAMBDA_RUNTIME.idPart}nodeStartMs`),
  };
}

/**
 * When the design past the first ceiling starts: creates near production's POST /pets throttle for a while (the
 * `CreatesNearThrottle` alarm's), observable today unlike any rate above the throttle.
 */
export const SHARDING_TRIGGER = {
  shareOfPostThrottle: CREATES_NEAR_THROTTLE.shareOfThrottle,
  sustainedMinutes: CREATES_NEAR_THROTTLE.sustainedMinutes,
  /** The throttle may be raised while creates stay below this share of one partition's writes. */
  headroomShareOfPartition: 1 / 3,
} as const;

/**
 * Lambda's own lines per request (JSON logs, system level INFO), not measurable without Lambda, so sized from samples
 * in the documented shape (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html).
 */
export const lambdaPlatformLineSamples = [
  '{"time":"2026-11-25T16:20:00.000Z","type":"platform.start","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","version":"12"}}',
  '{"time":"2026-11-25T16:20:00.025Z","type":"platform.report","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","metrics":{"durationMs":21.462,"billedDurationMs":22,"memorySizeMB":512,"maxMemoryUsedMB":92},"tracing":{"spanId":"54565fb41ac79632","type":"X-Amzn-Trace-Id","value":"Root=1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4;Parent=6c2d1b3a0f9e8d7c;Sampled=1"},"status":"success"}}',
] as const;

/**
 * What API Gateway adds to a function's answer on the wire (HTTP/1.1, a traced stage): the status line, its own headers
 * and the empty line ending them. TLS and TCP framing are not counted.
 */
export const apiGatewayAnswerSample = [
  "HTTP/1.1 200 OK",
  "Date: Wed, 25 Nov 2026 16:20:00 GMT",
  "Content-Length: 1024",
  "Connection: keep-alive",
  "x-amzn-RequestId: c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
  "x-amz-apigw-id: BrVmlHTaoAMEhKQ=",
  "X-Amzn-Trace-Id: Root=1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4;Parent=6c2d1b3a0f9e8d7c;Sampled=1",
  "",
] as const;

/** Typical values of the access log's variables (infra/stacks/accessLog.ts), to size one line. */
const accessLogSampleValues: Record<string, string> = {
  "$context.requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
  "$context.extendedRequestId": "BrVmlHTaoAMEhKQ=",
  "$context.xrayTraceId": "1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4",
  "$context.identity.sourceIp": "203.0.113.7",
  "$context.requestTime": "25/Nov/2026:16:20:00 +0000",
  "$context.httpMethod": "GET",
  "$context.resourcePath": "/pets/{petId}",
  "$context.status": "200",
  "$context.responseLength": "78",
  "$context.responseLatency": "24",
  "$context.integrationStatus": "200",
  "$context.integrationLatency": "22",
  "$context.error.responseType": "-",
  "$context.wafResponseCode": "WAF_ALLOW",
  "$context.error.messageString": '"-"',
};

/** The stack's facts that are not in the config, read from the stacks the app builds (no bundling). */
export interface StackFacts {
  readonly architecture: "arm64" | "x86_64";
  readonly memoryMb: number;
  readonly tracing: boolean;
  /** Concurrency reserved for each function; undefined when none is. */
  readonly reservedConcurrency: number | undefined;
  readonly provisionedConcurrency: number;
  readonly accessLogLineBytes: number;
  /** Rules of the stage's web ACL; 0 without one. */
  readonly wafRules: number;
  /** What is billed by the month whatever the traffic, and the synthetic check's runs in 30 days. */
  readonly fixed: Readonly<Record<"alarms" | "dashboards" | "kmsKeys" | "secrets" | "syntheticRunsPerMonth", number>>;
}

export async function stackFacts(): Promise<Record<string, StackFacts>> {
  const { buildApp } = await import("../../infra/app");
  const { accessLogFormat } = await import("../../infra/stacks/accessLog");
  const { LIVE_ALIAS } = await import("../../infra/stacks/rollout");
  const { SYNTHETIC_CHECK_INTERVAL } = await import("../../infra/stacks/syntheticCheck");
  const { CfnResource } = await import("aws-cdk-lib");
  // Only the construct tree is needed: no stack is bundled, nothing synthesized. An App makes its
  // assembly directory when built (under the temporary directory without an outdir): removed at once.
  const outdir = mkdtempSync(join(tmpdir(), "cdk-capacity-"));
  const { stages } = buildApp({ outdir, context: { "aws:cdk:bundling-stacks": [] } });
  rmSync(outdir, { recursive: true, force: true });
  const accessLogLine = accessLogFormat().replace(/\$context\.[\w.]+/g, (variable) => {
    const value = accessLogSampleValues[variable];
    if (value === undefined) throw new Error(`no sample value for ${variable} (scripts/bench/capacity.ts)`);
    return value;
  });
  JSON.parse(accessLogLine);
  const facts: Record<string, StackFacts> = {};
  for (const stage of stages) {
    const all = Object.entries(stage.stack.functions).map(([operationId, fn]) => {
      type Cfn = { memorySize?: number; tracingConfig?: { mode?: string }; reservedConcurrentExecutions?: number };
      const cfn = fn.node.defaultChild as Cfn;
      const alias = stage.stack.aliases[operationId];
      if (alias?.aliasName !== LIVE_ALIAS) throw new Error(`${operationId} has no ${LIVE_ALIAS} alias`);
      const provisioned = (alias.node.defaultChild as { provisionedConcurrencyConfig?: Record<string, number> })
        .provisionedConcurrencyConfig?.provisionedConcurrentExecutions;
      const architecture = fn.architecture.name;
      if (architecture !== "arm64" && architecture !== "x86_64") throw new Error(`no price for ${architecture}`);
      if (cfn.memorySize === undefined) throw new Error(`${operationId} has no memory size`);
      return JSON.stringify({
        architecture,
        memoryMb: cfn.memorySize,
        tracing: cfn.tracingConfig?.mode === "Active",
        reservedConcurrency: cfn.reservedConcurrentExecutions,
        provisionedConcurrency: provisioned ?? 0,
        accessLogLineBytes: Buffer.byteLength(accessLogLine),
        wafRules: (stage.stack.edgeProtection?.webAcl.rules as unknown[] | undefined)?.length ?? 0,
      } satisfies Omit<StackFacts, "fixed">);
    });
    if (new Set(all).size !== 1) throw new Error(`the ${stage.node.id} functions differ; cost them one by one`);
    const count = (type: string) =>
      [stage.stack, stage.dataStack]
        .flatMap((stack) => stack.node.findAll())
        .filter((node) => node instanceof CfnResource && node.cfnResourceType === type).length;
    facts[stage.node.id] = {
      ...(JSON.parse(all[0] as string) as Omit<StackFacts, "fixed">),
      fixed: {
        alarms: count("AWS::CloudWatch::Alarm"),
        dashboards: count("AWS::CloudWatch::Dashboard"),
        kmsKeys: count("AWS::KMS::Key"),
        secrets: count("AWS::SecretsManager::Secret"),
        syntheticRunsPerMonth: Math.round((30 * 24 * 60) / SYNTHETIC_CHECK_INTERVAL.toMinutes()),
      },
    };
  }
  return facts;
}

/** What the page is rendered from besides the config, recorded in it. */
export interface CapacityInputs {
  readonly stacks: Record<string, StackFacts>;
  readonly requests: RequestCostResult;
  readonly coldStart: ReturnType<typeof readColdStart>;
}

/** The parts of the table the costed requests touch, as the page names them. */
const AREA_NAMES: Partial<Record<TableArea, string>> = {
  pets: "`PET` partition",
  petsByStatus: "`byStatus` partition (a status's)",
  petIdCounter: "id counter (`COUNTER`)",
  idempotencyRecords: "an API key's idempotency partition",
};
/** Areas whose partition is one client's (an API key's) rather than the stage's. */
const PER_CLIENT_AREAS: readonly TableArea[] = ["idempotencyRecords"];

const integer = (value: number) => Math.floor(value).toLocaleString("en-US");
const dollars = (value: number) => `$${value.toFixed(3)}`;
const fixed = (value: number, digits = 2) => String(Math.round(value * 10 ** digits) / 10 ** digits);
interface Ceiling {
  readonly resource: string;
  readonly limit: string;
  /** Requests per second of each kind the resource carries; absent when not on its path. */
  readonly perRequest: Partial<Record<CostedRequest, number>>;
  readonly raise: string;
  /** One client's limit (an API key's, an address's), not the stage's. */
  readonly perClient?: boolean;
  /** Set in the config: gone once the stage throttle is raised, unlike AWS's own limits. */
  readonly configured?: boolean;
}

const perKind = (f: (kind: CostedRequest) => number) =>
  Object.fromEntries(COSTED_KINDS.map((kind) => [kind, f(kind)])) as Record<CostedRequest, number>;

export function ceilings(config: StageConfig, inputs: CapacityInputs): Ceiling[] {
  const { api, edgeProtection: edge } = config;
  const stack = inputs.stacks[config.id] as StackFacts;
  const all = (value: number) => perKind(() => value);
  const waf = (per: string, setting: "requestsPerApiKey" | "requestsPerIp", more: string): Ceiling[] => {
    if (!edge) return [];
    const [requests, window] = [edge[setting], edge.rateLimitWindowSeconds];
    const limit = `${integer(requests)} requests / ${window} s`;
    const raise = `\`edgeProtection.${setting}\`${more}`;
    return [
      { resource: `AWS WAF rate rule, per ${per}`, limit, perRequest: all(requests / window), raise, perClient: true },
    ];
  };
  const reserved = stack.reservedConcurrency;
  const concurrency = reserved ?? awsLimits.lambdaAccountConcurrency;
  const lambda = perKind((kind) => (concurrency * 1000) / (inputs.requests.requests[kind].durationMs.p50 || 1));
  const list: Ceiling[] = [
    ...waf("API key", "requestsPerApiKey", "; a client needing more gets more keys"),
    ...waf("client address", "requestsPerIp", ""),
    {
      resource: "API Gateway stage throttle, per method",
      limit: `${integer(api.throttlingRateLimit)} rps, burst ${integer(api.throttlingBurstLimit)}`,
      perRequest: all(api.throttlingRateLimit),
      raise: "`api.throttling*`, up to the account's quota",
      configured: true,
    },
    {
      resource: "API Gateway account quota (every API of the region)",
      limit: `${integer(awsLimits.apiGatewayAccountRequestsPerSecond)} rps, burst ${integer(awsLimits.apiGatewayAccountBurst)}`,
      perRequest: all(awsLimits.apiGatewayAccountRequestsPerSecond),
      raise: "Service Quotas L-8A5B8E43",
    },
    {
      resource: `Lambda ${reserved === undefined ? "account" : "reserved"} concurrency, at the p50 duration`,
      limit: `${integer(concurrency)} concurrent, ${stack.provisionedConcurrency || "none"} provisioned, ${integer(Math.min(...Object.values(lambda)))} rps or more`,
      perRequest: lambda,
      raise: "Service Quotas; +1,000 environments per 10 s",
      configured: reserved !== undefined,
    },
  ];
  const units = [
    ["write", "writeUnits", awsLimits.partitionWriteUnitsPerSecond, "WRU"],
    ["read", "readUnits", awsLimits.partitionReadUnitsPerSecond, "RRU"],
  ] as const;
  const areas = new Set(
    COSTED_KINDS.flatMap((kind) => Object.keys(inputs.requests.requests[kind].areas) as TableArea[]),
  );
  for (const area of areas) {
    for (const [unit, field, limit, name] of units) {
      const perRequest: Partial<Record<CostedRequest, number>> = {};
      for (const kind of COSTED_KINDS) {
        const used = inputs.requests.requests[kind].areas[area]?.[field] ?? 0;
        if (used > 0) perRequest[kind] = limit / used;
      }
      if (Object.keys(perRequest).length === 0) continue;
      const perClient = PER_CLIENT_AREAS.includes(area);
      const raise =
        area === "petIdCounter" ? "ids without a counter (below)" : perClient ? "more API keys" : "shard (below)";
      const resource = `DynamoDB ${AREA_NAMES[area] ?? area}, ${unit}s`;
      list.push({ resource, limit: `${integer(limit)} ${name}/s`, perRequest, raise, perClient });
    }
  }
  return list;
}

const table = (head: readonly string[], rows: readonly (readonly string[])[]) =>
  [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ].join("\n");

/** Each stage's rows, keyed by their first cell, in one order: a row only some stages have stays by its neighbours. */
function byLabel(configs: readonly StageConfig[], rowsOf: (config: StageConfig) => string[][]) {
  const stages = configs.map((config) => ({ id: config.id, rows: rowsOf(config) }));
  const labels: string[] = [];
  for (const { rows } of stages) {
    const own = new Set(rows.map(([label]) => label));
    let at = 0;
    for (const [label = ""] of rows) {
      const found = labels.indexOf(label);
      // After the rows of the stages before that this one lacks: each stage's own rows stay in stage order.
      while (found < 0 && at < labels.length && !own.has(labels[at])) at++;
      if (found < 0) labels.splice(at, 0, label);
      at = found < 0 ? at + 1 : found + 1;
    }
  }
  return labels.map((label) => ({
    label,
    rows: stages.map(({ id, rows }) => ({ id, row: rows.find((row) => row[0] === label) })),
  }));
}

/** One table for every stage: a row every stage has alike is shown once, any other once per stage it has. */
function mergeStages(configs: readonly StageConfig[], rowsOf: (config: StageConfig) => string[][]): string[][] {
  return byLabel(configs, rowsOf).flatMap(({ label, rows }) => {
    if (new Set(rows.map(({ row }) => row?.join("|"))).size === 1 && rows[0]?.row) return [rows[0].row];
    return rows.flatMap(({ id, row }) => (row ? [[`${label}, ${id}`, ...row.slice(1)]] : []));
  });
}

/** One table with a column per stage: the label, each stage's second cell ("—" where it has none), then the rest. */
function pivotStages(configs: readonly StageConfig[], rowsOf: (config: StageConfig) => string[][]): string[][] {
  return byLabel(configs, rowsOf).map(({ label, rows }) => [
    label,
    ...rows.map(({ row }) => row?.[1] ?? "—"),
    ...(rows.find(({ row }) => row)?.row?.slice(2) ?? []),
  ]);
}

/** Per request, the lowest figure among the ceilings and every resource at it: raising one alone gains nothing. */
const bindingCells = (list: readonly Ceiling[]) =>
  COSTED_KINDS.map((kind) => {
    const carrying = list.filter((c) => c.perRequest[kind] !== undefined);
    const lowest = Math.min(...carrying.map((c) => c.perRequest[kind] as number));
    const binding = carrying.filter((c) => c.perRequest[kind] === lowest).map((c) => c.resource.split(/,| \(/)[0]);
    return binding.length > 0 ? `**${integer(lowest)}** (${[...new Set(binding)].join("; ")})` : "—";
  });

const titles = COSTED_KINDS.map((kind) => COSTED_REQUESTS[kind].title);

export function renderCeilings(configs: readonly StageConfig[], inputs: CapacityInputs): string {
  const resources = pivotStages(configs, (config) =>
    ceilings(config, inputs).map((c) => [c.resource, c.limit, c.raise]),
  );
  const binding = mergeStages(configs, (config) => {
    const stageWide = ceilings(config, inputs).filter((c) => !c.perClient);
    return [
      ["Binds first", ...bindingCells(stageWide)],
      ["Past the throttle", ...bindingCells(stageWide.filter((c) => !c.configured))],
      ["One client", ...bindingCells(ceilings(config, inputs).filter((c) => c.perClient))],
    ];
  });
  return [
    "Each resource's limit:",
    "",
    table(["Resource", ...configs.map((config) => config.id), "How to raise it"], resources),
    "",
    "What binds first, in requests per second (a row one stage alone has names it):",
    "",
    table(["", ...titles], binding),
  ].join("\n");
}

type CostLine = { readonly item: string; readonly perMillion: Record<CostedRequest, number> };

/** Log bytes of one request: the function's lines (measured), Lambda's own lines and the access log line. */
function logBytesPerRequest(stageId: string, kind: CostedRequest, inputs: CapacityInputs): number {
  const sampled = [
    ...lambdaPlatformLineSamples.map((line) => Buffer.byteLength(line)),
    inputs.stacks[stageId]?.accessLogLineBytes ?? 0,
  ];
  const own = inputs.requests.requests[kind].logs[stageId]?.bytes ?? 0;
  return sampled.reduce((sum, bytes) => sum + bytes + LOG_EVENT_OVERHEAD_BYTES, own);
}

/** Bytes one answer sends to the client: the function's body and headers (measured) and API Gateway's part. */
export function answerBytes(kind: CostedRequest, inputs: CapacityInputs): number {
  const { bodyBytes, headerBytes } = inputs.requests.requests[kind].response;
  return bodyBytes + headerBytes + apiGatewayAnswerSample.reduce((sum, line) => sum + Buffer.byteLength(line) + 2, 0);
}

/** Dollars per billed millisecond at the stage's memory and architecture. */
const perBilledMs = (stack: StackFacts) =>
  (stack.memoryMb / 1024 / 1000) * unitPrices.lambdaPerGbSecond[stack.architecture];

/** What every request costs, whatever the traffic (per million requests). */
export function costLines(config: StageConfig, inputs: CapacityInputs): CostLine[] {
  const stack = inputs.stacks[config.id] as StackFacts;
  const p = unitPrices;
  const request = (kind: CostedRequest) => inputs.requests.requests[kind];
  const perGb = (price: number, bytes: (kind: CostedRequest) => number) =>
    perKind((kind) => (bytes(kind) * 1e6 * price) / 2 ** 30);
  const lines: [string, Record<CostedRequest, number> | false][] = [
    ["Lambda requests", perKind(() => p.lambdaPerMillionRequests)],
    [
      `Lambda duration (${stack.architecture}, ${stack.memoryMb} MB, p50 rounded up)`,
      perKind((kind) => Math.ceil(request(kind).durationMs.p50) * perBilledMs(stack) * 1e6),
    ],
    ["API Gateway REST requests", perKind(() => p.apiGatewayRestPerMillionRequests)],
    [
      "DynamoDB (RRU, WRU with the index's)",
      perKind(
        (kind) =>
          request(kind).readUnits * p.dynamoPerMillionReadUnits +
          (request(kind).writeUnits + request(kind).indexWriteUnits) * p.dynamoPerMillionWriteUnits,
      ),
    ],
    ["AWS WAF requests", !!config.edgeProtection && perKind(() => p.wafPerMillionRequests)],
    ["CloudWatch Logs ingestion", perGb(p.logsPerGbIngested, (kind) => logBytesPerRequest(config.id, kind, inputs))],
    [
      `Data transfer out ($${p.dataTransferOutPerGb.toFixed(2)}/GB)`,
      perGb(p.dataTransferOutPerGb, (kind) => answerBytes(kind, inputs)),
    ],
  ];
  return lines.flatMap(([item, perMillion]) => (perMillion ? [{ item, perMillion }] : []));
}

/** TRAFFIC_LEVELS_PER_SECOND, capped at what the stage's throttles let through. */
export function trafficLevels(config: StageConfig): number[] {
  const most = config.api.throttlingRateLimit * Object.keys(routes).length;
  return [...new Set(TRAFFIC_LEVELS_PER_SECOND.map((level) => Math.min(level, most)))];
}

const percent = (share: number) => `${fixed(share * 100, 2)}%`;

/** X-Ray traces recorded per million requests at each traffic level (none for an untraced stage). */
export function xrayLines(config: StageConfig, inputs: CapacityInputs): (CostLine & { requestsPerSecond: number })[] {
  if (!(inputs.stacks[config.id] as StackFacts).tracing) return [];
  return trafficLevels(config).map((requestsPerSecond) => {
    const share = xrayTracedShare(requestsPerSecond);
    return {
      requestsPerSecond,
      item: `X-Ray traces at ${integer(requestsPerSecond)} req/s${requestsPerSecond === 1 ? " or less" : ""} (${percent(share)} traced)`,
      perMillion: perKind(() => share * unitPrices.xrayPerMillionTracesRecorded),
    };
  });
}

/**
 * What one cold start bills beyond a warm request, in dollars: the cold first response (INIT and first request) less
 * the warm p50, each rounded up to the millisecond as Lambda bills.
 */
export function coldStartCost(config: StageConfig, inputs: CapacityInputs, kind: CostedRequest) {
  const firstResponseMs = inputs.coldStart.firstResponseMs[coldCaseOf(kind)];
  if (firstResponseMs === undefined)
    throw new Error(`docs/capacity.md records no cold start of ${coldCaseOf(kind)}: run npm run bench:capacity`);
  const coldBilledMs = Math.ceil(firstResponseMs);
  const warmBilledMs = Math.ceil(inputs.requests.requests[kind].durationMs.p50);
  const extraDollars = (coldBilledMs - warmBilledMs) * perBilledMs(inputs.stacks[config.id] as StackFacts);
  return { firstResponseMs, coldBilledMs, warmBilledMs, extraDollars };
}

/** Cold starts per million requests at each share of requests that meets one. */
export function coldStartLines(config: StageConfig, inputs: CapacityInputs): (CostLine & { share: number })[] {
  return COLD_START_SHARES.map((share) => ({
    share,
    item: `Cold starts in ${share === 1 ? "every request" : `${percent(share)} of requests`}`,
    perMillion: perKind((kind) => share * 1e6 * coldStartCost(config, inputs, kind).extraDollars),
  }));
}

const sum = (lines: readonly CostLine[], kind: CostedRequest) =>
  lines.reduce((total, line) => total + line.perMillion[kind], 0);

/** The two totals: a busy stage (its top traffic level, few cold starts) and a quiet one. */
export function costTotals(config: StageConfig, inputs: CapacityInputs): CostLine[] {
  const every = costLines(config, inputs);
  const busy = trafficLevels(config).at(-1) as number;
  const total = (item: string, requestsPerSecond: number, share: number): CostLine => {
    const lines = [
      ...every,
      ...xrayLines(config, inputs).filter((line) => line.requestsPerSecond === requestsPerSecond),
      ...coldStartLines(config, inputs).filter((line) => line.share === share),
    ];
    return { item: `Total, ${item}, ${percent(share)} cold`, perMillion: perKind((kind) => sum(lines, kind)) };
  };
  return [
    total(`busy: ${integer(busy)} req/s`, busy, BUSY_COLD_SHARE),
    total("quiet: 1 req/s or less", 1, QUIET_COLD_SHARE),
  ];
}

/** The web ACL and its rules: billed by the month, whatever the traffic. */
const wafMonth = (stack: StackFacts) =>
  stack.wafRules > 0 ? unitPrices.wafPerWebAclMonth + stack.wafRules * unitPrices.wafPerRuleMonth : 0;

/** One figure for every stage, or each stage's in turn where they differ. */
const distinct = (configs: readonly StageConfig[], figure: (config: StageConfig) => string) =>
  [...new Set(configs.map(figure))].join(" / ");

export function renderCost(configs: readonly StageConfig[], inputs: CapacityInputs): string {
  const row = (line: CostLine, bold = false) => [
    line.item,
    ...COSTED_KINDS.map((kind) => (bold ? `**${dollars(line.perMillion[kind])}**` : dollars(line.perMillion[kind]))),
  ];
  const rows = mergeStages(configs, (config) => {
    const every = costLines(config, inputs);
    return [
      ...every.map((line) => row(line)),
      row({ item: "Every request", perMillion: perKind((kind) => sum(every, kind)) }, true),
      ...xrayLines(config, inputs).map((line) => row(line)),
      // Only every request's: the shares the totals assume scale it.
      ...coldStartLines(config, inputs)
        .filter((line) => line.share === 1)
        .map((line) => row(line)),
      ...costTotals(config, inputs).map((line) => row(line, true)),
    ];
  });
  const perMs = distinct(configs, (config) => dollars(perBilledMs(inputs.stacks[config.id] as StackFacts) * 1e6));
  const free = (kind: CostedRequest) =>
    integer((unitPrices.dataTransferOutFreeGbPerMonth * 2 ** 30) / answerBytes(kind, inputs) / 1e6);
  const cold = Object.values(inputs.coldStart.firstResponseMs);
  return [
    `Cost per million requests (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}; a row one stage alone has names it):`,
    "",
    table(["Item", ...titles], rows),
    "",
    `A billed millisecond adds ${perMs} per million. A cold first response takes ${fixed(Math.min(...cold), 1)}–${fixed(Math.max(...cold), 1)} ms (${inputs.coldStart.source}; Node's bare start, ${fixed(inputs.coldStart.nodeStartMs, 1)} ms, in each). ` +
      `Free each month: the account's first ${unitPrices.dataTransferOutFreeGbPerMonth} GB out (about ${free("getPet")} million gets, ${free("listPets")} million list pages) and ${integer(unitPrices.xrayFreeTracesRecordedPerMonth)} traces.`,
  ].join("\n");
}

/** Whether a stage's reservations fit an account's concurrency quota, and the most each API function could reserve. */
export function concurrencyFit(config: StageConfig, quota: number) {
  const apiFunctions = Object.keys(routes).length;
  const needed = stageReservedConcurrency(config, apiFunctions);
  const reservable = quota - MINIMUM_UNRESERVED_CONCURRENCY;
  return {
    fits: needed <= reservable,
    quotaNeeded: needed + MINIMUM_UNRESERVED_CONCURRENCY,
    /** The largest `functions.reservedConcurrency` that fits; 0 when none does. */
    largestPerFunction: Math.max(Math.floor((reservable - stageReservedConcurrency(config, 0)) / apiFunctions), 0),
  };
}

/** Each stage's reservations against a new account's concurrency quota, a partly raised one and the default. */
export function renderConcurrency(configs: readonly StageConfig[]): string {
  const apiFunctions = Object.keys(routes).length;
  const unreserved = MINIMUM_UNRESERVED_CONCURRENCY;
  const bothNeeded = configs.reduce((total, config) => total + stageReservedConcurrency(config, apiFunctions), 0);
  const cell = (config: StageConfig, quota: number) => {
    const fit = concurrencyFit(config, quota);
    if (fit.fits) return `deploys (up to ${integer(fit.largestPerFunction)} each would fit)`;
    return `**refused**: needs a quota of ${integer(fit.quotaNeeded)}${fit.largestPerFunction > 0 ? `, or ${integer(fit.largestPerFunction)} or less each` : "; nothing fits"}`;
  };
  const stageHead = (config: StageConfig) =>
    `${config.id} (${integer(stageReservedConcurrency(config, apiFunctions))}: ${config.functions.reservedConcurrency} each)`;
  const head = ["Account's concurrent executions", `Reservable (all but ${unreserved})`, ...configs.map(stageHead)];
  return [
    `Each stage's reservations (${apiFunctions} API functions × \`functions.reservedConcurrency\`, plus background functions) against an account's quota ("each": the most that fits, the stage alone):`,
    "",
    table(
      [...head, `Both stages (${integer(bothNeeded)})`],
      [10, 400, awsLimits.lambdaAccountConcurrency].map((quota) => [
        `${integer(quota)}${quota === awsLimits.lambdaAccountConcurrency ? " (the default)" : ""}`,
        integer(Math.max(quota - unreserved, 0)),
        ...configs.map((config) => cell(config, quota)),
        bothNeeded + unreserved <= quota
          ? "deploys"
          : `**refused**: needs a quota of ${integer(bothNeeded + unreserved)}`,
      ]),
    ),
  ].join("\n");
}

/** The creates rate at which the design past the first ceiling starts, and the throttle it may reach before. */
export function shardingTrigger(production: StageConfig) {
  const postThrottle = production.api.throttlingRateLimit;
  const createsPerSecond = Math.floor(postThrottle * SHARDING_TRIGGER.shareOfPostThrottle);
  const periodSeconds = 300;
  return {
    postThrottle,
    createsPerSecond,
    createsPerPeriod: createsPerSecond * periodSeconds,
    periods: Math.ceil(SHARDING_TRIGGER.sustainedMinutes / (periodSeconds / 60)),
    throttleBeforeDesign: Math.floor(
      awsLimits.partitionWriteUnitsPerSecond * SHARDING_TRIGGER.headroomShareOfPartition,
    ),
  };
}

export function renderTrigger(production: StageConfig): string {
  const t = shardingTrigger(production);
  return [
    `**The trigger** is either (${production.id}'s POST /pets is throttled at ${integer(t.postThrottle)} a second, so no higher rate is seen):`,
    "",
    `- creates at ${integer(t.createsPerSecond)} per second or more (${percent(SHARDING_TRIGGER.shareOfPostThrottle)} of the throttle) for ${SHARDING_TRIGGER.sustainedMinutes} minutes: the \`CreatesNearThrottle\` alarm, metric \`${metricNames.petsCreated}\` (\`Stage=${production.stage}\`, \`Operation=createPet\`) at ${integer(t.createsPerPeriod)} or more per 5-minute period, ${t.periods} periods running;`,
    `- any POST /pets answered 429 by the stage throttle: in Logs Insights, \`filter method = "POST" and resourcePath = "/pets" and errorType = "THROTTLED" | stats count() by bin(5m)\` (the firewall's 429s have no \`errorType\`).`,
    "",
    `Then raise the throttle, safe up to ${integer(t.throttleBeforeDesign)} creates a second (a third of a partition's writes); above that, the epochs design must be in production first.`,
  ].join("\n");
}

function renderMeasured(inputs: CapacityInputs): string {
  const { requests } = inputs.requests;
  const stageIds = Object.keys(requests.listPets.logs);
  const rows = COSTED_KINDS.map((kind) => {
    const r = requests[kind];
    const { title, note, operation } = COSTED_REQUESTS[kind];
    return [
      `${title}: \`${routes[operation].method} ${routes[operation].path}\`${note}`,
      r.calls.join(", "),
      `${fixed(r.readUnits)} / ${fixed(r.writeUnits)} / ${fixed(r.indexWriteUnits)}`,
      stageIds.map((id) => integer(r.logs[id]?.bytes ?? 0)).join(", "),
      `${integer(r.response.bodyBytes)} + ${integer(r.response.headerBytes)} B`,
      `${fixed(r.durationMs.p50)} ms (p90 ${fixed(r.durationMs.p90)})`,
    ];
  });
  const logs = `Log bytes (${stageIds.join(", ")})`;
  return [
    table(["Request", "DynamoDB calls", "RRU / WRU / index WRU", logs, "Answer body + headers", "p50 here"], rows),
    "",
    `The key check's GetItem (once per key and container every 30 s): ${fixed(inputs.requests.keyLookup.readUnits)} RRU. ` +
      `Durations: ${inputs.requests.samples} requests each, Node ${inputs.requests.node}, dynalite on localhost.`,
  ].join("\n");
}

/**
 * Keys' last-use records (lib/auth/keyUsage.ts): a conditional UpdateItem per key, operation, day and warm container,
 * which costs a write unit even when its condition fails
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#write-operation-consumption).
 */
export const KEY_USE_RECORDS = {
  /** keys, keyId, operationId, lastUsedOn: about 100 bytes, under 1 KB, so 1 WRU a write. */
  itemBytes: 100,
  writeUnitsPerWrite: 1,
  /** Storage is billed on each item plus 100 bytes (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html). */
  storageOverheadBytesPerItem: 100,
  /** The worked figure: this many keys, each calling every operation every day of a 30-day month. */
  keys: 1_000,
  daysPerMonth: 30,
} as const;

/** A stage's key-use writes a key a day (one container to every reserved one), a month, stored, and at most a second. */
export function keyUseCost(config: StageConfig) {
  const r = KEY_USE_RECORDS;
  const operations = Object.keys(routes).length;
  const containers = config.functions.reservedConcurrency;
  const [fewest, most] = [operations * r.writeUnitsPerWrite, operations * containers * r.writeUnitsPerWrite];
  const perMonth = (units: number) => (units * r.keys * r.daysPerMonth * unitPrices.dynamoPerMillionWriteUnits) / 1e6;
  const storedBytes = r.keys * operations * (r.itemBytes + r.storageOverheadBytesPerItem);
  return {
    operations,
    containers,
    unitsPerKeyDay: { fewest, most },
    month: { fewest: perMonth(fewest), most: perMonth(most) },
    storedBytes,
    storageMonth: (storedBytes / 2 ** 30) * unitPrices.dynamoPerGbMonthStored,
    peakWritesPerSecond: operations * config.api.throttlingRateLimit,
  };
}

export function renderKeyUseCost(configs: readonly StageConfig[]): string {
  const r = KEY_USE_RECORDS;
  const rows = configs.map((config) => {
    const cost = keyUseCost(config);
    const stored = cost.storageMonth < 0.001 ? "under $0.001" : dollars(cost.storageMonth);
    return [
      config.id,
      integer(cost.containers),
      `${cost.unitsPerKeyDay.fewest} – ${integer(cost.unitsPerKeyDay.most)}`,
      `${dollars(cost.month.fewest)} – ${dollars(cost.month.most)}`,
      `${integer(cost.storedBytes / 1000)} KB, ${stored} a month`,
      `${integer(cost.peakWritesPerSecond)} of ${integer(awsLimits.partitionWriteUnitsPerSecond)}`,
    ];
  });
  const head = ["Stage", "Containers (`reservedConcurrency`)", "WRU a key a day (one container – all)"];
  return [
    `Last-use records of ${integer(r.keys)} keys, each calling all ${Object.keys(routes).length} operations every day of a ${r.daysPerMonth}-day month, in US dollars:`,
    "",
    table([...head, "A month", "Stored (no TTL)", "Peak `KEYUSE` WRU/s"], rows),
  ].join("\n");
}

/** What each stage costs a month with no traffic at all, item by item (what tags let Billing split per stage). */
function renderBaseline(configs: readonly StageConfig[], inputs: CapacityInputs): string {
  const p = unitPrices;
  const stack = (config: StageConfig) => inputs.stacks[config.id] as StackFacts;
  const rows = pivotStages(configs, (config) => {
    const { fixed: f, wafRules } = stack(config);
    const lines: [string, number, number][] = [
      ["CloudWatch alarms", f.alarms, f.alarms * p.cloudWatchAlarmMonth],
      ["CloudWatch dashboards", f.dashboards, f.dashboards * p.cloudWatchDashboardMonth],
      ["KMS keys (logs, alarm topics)", f.kmsKeys, f.kmsKeys * p.kmsKeyMonth],
      ["Secrets Manager secrets (the synthetic check's key)", f.secrets, f.secrets * p.secretMonth],
      ["AWS WAF web ACL and its rules", wafRules, wafMonth(stack(config))],
    ];
    const kept = lines.filter(([, count]) => count > 0);
    return [
      ...kept.map(([item, count, month]) => [item, `${count}: ${dollars(month)}`]),
      ["**Total**", `**${dollars(kept.reduce((total, [, , month]) => total + month, 0))}**`],
    ];
  });
  const runs = distinct(configs, (config) => integer(stack(config).fixed.syntheticRunsPerMonth));
  const provisioned = distinct(configs, (config) => String(stack(config).provisionedConcurrency));
  return [
    "Fixed cost a month with no traffic, in US dollars:",
    "",
    table(["Item", ...configs.map((config) => config.id)], rows),
    "",
    `On top: ${runs} synthetic check runs a month, priced as requests; storage and metrics by use; provisioned concurrency (${provisioned} here).`,
  ].join("\n");
}

/** Every generated part of the document, by its marker name. */
export function renderSections(configs: readonly StageConfig[], inputs: CapacityInputs): Record<string, string> {
  const production = configs.find((config) => config.id === "Production");
  return {
    measured: renderMeasured(inputs),
    ceilings: renderCeilings(configs, inputs),
    concurrency: renderConcurrency(configs),
    cost: renderCost(configs, inputs),
    keyUses: renderKeyUseCost(configs),
    baseline: renderBaseline(configs, inputs),
    ...(production ? { trigger: renderTrigger(production) } : {}),
    inputs: `<!-- capacity:inputs ${JSON.stringify(inputs)} -->`,
  };
}

const marker = (name: string, end: "begin" | "end") => `<!-- generated:${name}:${end} -->`;
/** The document with each generated part replaced; fails if a marker is missing. */
export function replaceSections(document: string, sections: Record<string, string>): string {
  let result = document;
  for (const [name, content] of Object.entries(sections)) {
    const begin = result.indexOf(marker(name, "begin"));
    const end = result.indexOf(marker(name, "end"));
    if (begin < 0 || end < begin) throw new Error(`docs/capacity.md has no generated part "${name}"`);
    result = `${result.slice(0, begin + marker(name, "begin").length)}\n${content}\n${result.slice(end)}`;
  }
  return result;
}

/** The inputs the document was rendered from, as it records them. */
export function documentedInputs(document: string): CapacityInputs {
  const match = /<!-- capacity:inputs (.*) -->/.exec(document);
  if (!match?.[1]) throw new Error("docs/capacity.md does not record its inputs; run npm run bench:capacity");
  return JSON.parse(match[1]) as CapacityInputs;
}

async function main(): Promise<void> {
  // Durations are published with the Node they were measured on: only a pinned, supported one.
  if (process.version !== HOST_RUNTIME.version) {
    console.error(`bench:capacity: started on Node ${process.version}; measuring on ${HOST_RUNTIME.version}`);
    process.exit(await rerunOnHost());
  }
  // The handlers read their configuration when first imported.
  Object.assign(process.env, {
    PETS_TABLE_NAME: "petstore-capacity",
    PETSTORE_STAGE: "local",
    AWS_REGION: process.env.AWS_REGION || "us-east-1",
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
  });
  const { stageConfigs } = await import("../../infra/config");
  const { measureRequestCost } = await import("./requestCost");
  const started = performance.now();
  // Read first: a page without the bench's figures fails before the measuring.
  const coldStart = readColdStart(readFileSync(new URL(`../../${PAGE}`, import.meta.url), "utf8"));
  const inputs: CapacityInputs = { stacks: await stackFacts(), requests: await measureRequestCost(), coldStart };
  const sections = renderSections(Object.values(stageConfigs), inputs);
  writeFileSync(CAPACITY_DOC, replaceSections(readFileSync(CAPACITY_DOC, "utf8"), sections));
  for (const [name, content] of Object.entries(sections))
    if (name !== "inputs") console.log(`\n## ${name}\n\n${content}`);
  console.log(`\ndocs/capacity.md updated (${Math.round((performance.now() - started) / 1000)} s).`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`bench:capacity failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
