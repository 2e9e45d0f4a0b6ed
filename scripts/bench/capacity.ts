/**
 * `npm run bench:capacity`: each stage's capacity and cost on paper (docs/capacity.md). The stage
 * facts come from the per-stage config (infra/config.ts) and from the stacks built from it (function
 * architecture, tracing, reserved concurrency); the per-request facts are measured on dynalite
 * (./requestCost.ts, ./shardedDesign.ts); AWS's limits and unit prices are below, each with its
 * source. The command measures, rewrites the generated parts of docs/capacity.md and prints them;
 * test/integration/capacityDoc.test.ts checks the document against the config and a fresh measurement.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { StageConfig } from "../../infra/config";
import type { TableArea } from "../../lib/db/table";
import { routes } from "../../lib/routes";
import type { CostedRequest, RequestCostResult } from "./requestCost";
import { HOST_RUNTIME, rerunOnHost } from "./runtimes";
import type { ShardedDesignResult } from "./shardedDesign";

export const CAPACITY_DOC = new URL("../../docs/capacity.md", import.meta.url);

/**
 * CloudWatch Logs counts each log event as its UTF-8 message plus 26 bytes.
 * https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html
 */
export const LOG_EVENT_OVERHEAD_BYTES = 26;

/**
 * AWS's limits on the request path, as documented. Defaults of a fresh account; the ones marked
 * adjustable are raised through Service Quotas.
 */
export const awsLimits = {
  /** https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html */
  partitionWriteUnitsPerSecond: 1_000,
  partitionReadUnitsPerSecond: 3_000,
  /** A new on-demand table's warm throughput; it rises with use (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html). */
  newOnDemandTableReadUnitsPerSecond: 12_000,
  newOnDemandTableWriteUnitsPerSecond: 4_000,
  /** Per account and region, shared by every function (https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html). */
  lambdaAccountConcurrency: 1_000,
  /** Per function, since November 2023 (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html). */
  lambdaScalingEnvironmentsPer10Seconds: 1_000,
  /** Per account and region, shared by every API (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html). */
  apiGatewayAccountRequestsPerSecond: 10_000,
  apiGatewayAccountBurst: 5_000,
} as const;

export const sources = {
  partitions: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html",
  adaptiveCapacity: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/burst-adaptive-capacity.html",
  hotPartitions:
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html",
  gsiThroughput:
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations",
  warmThroughput: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput.html",
  capacityUnits: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html",
  lambdaConcurrency: "https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html",
  lambdaScaling: "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html",
  apiGatewayQuotas: "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html",
  apiGatewayThrottling:
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html",
  wafRateRules: "https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based.html",
  logEventSize: "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html",
  lambdaJsonSystemLogs: "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html",
  pricing: {
    lambda: "https://aws.amazon.com/lambda/pricing/",
    apiGateway: "https://aws.amazon.com/api-gateway/pricing/",
    dynamodb: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    waf: "https://aws.amazon.com/waf/pricing/",
    cloudwatch: "https://aws.amazon.com/cloudwatch/pricing/",
    xray: "https://aws.amazon.com/xray/pricing/",
    kms: "https://aws.amazon.com/kms/pricing/",
    secretsManager: "https://aws.amazon.com/secrets-manager/pricing/",
  },
} as const;

/**
 * Unit prices in US dollars, us-east-1, first pricing tier, as published on the pages in
 * `sources.pricing` on the date below. Prices change (DynamoDB on-demand halved on 2024-11-01):
 * re-check them before using the figures for a decision.
 */
export const unitPrices = {
  asOf: "2025-06-01",
  region: "us-east-1",
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecond: { arm64: 0.0000133334, x86_64: 0.0000166667 },
  apiGatewayRestPerMillionRequests: 3.5,
  dynamoPerMillionReadUnits: 0.125,
  dynamoPerMillionWriteUnits: 0.625,
  wafPerMillionRequests: 0.6,
  wafPerWebAclMonth: 5,
  wafPerRuleMonth: 1,
  logsPerGbIngested: 0.5,
  xrayPerMillionTracesRecorded: 5,
  /** X-Ray's default sampling rule: the first request each second, then 5% (https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html). */
  xraySampledFraction: 0.05,
  /** A standard-resolution alarm (period of a minute or more). */
  cloudWatchAlarmMonth: 0.1,
  cloudWatchDashboardMonth: 3,
  /** A customer managed key, rotation included for its first two rotations. */
  kmsKeyMonth: 1,
  secretMonth: 0.4,
} as const;

/**
 * Lambda's own lines per request at system log level INFO with JSON logs: `platform.start` and
 * `platform.report`, in the shape the Lambda docs show (`sources.lambdaJsonSystemLogs`). Not
 * measurable without Lambda, so sized from these samples.
 */
export const lambdaPlatformLineSamples = [
  '{"time":"2026-11-25T16:20:00.000Z","type":"platform.start","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","version":"12"}}',
  '{"time":"2026-11-25T16:20:00.025Z","type":"platform.report","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","metrics":{"durationMs":21.462,"billedDurationMs":22,"memorySizeMB":512,"maxMemoryUsedMB":92},"tracing":{"spanId":"54565fb41ac79632","type":"X-Amzn-Trace-Id","value":"Root=1-6744a6d0-5ac1f1d0a0e54fa5a1c2b3d4;Parent=6c2d1b3a0f9e8d7c;Sampled=1"},"status":"success"}}',
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

/** The stack's facts that are not in the config: read from the stacks the app builds (no bundling). */
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
  /** What the stage's stacks hold that is billed by the month, whatever the traffic. */
  readonly fixed: {
    readonly alarms: number;
    readonly dashboards: number;
    readonly kmsKeys: number;
    readonly secrets: number;
    /** Runs of the synthetic check in a 30-day month. */
    readonly syntheticRunsPerMonth: number;
  };
}

export async function stackFacts(): Promise<Record<string, StackFacts>> {
  const { buildApp } = await import("../../infra/app");
  const { accessLogFormat } = await import("../../infra/stacks/accessLog");
  const { LIVE_ALIAS } = await import("../../infra/stacks/rollout");
  const { SYNTHETIC_CHECK_INTERVAL } = await import("../../infra/stacks/syntheticCheck");
  const { CfnResource } = await import("aws-cdk-lib");
  // Only the construct tree is needed: no stack is bundled.
  const { stages } = buildApp({ context: { "aws:cdk:bundling-stacks": [] } });
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

/** What the document is rendered from: everything but the config is in it, as measured. */
export interface CapacityInputs {
  readonly stacks: Record<string, StackFacts>;
  readonly requests: RequestCostResult;
  readonly sharded: ShardedDesignResult;
}

const OPERATION_OF: Record<CostedRequest, keyof typeof routes> = {
  listPets: "listPets",
  listPetsByStatus: "listPets",
  getPet: "getPet",
  createPet: "createPet",
  createPetIdempotent: "createPet",
};

const AREA_NAMES: Record<TableArea, string> = {
  pets: "`PET` partition",
  syntheticPets: "one synthetic key's `SYNTHETIC_PET#` partition",
  petsByStatus: "`byStatus` index, one status value's partition",
  petIdCounter: "id counter item (`COUNTER`)",
  idempotencyRecords: "one API key's idempotency partition",
  apiKeys: "`APIKEY` partition",
};
/** Areas whose partition is one client's (an API key's) rather than the stage's. */
const PER_CLIENT_AREAS: readonly TableArea[] = ["idempotencyRecords"];

const integer = (value: number) => Math.floor(value).toLocaleString("en-US");
const dollars = (value: number) => `$${value.toFixed(3)}`;
const fixed = (value: number, digits = 2) => String(Math.round(value * 10 ** digits) / 10 ** digits);

interface Ceiling {
  readonly resource: string;
  readonly limit: string;
  /** Requests per second of each costed request the resource carries; absent when not on its path. */
  readonly perRequest: Partial<Record<CostedRequest, number>>;
  readonly raise: string;
  readonly perClient: boolean;
  /** Structural: what is left once the configured stage throttle is raised. */
  readonly configured: boolean;
}

export function ceilings(config: StageConfig, inputs: CapacityInputs): Ceiling[] {
  const kinds = Object.keys(inputs.requests.requests) as CostedRequest[];
  const all = (value: number) => Object.fromEntries(kinds.map((kind) => [kind, value]));
  const stack = inputs.stacks[config.id] as StackFacts;
  const list: Ceiling[] = [];
  const edge = config.edgeProtection;
  if (edge) {
    list.push({
      resource: "AWS WAF rate rule, per API key",
      limit: `${integer(edge.requestsPerApiKey)} requests / ${edge.rateLimitWindowSeconds} s (\`edgeProtection.requestsPerApiKey\`)`,
      perRequest: all(edge.requestsPerApiKey / edge.rateLimitWindowSeconds),
      raise: "`edgeProtection.requestsPerApiKey` in infra/config.ts; a client needing more gets more keys",
      perClient: true,
      configured: true,
    });
    list.push({
      resource: "AWS WAF rate rule, per client address",
      limit: `${integer(edge.requestsPerIp)} requests / ${edge.rateLimitWindowSeconds} s (\`edgeProtection.requestsPerIp\`)`,
      perRequest: all(edge.requestsPerIp / edge.rateLimitWindowSeconds),
      raise: "`edgeProtection.requestsPerIp` in infra/config.ts",
      perClient: true,
      configured: true,
    });
  }
  list.push({
    resource: "API Gateway stage throttle, per method",
    limit: `${integer(config.api.throttlingRateLimit)} rps, burst ${integer(config.api.throttlingBurstLimit)} (\`api.throttling*\`)`,
    perRequest: all(config.api.throttlingRateLimit),
    raise: "`api.throttlingRateLimit` / `api.throttlingBurstLimit` in infra/config.ts, up to the account's quota",
    perClient: false,
    configured: true,
  });
  list.push({
    resource: "API Gateway account quota (every API of the account and region)",
    limit: `${integer(awsLimits.apiGatewayAccountRequestsPerSecond)} rps, burst ${integer(awsLimits.apiGatewayAccountBurst)}`,
    perRequest: all(awsLimits.apiGatewayAccountRequestsPerSecond),
    raise: "Service Quotas (API Gateway, throttle rate, L-8A5B8E43)",
    perClient: false,
    configured: false,
  });
  const concurrency = stack.reservedConcurrency ?? awsLimits.lambdaAccountConcurrency;
  list.push({
    resource:
      stack.reservedConcurrency === undefined
        ? "Lambda concurrency (account quota, shared by every function), at the measured duration"
        : "Lambda reserved concurrency of the function, at the measured duration",
    limit: `${integer(concurrency)} concurrent${stack.provisionedConcurrency > 0 ? `, ${stack.provisionedConcurrency} provisioned` : ", none provisioned"}`,
    perRequest: Object.fromEntries(
      kinds.map((kind) => [kind, (concurrency * 1000) / (inputs.requests.requests[kind].durationMs.p50 || 1)]),
    ),
    raise: "Service Quotas (Lambda, concurrent executions); burst: +1,000 environments per 10 s per function",
    perClient: false,
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
        resource: `DynamoDB ${AREA_NAMES[area]}, ${unit}s`,
        limit: unit === "write" ? "1,000 WRU/s per partition" : "3,000 RRU/s per partition",
        perRequest,
        raise:
          area === "petIdCounter"
            ? "none for one item: ids without a counter (below)"
            : perClient
              ? "one client's: more API keys"
              : "shard the partition (below)",
        perClient,
        configured: false,
      });
    }
  }
  return list;
}

const COLUMNS: readonly CostedRequest[] = [
  "listPets",
  "listPetsByStatus",
  "getPet",
  "createPet",
  "createPetIdempotent",
];
const COLUMN_TITLES: Record<CostedRequest, string> = {
  listPets: "list",
  listPetsByStatus: "list by status",
  getPet: "get",
  createPet: "create",
  createPetIdempotent: "create, idempotent",
};

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
    ...COLUMNS.map((kind) => {
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
  const head = ["Resource", "Limit", ...COLUMNS.map((kind) => COLUMN_TITLES[kind]), "How to raise it"];
  const row = (c: Ceiling) => [c.resource, c.limit, ...COLUMNS.map((kind) => rps(c.perRequest[kind])), c.raise];
  const parts = [
    `Requests per second of each kind each resource carries on its own (${config.id}):`,
    "",
    table(head, [
      ...stageWide.map(row),
      bindingRow("Binds first", stageWide),
      bindingRow(
        "Binds first once the stage throttle is raised",
        stageWide.filter((c) => !c.configured),
      ),
    ]),
  ];
  if (perClient.length > 0) {
    parts.push(
      "",
      "Per client (one API key, one address):",
      "",
      table(head, [...perClient.map(row), bindingRow("Binds first", perClient)]),
    );
  }
  return parts.join("\n");
}

export interface CostLine {
  readonly item: string;
  readonly perMillion: Record<CostedRequest, number>;
}

/** Log bytes of one request: the function's lines (measured), Lambda's own lines and the access log line. */
export function logBytesPerRequest(stageId: string, kind: CostedRequest, inputs: CapacityInputs): number {
  const platform = lambdaPlatformLineSamples.reduce(
    (sum, line) => sum + Buffer.byteLength(line) + LOG_EVENT_OVERHEAD_BYTES,
    0,
  );
  const stack = inputs.stacks[stageId] as StackFacts;
  const own = inputs.requests.requests[kind].logs[stageId]?.bytes ?? 0;
  return own + platform + stack.accessLogLineBytes + LOG_EVENT_OVERHEAD_BYTES;
}

export function costLines(config: StageConfig, inputs: CapacityInputs): CostLine[] {
  const stack = inputs.stacks[config.id] as StackFacts;
  const p = unitPrices;
  const per = (f: (kind: CostedRequest) => number) =>
    Object.fromEntries(COLUMNS.map((kind) => [kind, f(kind)])) as Record<CostedRequest, number>;
  const request = (kind: CostedRequest) => inputs.requests.requests[kind];
  const gb = stack.memoryMb / 1024;
  const lines: CostLine[] = [
    { item: "Lambda requests", perMillion: per(() => p.lambdaPerMillionRequests) },
    {
      item: `Lambda duration (${stack.architecture}, ${stack.memoryMb} MB, billed ms = measured p50 rounded up)`,
      perMillion: per(
        (kind) => (Math.ceil(request(kind).durationMs.p50) / 1000) * gb * p.lambdaPerGbSecond[stack.architecture] * 1e6,
      ),
    },
    { item: "API Gateway REST requests", perMillion: per(() => p.apiGatewayRestPerMillionRequests) },
    {
      item: "DynamoDB on-demand (RRU, WRU with the index write)",
      perMillion: per(
        (kind) =>
          request(kind).readUnits * p.dynamoPerMillionReadUnits +
          (request(kind).writeUnits + request(kind).indexWriteUnits) * p.dynamoPerMillionWriteUnits,
      ),
    },
  ];
  if (config.edgeProtection) lines.push({ item: "AWS WAF requests", perMillion: per(() => p.wafPerMillionRequests) });
  lines.push({
    item: "CloudWatch Logs ingestion (function, Lambda and access log lines)",
    perMillion: per((kind) => (logBytesPerRequest(config.id, kind, inputs) * 1e6 * p.logsPerGbIngested) / 2 ** 30),
  });
  if (stack.tracing) {
    lines.push({
      item: `X-Ray traces (${p.xraySampledFraction * 100}% sampled)`,
      perMillion: per(() => p.xraySampledFraction * p.xrayPerMillionTracesRecorded),
    });
  }
  return lines;
}

/** The web ACL and its rules: billed by the month, whatever the traffic. */
const wafMonth = (stack: StackFacts) =>
  stack.wafRules > 0 ? unitPrices.wafPerWebAclMonth + stack.wafRules * unitPrices.wafPerRuleMonth : 0;

export function renderCost(config: StageConfig, inputs: CapacityInputs): string {
  const lines = costLines(config, inputs);
  const total = Object.fromEntries(
    COLUMNS.map((kind) => [kind, lines.reduce((sum, line) => sum + line.perMillion[kind], 0)]),
  ) as Record<CostedRequest, number>;
  const stack = inputs.stacks[config.id] as StackFacts;
  const perMs = (stack.memoryMb / 1024) * unitPrices.lambdaPerGbSecond[stack.architecture] * 1e3;
  const fixedCosts =
    stack.wafRules > 0
      ? ` Fixed, whatever the traffic: the web ACL and its ${stack.wafRules} rules, $${wafMonth(stack).toFixed(2)} a month.`
      : "";
  return [
    `Cost per million requests, ${config.id} (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      ["Item", ...COLUMNS.map((kind) => COLUMN_TITLES[kind])],
      [
        ...lines.map((line) => [line.item, ...COLUMNS.map((kind) => dollars(line.perMillion[kind]))]),
        ["**Total**", ...COLUMNS.map((kind) => `**${dollars(total[kind])}**`)],
      ],
    ),
    "",
    `Each millisecond more of billed duration adds ${dollars(perMs)} per million requests.${fixedCosts}`,
  ].join("\n");
}

export function renderMeasured(inputs: CapacityInputs, stageIds: readonly string[]): string {
  const { requests } = inputs.requests;
  const rows = COLUMNS.map((kind) => {
    const r = requests[kind];
    return [
      `${COLUMN_TITLES[kind]}: \`${routes[OPERATION_OF[kind]].method} ${routes[OPERATION_OF[kind]].path}\`${kind === "listPets" || kind === "listPetsByStatus" ? ` (${kind === "listPetsByStatus" ? "status, " : ""}20 pets)` : ""}${kind === "createPetIdempotent" ? " + Idempotency-Key" : ""}`,
      r.calls.join(", "),
      fixed(r.readUnits),
      fixed(r.writeUnits),
      fixed(r.indexWriteUnits),
      stageIds.map((id) => `${r.logs[id]?.events} / ${integer(r.logs[id]?.bytes ?? 0)} B`).join(", "),
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
        `Own log events / bytes (${stageIds.join(", ")})`,
        "Duration p50 (here)",
      ],
      rows,
    ),
    "",
    `The key check's GetItem (once per key and container every 30 s, not in a warm request): ${fixed(inputs.requests.keyLookup.readUnits)} RRU. ` +
      `Durations: ${inputs.requests.samples} requests each, Node ${inputs.requests.node}, this machine, dynalite over HTTP on localhost.`,
  ].join("\n");
}

export function renderSharded(inputs: CapacityInputs): string {
  const { sharded } = inputs;
  const head = ["Page", "Current: queries / items / RRU"];
  for (const shards of sharded.shardCounts) {
    head.push(`${shards} shards, one round`, `${shards} shards, chunked`);
  }
  const cost = (c: { queries: number; itemsRead: number; readUnits: number }) =>
    `${fixed(c.queries)} / ${fixed(c.itemsRead)} / ${fixed(c.readUnits)}`;
  const rows = sharded.lists.map((list) => [
    `${list.case} (${list.pages} pages)`,
    cost(list.current),
    ...sharded.shardCounts.flatMap((shards) => {
      const s = list.sharded[String(shards)];
      return s ? [cost(s.oneRound), `${cost(s.chunked)} (chunk ${s.chunk})`] : ["—", "—"];
    }),
  ]);
  return [
    `Per page, averaged over the walk, on ${integer(sharded.pets)} pets (queries / items read / RRU):`,
    "",
    table(head, rows),
    "",
    `Writes per create (table only; both designs also write the index once): current ${fixed(sharded.creates.current.writes)} writes, ${fixed(sharded.creates.current.writeUnits)} WRU; sharded ${fixed(sharded.creates.sharded.writes)} write, ${fixed(sharded.creates.sharded.writeUnits)} WRU.`,
  ].join("\n");
}

/** What a stage costs a month with no traffic at all, item by item (what tags let Billing split per stage). */
export function baselineLines(config: StageConfig, inputs: CapacityInputs): { item: string; month: number }[] {
  const stack = inputs.stacks[config.id] as StackFacts;
  const { fixed: f } = stack;
  const p = unitPrices;
  return [
    { item: `CloudWatch alarms (${f.alarms})`, month: f.alarms * p.cloudWatchAlarmMonth },
    { item: `CloudWatch dashboards (${f.dashboards})`, month: f.dashboards * p.cloudWatchDashboardMonth },
    { item: `KMS keys (${f.kmsKeys}: logs, alarm topics)`, month: f.kmsKeys * p.kmsKeyMonth },
    { item: `Secrets Manager secrets (${f.secrets}: the synthetic check's key)`, month: f.secrets * p.secretMonth },
    ...(stack.wafRules > 0
      ? [{ item: `AWS WAF web ACL and its ${stack.wafRules} rules`, month: wafMonth(stack) }]
      : []),
  ];
}

export function renderBaseline(config: StageConfig, inputs: CapacityInputs): string {
  const lines = baselineLines(config, inputs);
  const total = lines.reduce((sum, line) => sum + line.month, 0);
  const stack = inputs.stacks[config.id] as StackFacts;
  return [
    `Fixed cost a month, ${config.id}, with no traffic (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      ["Item", "A month"],
      [...lines.map((line) => [line.item, dollars(line.month)]), ["**Total**", `**${dollars(total)}**`]],
    ),
    "",
    `On top: the synthetic check's ${integer(stack.fixed.syntheticRunsPerMonth)} runs a month, each a few dozen requests priced as above; storage and point-in-time recovery by size; custom metrics by the metric and month. Reserved concurrency (${config.functions.reservedConcurrency} per API function) costs nothing; provisioned concurrency (${stack.provisionedConcurrency} here) would.`,
  ].join("\n");
}

/** Every generated part of the document, by its marker name. */
export function renderSections(configs: readonly StageConfig[], inputs: CapacityInputs): Record<string, string> {
  const sections: Record<string, string> = {
    measured: renderMeasured(
      inputs,
      configs.map((config) => config.id),
    ),
    sharded: renderSharded(inputs),
    inputs: `<!-- capacity:inputs ${JSON.stringify(inputs)} -->`,
  };
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
  const { measureShardedDesign } = await import("./shardedDesign");
  const started = performance.now();
  const inputs: CapacityInputs = {
    stacks: await stackFacts(),
    requests: await measureRequestCost(),
    sharded: await measureShardedDesign(),
  };
  const configs = Object.values(stageConfigs);
  const sections = renderSections(configs, inputs);
  writeFileSync(CAPACITY_DOC, replaceSections(readFileSync(CAPACITY_DOC, "utf8"), sections));
  for (const [name, content] of Object.entries(sections)) {
    if (name === "inputs") continue;
    console.log(`\n## ${name}\n\n${content}`);
  }
  console.log(`\ndocs/capacity.md updated (${Math.round((performance.now() - started) / 1000)} s).`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`bench:capacity failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
