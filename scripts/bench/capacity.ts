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
export const TRAFFIC_LEVELS_PER_SECOND = [1, 10, 100] as const;

/** Shares of requests that meet a cold start, priced per million, and the two the totals assume. */
export const COLD_START_SHARES = [0.001, 0.01, 0.5, 1] as const;
export const BUSY_COLD_SHARE = 0.001;
export const QUIET_COLD_SHARE = 0.5;

/** Lambda's Node (nodejs24.x), which the cold starts priced here are measured on. */
const LAMBDA_RUNTIME = BENCH_RUNTIMES.find((runtime) => runtime.name === "lambda") as BenchRuntime;
/** The bench's id of a case's cold first response on Lambda's Node (scripts/bench/cold.ts). */
export const coldStartFigureId = (kase: string) => `coldStart.${LAMBDA_RUNTIME.idPart}${kase}.oursMs`;

/** The cold-start figures, as docs/performance.md publishes them; recorded in docs/capacity.md. */
export interface ColdStartInputs {
  readonly source: string;
  /** Median ms from spawn() of a fresh `node` to the first answer, by cold case (COSTED_REQUESTS). */
  readonly firstResponseMs: Record<string, number>;
  /** Node's bare start (spawn to exit of an empty script), which each first response includes. */
  readonly nodeStartMs: number;
}

/** Reads the cold-start figures from the text of docs/performance.md; fails with one line if one is missing. */
export function readColdStart(performancePage: string): ColdStartInputs {
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
      const cfn = fn.node.defaultChild as {
        memorySize?: number;
        tracingConfig?: { mode?: string };
        reservedConcurrentExecutions?: number;
      };
      const alias = stage.stack.aliases[operationId];
      if (alias?.aliasName !== LIVE_ALIAS) throw new Error(`${operationId} has no ${LIVE_ALIAS} alias`);
      const cfnAlias = alias.node.defaultChild as {
        provisionedConcurrencyConfig?: { provisionedConcurrentExecutions?: number };
      };
      const architecture = fn.architecture.name;
      if (architecture !== "arm64" && architecture !== "x86_64") throw new Error(`no price for ${architecture}`);
      if (cfn.memorySize === undefined) throw new Error(`${operationId} has no memory size`);
      return JSON.stringify({
        architecture,
        memoryMb: cfn.memorySize,
        tracing: cfn.tracingConfig?.mode === "Active",
        reservedConcurrency: cfn.reservedConcurrentExecutions,
        provisionedConcurrency: cfnAlias.provisionedConcurrencyConfig?.provisionedConcurrentExecutions ?? 0,
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
  readonly coldStart: ColdStartInputs;
}

/** The parts of the table the costed requests touch, as the page names them. */
const AREA_NAMES: Partial<Record<TableArea, string>> = {
  pets: "`PET` partition",
  petsByStatus: "`byStatus` index, a status's partition",
  petIdCounter: "id counter item (`COUNTER`)",
  idempotencyRecords: "one API key's idempotency partition",
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

export function ceilings(config: StageConfig, inputs: CapacityInputs): Ceiling[] {
  const kinds = COSTED_KINDS;
  const all = (value: number) => Object.fromEntries(kinds.map((kind) => [kind, value]));
  const stack = inputs.stacks[config.id] as StackFacts;
  const list: Ceiling[] = [];
  const edge = config.edgeProtection;
  const wafRules = [
    ["API key", "requestsPerApiKey", "; a client needing more gets more keys"],
    ["client address", "requestsPerIp", ""],
  ] as const;
  for (const [per, setting, more] of edge ? wafRules : []) {
    const [requests, window] = [edge?.[setting] ?? 0, edge?.rateLimitWindowSeconds ?? 1];
    list.push({
      resource: `AWS WAF rate rule, per ${per}`,
      limit: `${integer(requests)} requests / ${window} s`,
      perRequest: all(requests / window),
      raise: `\`edgeProtection.${setting}\`${more}`,
      perClient: true,
      configured: true,
    });
  }
  list.push({
    resource: "API Gateway stage throttle, per method",
    limit: `${integer(config.api.throttlingRateLimit)} rps, burst ${integer(config.api.throttlingBurstLimit)}`,
    perRequest: all(config.api.throttlingRateLimit),
    raise: "`api.throttling*`, up to the account's quota",
    configured: true,
  });
  list.push({
    resource: "API Gateway account quota (every API of the region)",
    limit: `${integer(awsLimits.apiGatewayAccountRequestsPerSecond)} rps, burst ${integer(awsLimits.apiGatewayAccountBurst)}`,
    perRequest: all(awsLimits.apiGatewayAccountRequestsPerSecond),
    raise: "Service Quotas L-8A5B8E43",
  });
  const concurrency = stack.reservedConcurrency ?? awsLimits.lambdaAccountConcurrency;
  list.push({
    resource:
      stack.reservedConcurrency === undefined
        ? "Lambda account concurrency, at the p50 duration"
        : "Lambda reserved concurrency, at the p50 duration",
    limit: `${integer(concurrency)} concurrent${stack.provisionedConcurrency > 0 ? `, ${stack.provisionedConcurrency} provisioned` : ", none provisioned"}`,
    perRequest: Object.fromEntries(
      kinds.map((kind) => [kind, (concurrency * 1000) / (inputs.requests.requests[kind].durationMs.p50 || 1)]),
    ),
    raise: "Service Quotas; +1,000 environments per 10 s",
    configured: stack.reservedConcurrency !== undefined,
  });
  const areas = new Set(kinds.flatMap((kind) => Object.keys(inputs.requests.requests[kind].areas) as TableArea[]));
  for (const area of areas) {
    for (const unit of ["write", "read"] as const) {
      const perRequest: Partial<Record<CostedRequest, number>> = {};
      for (const kind of kinds) {
        const units = inputs.requests.requests[kind].areas[area]?.[unit === "write" ? "writeUnits" : "readUnits"] ?? 0;
        const limit = unit === "write" ? awsLimits.partitionWriteUnitsPerSecond : awsLimits.partitionReadUnitsPerSecond;
        if (units > 0) perRequest[kind] = limit / units;
      }
      if (Object.keys(perRequest).length === 0) continue;
      const perClient = PER_CLIENT_AREAS.includes(area);
      list.push({
        resource: `DynamoDB ${AREA_NAMES[area] ?? area}, ${unit}s`,
        limit: unit === "write" ? "1,000 WRU/s" : "3,000 RRU/s",
        perRequest,
        raise:
          area === "petIdCounter" ? "ids without a counter (below)" : perClient ? "more API keys" : "shard (below)",
        perClient,
      });
    }
  }
  return list;
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ].join("\n");
}

const rps = (value: number | undefined) => (value === undefined ? "—" : integer(value));

function bindingRow(title: string, list: readonly Ceiling[]): string[] {
  return [
    title,
    "",
    ...COSTED_KINDS.map((kind) => {
      const carried = list.filter((c) => c.perRequest[kind] !== undefined);
      const lowest = carried.reduce((min, c) => Math.min(min, c.perRequest[kind] as number), Infinity);
      // Every resource at the lowest figure binds: raising one alone gains nothing.
      const binding = carried.filter((c) => c.perRequest[kind] === lowest).map((c) => c.resource.split(",")[0]);
      return binding.length > 0 ? `**${integer(lowest)}** (${[...new Set(binding)].join("; ")})` : "—";
    }),
    "",
  ];
}

export function renderCeilings(config: StageConfig, inputs: CapacityInputs): string {
  const list = ceilings(config, inputs);
  const stageWide = list.filter((c) => !c.perClient);
  const perClient = list.filter((c) => c.perClient);
  const head = ["Resource", "Limit", ...COSTED_KINDS.map((kind) => COSTED_REQUESTS[kind].title), "How to raise it"];
  const row = (c: Ceiling) => [c.resource, c.limit, ...COSTED_KINDS.map((kind) => rps(c.perRequest[kind])), c.raise];
  const raised = stageWide.filter((c) => !c.configured);
  return [
    `Requests per second each resource carries on its own (${config.id}):`,
    "",
    table(head, [
      ...stageWide.map(row),
      bindingRow("Binds first", stageWide),
      bindingRow("Binds first past the throttle", raised),
    ]),
    ...(perClient.length === 0
      ? []
      : [
          "",
          "Per client (one API key, one address):",
          "",
          table(head, [...perClient.map(row), bindingRow("Binds first", perClient)]),
        ]),
  ].join("\n");
}

export interface CostLine {
  readonly item: string;
  readonly perMillion: Record<CostedRequest, number>;
}

/** Log bytes of one request: the function's lines (measured), Lambda's own lines and the access log line. */
export function logBytesPerRequest(stageId: string, kind: CostedRequest, inputs: CapacityInputs): number {
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

const perKind = (f: (kind: CostedRequest) => number) =>
  Object.fromEntries(COSTED_KINDS.map((kind) => [kind, f(kind)])) as Record<CostedRequest, number>;

/** Dollars per GB-second at the stage's memory and architecture, per billed millisecond. */
function perBilledMs(stack: StackFacts): number {
  return (stack.memoryMb / 1024 / 1000) * unitPrices.lambdaPerGbSecond[stack.architecture];
}

/** What every request costs, whatever the traffic (per million requests). */
export function costLines(config: StageConfig, inputs: CapacityInputs): CostLine[] {
  const stack = inputs.stacks[config.id] as StackFacts;
  const p = unitPrices;
  const request = (kind: CostedRequest) => inputs.requests.requests[kind];
  const lines: CostLine[] = [
    { item: "Lambda requests", perMillion: perKind(() => p.lambdaPerMillionRequests) },
    {
      item: `Lambda duration (${stack.architecture}, ${stack.memoryMb} MB, p50 rounded up)`,
      perMillion: perKind((kind) => Math.ceil(request(kind).durationMs.p50) * perBilledMs(stack) * 1e6),
    },
    { item: "API Gateway REST requests", perMillion: perKind(() => p.apiGatewayRestPerMillionRequests) },
    {
      item: "DynamoDB (RRU, WRU with the index's)",
      perMillion: perKind(
        (kind) =>
          request(kind).readUnits * p.dynamoPerMillionReadUnits +
          (request(kind).writeUnits + request(kind).indexWriteUnits) * p.dynamoPerMillionWriteUnits,
      ),
    },
  ];
  if (config.edgeProtection)
    lines.push({ item: "AWS WAF requests", perMillion: perKind(() => p.wafPerMillionRequests) });
  lines.push({
    item: "CloudWatch Logs ingestion",
    perMillion: perKind((kind) => (logBytesPerRequest(config.id, kind, inputs) * 1e6 * p.logsPerGbIngested) / 2 ** 30),
  });
  lines.push({
    item: `Data transfer out ($${p.dataTransferOutPerGb.toFixed(2)}/GB)`,
    perMillion: perKind((kind) => (answerBytes(kind, inputs) * 1e6 * p.dataTransferOutPerGb) / 2 ** 30),
  });
  return lines;
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
  const stack = inputs.stacks[config.id] as StackFacts;
  const firstResponseMs = inputs.coldStart.firstResponseMs[coldCaseOf(kind)];
  if (firstResponseMs === undefined)
    throw new Error(`docs/capacity.md records no cold start of ${coldCaseOf(kind)}: run npm run bench:capacity`);
  const coldBilledMs = Math.ceil(firstResponseMs);
  const warmBilledMs = Math.ceil(inputs.requests.requests[kind].durationMs.p50);
  const extraDollars = (coldBilledMs - warmBilledMs) * perBilledMs(stack);
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
  const xray = xrayLines(config, inputs);
  const cold = coldStartLines(config, inputs);
  const levels = trafficLevels(config);
  const busy = levels[levels.length - 1] as number;
  const total = (item: string, requestsPerSecond: number, share: number): CostLine => {
    const lines = [
      ...every,
      ...xray.filter((line) => line.requestsPerSecond === requestsPerSecond),
      ...cold.filter((line) => line.share === share),
    ];
    return { item: `**Total, ${item}, ${percent(share)} cold**`, perMillion: perKind((kind) => sum(lines, kind)) };
  };
  return [
    total(`busy: ${integer(busy)} req/s`, busy, BUSY_COLD_SHARE),
    total("quiet: 1 req/s or less", 1, QUIET_COLD_SHARE),
  ];
}

/** The web ACL and its rules: billed by the month, whatever the traffic. */
const wafMonth = (stack: StackFacts) =>
  stack.wafRules > 0 ? unitPrices.wafPerWebAclMonth + stack.wafRules * unitPrices.wafPerRuleMonth : 0;

export function renderCost(config: StageConfig, inputs: CapacityInputs): string {
  const every = costLines(config, inputs);
  const stack = inputs.stacks[config.id] as StackFacts;
  const perMs = perBilledMs(stack) * 1e6;
  const fixedCosts =
    stack.wafRules > 0
      ? ` Fixed, whatever the traffic: the web ACL and its ${stack.wafRules} rules, $${wafMonth(stack).toFixed(2)} a month.`
      : "";
  const row = (line: CostLine) => [line.item, ...COSTED_KINDS.map((kind) => dollars(line.perMillion[kind]))];
  const bold = (line: CostLine) => [line.item, ...COSTED_KINDS.map((kind) => `**${dollars(line.perMillion[kind])}**`)];
  const freeRequests = (kind: CostedRequest) =>
    (unitPrices.dataTransferOutFreeGbPerMonth * 2 ** 30) / answerBytes(kind, inputs) / 1e6;
  return [
    `Cost per million requests, ${config.id} (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      ["Item", ...COSTED_KINDS.map((kind) => COSTED_REQUESTS[kind].title)],
      [
        ...every.map(row),
        bold({ item: "**Every request**", perMillion: perKind((kind) => sum(every, kind)) }),
        ...xrayLines(config, inputs).map(row),
        ...coldStartLines(config, inputs).map(row),
        ...costTotals(config, inputs).map(bold),
      ],
    ),
    "",
    `Each millisecond more of billed duration adds ${dollars(perMs)} per million requests (or cold starts, for INIT).${fixedCosts} ` +
      `Data transfer out is free for the account's first ${unitPrices.dataTransferOutFreeGbPerMonth} GB a month (about ${integer(freeRequests("getPet"))} million gets, ${integer(freeRequests("listPets"))} million list pages), X-Ray for its first ${integer(unitPrices.xrayFreeTracesRecordedPerMonth)} traces.`,
    "",
    `One cold start (INIT and the first request), at ${stack.architecture} and ${stack.memoryMb} MB (from ${inputs.coldStart.source}; Node's bare start, ${fixed(inputs.coldStart.nodeStartMs, 1)} ms, in each):`,
    "",
    table(
      ["Function", "Cold first response", "Billed, cold", "Billed, warm (p50 here)", "A million cold starts add"],
      COSTED_KINDS.map((kind) => {
        const cost = coldStartCost(config, inputs, kind);
        const { operation, note } = COSTED_REQUESTS[kind];
        return [
          `\`${operation}\`${note}`,
          `${fixed(cost.firstResponseMs, 1)} ms`,
          `${integer(cost.coldBilledMs)} ms`,
          `${integer(cost.warmBilledMs)} ms`,
          dollars(cost.extraDollars * 1e6),
        ];
      }),
    ),
  ].join("\n");
}

/** Account quotas the concurrency table shows: a new account's, a partly raised one, the default. */
export const ACCOUNT_CONCURRENCY_EXAMPLES = [10, 400, awsLimits.lambdaAccountConcurrency] as const;

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

export function renderConcurrency(configs: readonly StageConfig[]): string {
  const apiFunctions = Object.keys(routes).length;
  const bothNeeded = configs.reduce((total, config) => total + stageReservedConcurrency(config, apiFunctions), 0);
  const cell = (config: StageConfig, quota: number) => {
    const fit = concurrencyFit(config, quota);
    if (fit.fits) return `deploys (up to ${integer(fit.largestPerFunction)} each would fit)`;
    return `**refused**: needs a quota of ${integer(fit.quotaNeeded)}${fit.largestPerFunction > 0 ? `, or ${integer(fit.largestPerFunction)} or less each` : "; nothing fits"}`;
  };
  return [
    `Each stage's reservations (${apiFunctions} API functions × \`functions.reservedConcurrency\`, plus background functions) against an account's quota, Lambda keeping ${MINIMUM_UNRESERVED_CONCURRENCY} unreserved ("each": the most \`reservedConcurrency\` that fits, the stage alone):`,
    "",
    table(
      [
        "Account's concurrent executions",
        `Reservable (all but ${MINIMUM_UNRESERVED_CONCURRENCY})`,
        ...configs.map(
          (config) =>
            `${config.id} (${integer(stageReservedConcurrency(config, apiFunctions))}: ${config.functions.reservedConcurrency} each)`,
        ),
        `Both stages (${integer(bothNeeded)})`,
      ],
      ACCOUNT_CONCURRENCY_EXAMPLES.map((quota) => [
        `${integer(quota)}${quota === awsLimits.lambdaAccountConcurrency ? " (the default)" : ""}`,
        integer(Math.max(quota - MINIMUM_UNRESERVED_CONCURRENCY, 0)),
        ...configs.map((config) => cell(config, quota)),
        bothNeeded + MINIMUM_UNRESERVED_CONCURRENCY <= quota
          ? "deploys"
          : `**refused**: needs a quota of ${integer(bothNeeded + MINIMUM_UNRESERVED_CONCURRENCY)}`,
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
    `**The trigger** is either of these (${production.id}'s POST /pets is throttled at ${integer(t.postThrottle)} a second, \`api.throttlingRateLimit\`, so no higher rate is ever seen):`,
    "",
    `- creates at ${integer(t.createsPerSecond)} per second or more (${percent(SHARDING_TRIGGER.shareOfPostThrottle)} of the throttle) for ${SHARDING_TRIGGER.sustainedMinutes} minutes: the \`CreatesNearThrottle\` alarm (docs/alarms.md), metric \`${metricNames.petsCreated}\` (\`Stage=${production.stage}\`, \`Operation=createPet\`) at ${integer(t.createsPerPeriod)} or more per 5-minute period, ${t.periods} periods running;`,
    `- any POST /pets answered 429 by the stage throttle: the access log in Logs Insights, \`filter method = "POST" and resourcePath = "/pets" and errorType = "THROTTLED" | stats count() by bin(5m)\` (the firewall's 429s have no \`errorType\`), or the table's \`ThrottledRequests\` (\`TableThrottles\`) near that rate.`,
    "",
    `Then raise the throttle, safe up to ${integer(t.throttleBeforeDesign)} creates a second (a third of a partition's ${integer(awsLimits.partitionWriteUnitsPerSecond)} writes); above that, the epochs design must be in production first.`,
  ].join("\n");
}

export function renderMeasured(inputs: CapacityInputs): string {
  const { requests } = inputs.requests;
  const stageIds = Object.keys(requests.listPets.logs);
  const rows = COSTED_KINDS.map((kind) => {
    const r = requests[kind];
    const { title, note, operation } = COSTED_REQUESTS[kind];
    return [
      `${title}: \`${routes[operation].method} ${routes[operation].path}\`${note}`,
      r.calls.join(", "),
      fixed(r.readUnits),
      fixed(r.writeUnits),
      fixed(r.indexWriteUnits),
      stageIds.map((id) => `${r.logs[id]?.events} / ${integer(r.logs[id]?.bytes ?? 0)} B`).join(", "),
      `${integer(r.response.bodyBytes)} + ${integer(r.response.headerBytes)} B`,
      `${fixed(r.durationMs.p50)} ms (p90 ${fixed(r.durationMs.p90)})`,
    ];
  });
  return [
    table(
      [
        "Request",
        "DynamoDB calls",
        "RRU",
        "WRU (table)",
        "WRU (index)",
        `Log events / bytes (${stageIds.join(", ")})`,
        "Answer body + headers",
        "p50 here",
      ],
      rows,
    ),
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
  const fewest = operations * r.writeUnitsPerWrite;
  const most = operations * containers * r.writeUnitsPerWrite;
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
    return [
      config.id,
      integer(cost.containers),
      `${cost.unitsPerKeyDay.fewest} – ${integer(cost.unitsPerKeyDay.most)}`,
      `${dollars(cost.month.fewest)} – ${dollars(cost.month.most)}`,
      `${integer(cost.storedBytes / 1000)} KB, ${cost.storageMonth < 0.001 ? "under $0.001" : dollars(cost.storageMonth)} a month`,
      `${integer(cost.peakWritesPerSecond)} of ${integer(awsLimits.partitionWriteUnitsPerSecond)}`,
    ];
  });
  return [
    `Last-use records of ${integer(r.keys)} keys, each calling all ${keyUseCost(configs[0] as StageConfig).operations} operations every day of a ${r.daysPerMonth}-day month (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      [
        "Stage",
        "Containers per function (`reservedConcurrency`)",
        "WRU a key a day (one container – all)",
        "A month",
        "Stored (no TTL)",
        "Peak `KEYUSE` writes/s, of the partition's",
      ],
      rows,
    ),
  ].join("\n");
}

/** What a stage costs a month with no traffic at all, item by item (what tags let Billing split per stage). */
export function renderBaseline(config: StageConfig, inputs: CapacityInputs): string {
  const stack = inputs.stacks[config.id] as StackFacts;
  const { fixed: f } = stack;
  const p = unitPrices;
  const lines = [
    { item: `CloudWatch alarms (${f.alarms})`, month: f.alarms * p.cloudWatchAlarmMonth },
    { item: `CloudWatch dashboards (${f.dashboards})`, month: f.dashboards * p.cloudWatchDashboardMonth },
    { item: `KMS keys (${f.kmsKeys}: logs, alarm topics)`, month: f.kmsKeys * p.kmsKeyMonth },
    { item: `Secrets Manager secrets (${f.secrets}: the synthetic check's key)`, month: f.secrets * p.secretMonth },
    ...(stack.wafRules > 0
      ? [{ item: `AWS WAF web ACL and its ${stack.wafRules} rules`, month: wafMonth(stack) }]
      : []),
  ];
  const total = lines.reduce((sum, line) => sum + line.month, 0);
  return [
    `Fixed cost a month, ${config.id}, no traffic (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      ["Item", "A month"],
      [...lines.map((line) => [line.item, dollars(line.month)]), ["**Total**", `**${dollars(total)}**`]],
    ),
    "",
    `On top: ${integer(stack.fixed.syntheticRunsPerMonth)} synthetic check runs a month, priced as above; storage and metrics by use. Reserved concurrency (${config.functions.reservedConcurrency} per API function) is free; provisioned (${stack.provisionedConcurrency} here) is not.`,
  ].join("\n");
}

/** Every generated part of the document, by its marker name. */
export function renderSections(configs: readonly StageConfig[], inputs: CapacityInputs): Record<string, string> {
  const sections: Record<string, string> = {
    measured: renderMeasured(inputs),
    concurrency: renderConcurrency(configs),
    keyUses: renderKeyUseCost(configs),
    inputs: `<!-- capacity:inputs ${JSON.stringify(inputs)} -->`,
  };
  const production = configs.find((config) => config.id === "Production");
  if (production) sections.trigger = renderTrigger(production);
  for (const config of configs) {
    sections[`ceilings-${config.id}`] = renderCeilings(config, inputs);
    sections[`cost-${config.id}`] = renderCost(config, inputs);
    sections[`baseline-${config.id}`] = renderBaseline(config, inputs);
  }
  return sections;
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
