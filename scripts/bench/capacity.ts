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
import { type StageConfig, stageReservedConcurrency } from "../../infra/config";
import { CREATES_NEAR_THROTTLE } from "../../infra/stacks/monitoring";
import type { TableArea } from "../../lib/db/table";
import { metricNames } from "../../lib/observability/metrics";
import { type OperationId, routes } from "../../lib/routes";
import { MINIMUM_UNRESERVED_CONCURRENCY } from "../preflight/checks";
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
  /**
   * Per account and region, shared by every function (https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html):
   * the default. New accounts start lower, and AWS raises it with use
   * (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
   */
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
  itemSizes: "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html",
  /** A conditional write whose condition fails still consumes write units (at least 1). */
  conditionalWrites:
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#write-operation-consumption",
  lambdaConcurrency: "https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html",
  lambdaScaling: "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html",
  apiGatewayQuotas: "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html",
  apiGatewayThrottling:
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html",
  wafRateRules: "https://docs.aws.amazon.com/waf/latest/developerguide/waf-rule-statement-type-rate-based.html",
  logEventSize: "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html",
  lambdaJsonSystemLogs: "https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-logformat.html",
  lambdaQuotas: "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
  lambdaReservedConcurrency: "https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html",
  initBilling: "https://aws.amazon.com/blogs/compute/aws-lambda-standardizes-billing-for-init-phase/",
  xraySampling: "https://docs.aws.amazon.com/xray/latest/devguide/xray-console-sampling.html",
  apiGatewayXray: "https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-enabling-xray.html",
  pricing: {
    lambda: "https://aws.amazon.com/lambda/pricing/",
    apiGateway: "https://aws.amazon.com/api-gateway/pricing/",
    dynamodb: "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    waf: "https://aws.amazon.com/waf/pricing/",
    cloudwatch: "https://aws.amazon.com/cloudwatch/pricing/",
    xray: "https://aws.amazon.com/xray/pricing/",
    dataTransfer: "https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer",
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
  /** Standard table class, after the first 25 GB a month. */
  dynamoPerGbMonthStored: 0.25,
  wafPerMillionRequests: 0.6,
  wafPerWebAclMonth: 5,
  wafPerRuleMonth: 1,
  logsPerGbIngested: 0.5,
  /**
   * A trace is one request, whatever services add segments to it (API Gateway's and Lambda's here):
   * X-Ray bills traces recorded, and traces retrieved or scanned when someone reads them.
   */
  xrayPerMillionTracesRecorded: 5,
  xrayPerMillionTracesRetrievedOrScanned: 0.5,
  xrayFreeTracesRecordedPerMonth: 100_000,
  /**
   * API Gateway bills data transfer out at the EC2 rates (https://aws.amazon.com/api-gateway/pricing/):
   * to the internet, per GB after the first 100 GB a month, which every service of the account shares.
   */
  dataTransferOutPerGb: 0.09,
  dataTransferOutFreeGbPerMonth: 100,
  /** A standard-resolution alarm (period of a minute or more). */
  cloudWatchAlarmMonth: 0.1,
  cloudWatchDashboardMonth: 3,
  /** A customer managed key, rotation included for its first two rotations. */
  kmsKeyMonth: 1,
  secretMonth: 0.4,
} as const;

/**
 * X-Ray's default sampling rule, which API Gateway applies to the stage (active tracing) and Lambda
 * follows (the gateway's trace header says whether the request is sampled): a reservoir of one
 * request a second, then a fixed rate of the rest. The reservoir is the rule's, shared by every
 * service of the account using it (`sources.xraySampling`, `sources.apiGatewayXray`).
 */
export const xrayDefaultSampling = { reservoirPerSecond: 1, fixedRate: 0.05 } as const;

/** The share of requests X-Ray records at `requestsPerSecond` under the default rule. */
export function xrayTracedShare(requestsPerSecond: number): number {
  if (!(requestsPerSecond > 0)) throw new Error("requests per second must be above 0");
  const { reservoirPerSecond, fixedRate } = xrayDefaultSampling;
  return (
    (Math.min(requestsPerSecond, reservoirPerSecond) +
      fixedRate * Math.max(requestsPerSecond - reservoirPerSecond, 0)) /
    requestsPerSecond
  );
}

/** Traffic levels the X-Ray line is priced at, per stage; above its throttles a stage cannot go. */
export const TRAFFIC_LEVELS_PER_SECOND = [1, 10, 100] as const;

/**
 * Shares of requests that meet a cold start, priced per million: a busy stage (a new environment
 * for a burst, a deploy, Lambda's periodic recycling) and a quiet one, where an environment is
 * gone before the next request comes.
 */
export const COLD_START_SHARES = [0.001, 0.01, 0.5, 1] as const;
/** The shares the two totals assume. */
export const BUSY_COLD_SHARE = 0.001;
export const QUIET_COLD_SHARE = 0.5;

/** What one cold start of a function took, as the bench measures it (scripts/bench/firstResponse.ts). */
export interface ColdStartFigures {
  /** Node's own boot, from process start to the first line of code: the floor of Lambda's runtime start. */
  readonly bootMs: number;
  /** Importing the function's bundle (INIT's part that is our code). */
  readonly importMs: number;
  /** The first request, after the import: its SDK clients, first connection and first DynamoDB calls. */
  readonly firstRequestMs: number;
}

export interface ColdStartInputs {
  /** The Node.js they were measured on (Lambda's nodejs24.x). */
  readonly node: string;
  /** Where they come from, to replace them from the next bench. */
  readonly source: string;
  readonly functions: Readonly<Record<OperationId, ColdStartFigures>>;
}

/**
 * THE ONE PLACE the cold-start figures are written: medians from `npm run bench` (the first-response
 * bench), copied here by hand; `npm run bench:capacity` records them in docs/capacity.md's inputs
 * and renders the billed-INIT lines from them. Replace them with the bench's figures and run
 * `npm run bench:capacity`.
 */
export const COLD_START_FIGURES: ColdStartInputs = {
  node: "v24.21.0",
  source:
    "`npm run bench` of 2026-11-26, coldStart.<operation>.firstResponseMs (its import and first-request medians) and coldStart.nodeBootMs, on Node v24.21.0, against https DynamoDB on this machine",
  functions: {
    listPets: { bootMs: 17.9, importMs: 29.5, firstRequestMs: 36.6 },
    getPet: { bootMs: 17.9, importMs: 30.7, firstRequestMs: 35.0 },
    createPet: { bootMs: 17.9, importMs: 29.8, firstRequestMs: 39.9 },
  },
};

/**
 * When the design past the first ceiling starts (docs/capacity.md): creates near the production
 * stage's POST /pets throttle, which is observable today, unlike any rate above that throttle.
 */
export const SHARDING_TRIGGER = {
  /** Creates per second, as a share of the production stage's throttle on POST /pets: the alarm's. */
  shareOfPostThrottle: CREATES_NEAR_THROTTLE.shareOfThrottle,
  /** For this long, on the dashboard's 5-minute periods. */
  sustainedMinutes: CREATES_NEAR_THROTTLE.sustainedMinutes,
  /** The throttle may be raised while creates stay below this share of one partition's writes. */
  headroomShareOfPartition: 1 / 3,
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

/**
 * What API Gateway adds to a function's answer on the wire: the status line, its own headers and
 * the empty line that ends them, in a sample of an HTTP/1.1 answer of a traced stage. HTTP/2
 * compresses headers (less); TLS records, TCP/IP packets and a new connection's TLS handshake (its
 * certificate chain, a few KB) are not counted.
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
  /** Copied from COLD_START_FIGURES: measured by `npm run bench`, not by this command. */
  readonly coldStart: ColdStartInputs;
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
  keyUses: "`KEYUSE` partition, one key and operation's item",
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

/** Bytes one answer sends to the client: the function's body and headers (measured) and API Gateway's part. */
export function answerBytes(kind: CostedRequest, inputs: CapacityInputs): number {
  const { bodyBytes, headerBytes } = inputs.requests.requests[kind].response;
  return bodyBytes + headerBytes + apiGatewayAnswerSample.reduce((sum, line) => sum + Buffer.byteLength(line) + 2, 0);
}

const perKind = (f: (kind: CostedRequest) => number) =>
  Object.fromEntries(COLUMNS.map((kind) => [kind, f(kind)])) as Record<CostedRequest, number>;

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
      item: `Lambda duration (${stack.architecture}, ${stack.memoryMb} MB, billed ms = measured p50 rounded up)`,
      perMillion: perKind((kind) => Math.ceil(request(kind).durationMs.p50) * perBilledMs(stack) * 1e6),
    },
    { item: "API Gateway REST requests", perMillion: perKind(() => p.apiGatewayRestPerMillionRequests) },
    {
      item: "DynamoDB on-demand (RRU, WRU with the index write)",
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
    item: "CloudWatch Logs ingestion (function, Lambda and access log lines)",
    perMillion: perKind((kind) => (logBytesPerRequest(config.id, kind, inputs) * 1e6 * p.logsPerGbIngested) / 2 ** 30),
  });
  lines.push({
    item: `Data transfer out (the answer with its headers, $${p.dataTransferOutPerGb.toFixed(2)}/GB)`,
    perMillion: perKind((kind) => (answerBytes(kind, inputs) * 1e6 * p.dataTransferOutPerGb) / 2 ** 30),
  });
  return lines;
}

/** The traffic levels a stage's X-Ray line is priced at: the stated ones, capped at what its throttles let through. */
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

/** What one cold start of a costed request bills beyond a warm one, in milliseconds. */
export interface ColdStartCost {
  readonly operation: OperationId;
  /** Lambda's runtime start (its floor: Node's boot) and our import: what INIT bills. */
  readonly initMs: number;
  readonly firstRequestMs: number;
  /** INIT and the first request, rounded up to the millisecond as Lambda bills duration. */
  readonly coldBilledMs: number;
  /** A warm request of the same kind: its measured p50 rounded up. */
  readonly warmBilledMs: number;
  /** Dollars one cold start adds to the bill beyond a warm request. */
  readonly extraDollars: number;
}

export function coldStartCost(config: StageConfig, inputs: CapacityInputs, kind: CostedRequest): ColdStartCost {
  const stack = inputs.stacks[config.id] as StackFacts;
  const operation = OPERATION_OF[kind];
  const figures = inputs.coldStart.functions[operation];
  const initMs = figures.bootMs + figures.importMs;
  const coldBilledMs = Math.ceil(initMs + figures.firstRequestMs);
  const warmBilledMs = Math.ceil(inputs.requests.requests[kind].durationMs.p50);
  return {
    operation,
    initMs,
    firstRequestMs: figures.firstRequestMs,
    coldBilledMs,
    warmBilledMs,
    extraDollars: (coldBilledMs - warmBilledMs) * perBilledMs(stack),
  };
}

/** Cold starts per million requests at each share of requests that meets one. */
export function coldStartLines(config: StageConfig, inputs: CapacityInputs): (CostLine & { share: number })[] {
  return COLD_START_SHARES.map((share) => ({
    share,
    item: `Cold starts in ${share === 1 ? "every request" : `${percent(share)} of requests`} (billed INIT, first request)`,
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
  const at = (requestsPerSecond: number, share: number) => [
    ...every,
    ...xray.filter((line) => line.requestsPerSecond === requestsPerSecond),
    ...cold.filter((line) => line.share === share),
  ];
  return [
    {
      item: `**Total, busy: ${integer(busy)} req/s, ${percent(BUSY_COLD_SHARE)} cold**`,
      perMillion: perKind((kind) => sum(at(busy, BUSY_COLD_SHARE), kind)),
    },
    {
      item: `**Total, quiet: 1 req/s or less, ${percent(QUIET_COLD_SHARE)} cold**`,
      perMillion: perKind((kind) => sum(at(1, QUIET_COLD_SHARE), kind)),
    },
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
  const row = (line: CostLine) => [line.item, ...COLUMNS.map((kind) => dollars(line.perMillion[kind]))];
  const bold = (line: CostLine) => [line.item, ...COLUMNS.map((kind) => `**${dollars(line.perMillion[kind])}**`)];
  const functions = [...new Set(COLUMNS.map((kind) => OPERATION_OF[kind]))];
  const firstKind = (operation: OperationId) =>
    COLUMNS.find((kind) => OPERATION_OF[kind] === operation) as CostedRequest;
  const freeRequests = (kind: CostedRequest) =>
    (unitPrices.dataTransferOutFreeGbPerMonth * 2 ** 30) / answerBytes(kind, inputs) / 1e6;
  return [
    `Cost per million requests, ${config.id} (US dollars, ${unitPrices.region}, prices as of ${unitPrices.asOf}):`,
    "",
    table(
      ["Item", ...COLUMNS.map((kind) => COLUMN_TITLES[kind])],
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
    `One cold start, by function, at ${stack.architecture} and ${stack.memoryMb} MB (figures from ${inputs.coldStart.source}):`,
    "",
    table(
      [
        "Function",
        "INIT: runtime start (Node's boot, its floor) + our import",
        "First request",
        "Billed, cold (INIT + first request)",
        "Billed, warm (p50 here)",
        "A million cold starts add",
      ],
      functions.map((operation) => {
        const cost = coldStartCost(config, inputs, firstKind(operation));
        const figures = inputs.coldStart.functions[operation];
        return [
          `\`${operation}\``,
          `${fixed(figures.bootMs, 1)} + ${fixed(figures.importMs, 1)} = ${fixed(cost.initMs, 1)} ms`,
          `${fixed(cost.firstRequestMs, 1)} ms`,
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
export function concurrencyFit(config: StageConfig, quota: number, alsoReserved = 0) {
  const apiFunctions = Object.keys(routes).length;
  const needed = stageReservedConcurrency(config, apiFunctions);
  const reservable = quota - MINIMUM_UNRESERVED_CONCURRENCY - alsoReserved;
  const background = stageReservedConcurrency(config, 0);
  return {
    needed,
    reservable: Math.max(reservable, 0),
    fits: needed <= reservable,
    /** The quota that would let the reservations through. */
    quotaNeeded: needed + MINIMUM_UNRESERVED_CONCURRENCY + alsoReserved,
    /** The largest `functions.reservedConcurrency` that fits; 0 when none does. */
    largestPerFunction: Math.max(Math.floor((reservable - background) / apiFunctions), 0),
  };
}

export function renderConcurrency(configs: readonly StageConfig[]): string {
  const apiFunctions = Object.keys(routes).length;
  const bothNeeded = configs.reduce((total, config) => total + stageReservedConcurrency(config, apiFunctions), 0);
  const cell = (config: StageConfig, quota: number) => {
    const fit = concurrencyFit(config, quota);
    if (fit.fits) return `deploys (\`reservedConcurrency\` up to ${integer(fit.largestPerFunction)} would fit)`;
    return `**refused**: needs a quota of ${integer(fit.quotaNeeded)}${fit.largestPerFunction > 0 ? `, or \`reservedConcurrency\` ${integer(fit.largestPerFunction)} or less` : "; no reservation fits"}`;
  };
  return [
    `What each stage's reservations need (${apiFunctions} API functions × \`functions.reservedConcurrency\`, plus its background functions) against an account's concurrency quota, Lambda keeping ${MINIMUM_UNRESERVED_CONCURRENCY} unreserved ("would fit": the largest \`reservedConcurrency\` with the stage alone in the account):`,
    "",
    table(
      [
        "Account's concurrent executions",
        `Reservable (all but ${MINIMUM_UNRESERVED_CONCURRENCY})`,
        ...configs.map(
          (config) =>
            `${config.id} (reserves ${integer(stageReservedConcurrency(config, apiFunctions))}: ${config.functions.reservedConcurrency} per API function)`,
        ),
        `Both stages in one account (${integer(bothNeeded)})`,
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
    `**The trigger** fires under today's limits: ${production.id}'s POST /pets is throttled at ${integer(t.postThrottle)} requests per second (\`api.throttlingRateLimit\`), so a rate of creates above that can never be seen. It fires on either of:`,
    "",
    `- creates at ${integer(t.createsPerSecond)} per second or more (${percent(SHARDING_TRIGGER.shareOfPostThrottle)} of that throttle) for ${SHARDING_TRIGGER.sustainedMinutes} minutes, which the \`CreatesNearThrottle\` alarm pages on (docs/alarms.md): the dashboard's "Pets created" line (metric \`${metricNames.petsCreated}\`, \`Stage=${production.stage}\`, \`Operation=createPet\`) at ${integer(t.createsPerPeriod)} or more per 5-minute period, ${t.periods} periods running;`,
    `- any POST /pets answered 429 by the stage throttle, which the stage's access log shows (Logs Insights: \`filter method = "POST" and resourcePath = "/pets" and errorType = "THROTTLED" | stats count() by bin(5m)\`; the firewall's 429s have \`wafResponse\` WAF_BLOCK and no \`errorType\` THROTTLED), or \`ThrottledRequests\` on the table (the \`TableThrottles\` alarm) while creates are near that rate.`,
    "",
    `What it starts: first the throttle is raised (a setting), which is safe up to ${integer(t.throttleBeforeDesign)} creates per second (a third of one partition's ${integer(awsLimits.partitionWriteUnitsPerSecond)} writes, the headroom the counter, \`PET\` and index partitions need); the epochs design must be in production before POST's throttle goes above that.`,
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
        `Own log events / bytes (${stageIds.join(", ")})`,
        "Answer: body + headers (the function's)",
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
  const cost = (c: { queries: number; itemsRead: number; readUnits: number } | null) =>
    c === null ? "—" : `${fixed(c.queries)} / ${fixed(c.itemsRead)} / ${fixed(c.readUnits)}`;
  const busy = sharded.epochs.find((epoch) => epoch.shards > 1);
  const pagesOf = (c: { pages: number } | null) => ((c?.pages ?? 0) === 1 ? "1 page" : `${c?.pages ?? 0} pages`);
  const epochList = sharded.epochs
    .map((epoch, index) => {
      const to = sharded.epochs[index + 1]?.fromPet ?? sharded.pets;
      return `pets ${epoch.fromPet + 1}-${to}: ${epoch.shards === 1 ? "one shard" : `${epoch.shards} shards`}`;
    })
    .join(", ");
  const rows: string[][] = [
    ["Current: one `PET` partition, one index partition per status", ...sharded.lists.map((l) => cost(l.current))],
    [
      "Epochs: a page of pets created while creates were quiet (one shard)",
      ...sharded.lists.map((l) => `${cost(l.epochs.oneShard)} (${pagesOf(l.epochs.oneShard)})`),
    ],
    [
      `Epochs: a page reading the busy epoch (${busy?.shards ?? "—"} shards, chunked)`,
      ...sharded.lists.map((l) => `${cost(l.epochs.sharded)} (${pagesOf(l.epochs.sharded)})`),
    ],
  ];
  for (const shards of sharded.shardCounts) {
    const of = (l: (typeof sharded.lists)[number]) => l.sharded[String(shards)];
    rows.push(
      [`Every pet sharded, ${shards} shards, one round`, ...sharded.lists.map((l) => cost(of(l)?.oneRound ?? null))],
      [
        `Every pet sharded, ${shards} shards, chunked`,
        ...sharded.lists.map((l) => `${cost(of(l)?.chunked ?? null)} (chunk ${of(l)?.chunk ?? "—"})`),
      ],
    );
  }
  const { creates } = sharded;
  const writes = (c: { writes: number; writeUnits: number }) =>
    `${fixed(c.writes)} write${c.writes === 1 ? "" : "s"}, ${fixed(c.writeUnits)} WRU`;
  return [
    `Per page, averaged over every page of each listing, on ${integer(sharded.pets)} pets (queries / items read / RRU); the epochs table has ${epochList}:`,
    "",
    table(["Design", ...sharded.lists.map((l) => `${l.case} (${l.pages} pages)`)], rows),
    "",
    `Writes per create (table only; every design also writes the index once): current ${writes(creates.current)} (the counter and the pet); epochs ${writes(creates.epochs)}; every pet sharded ${writes(creates.sharded)}.`,
  ].join("\n");
}

/**
 * Keys' last-use records (lib/auth/keyUsage.ts): one item per key and operation in `KEYUSE`, written
 * by a conditional UpdateItem that succeeds once per key, operation and day; each warm container
 * tries it at most once per key, operation and day (it remembers what it recorded), and a write
 * whose condition fails costs a write unit all the same (`sources.conditionalWrites`).
 */
export const KEY_USE_RECORDS = {
  /** What one item holds (keys, keyId, operationId, lastUsedOn): about 100 bytes, under 1 KB, so 1 WRU a write. */
  itemBytes: 100,
  writeUnitsPerWrite: 1,
  /** Storage is billed on each item plus 100 bytes of indexing overhead (`sources.itemSizes`). */
  storageOverheadBytesPerItem: 100,
  /** The worked figure: this many keys, each calling every operation every day of a 30-day month. */
  keys: 1_000,
  daysPerMonth: 30,
} as const;

export interface KeyUseCost {
  readonly operations: number;
  /** Warm containers per function at most: the stage's reservation. */
  readonly containers: number;
  /** Write units a key using every operation costs a day: one write per operation, or one per container. */
  readonly unitsPerKeyDay: { readonly fewest: number; readonly most: number };
  /** Dollars a month for KEY_USE_RECORDS.keys such keys. */
  readonly month: { readonly fewest: number; readonly most: number };
  readonly storedBytes: number;
  readonly storageMonth: number;
  /** Writes per second the `KEYUSE` partition can see at most: one per request the stage throttle lets through. */
  readonly peakWritesPerSecond: number;
}

export function keyUseCost(config: StageConfig): KeyUseCost {
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
      `${cost.containers} (\`functions.reservedConcurrency\`)`,
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
        "Warm containers per function, at most",
        "WRU a key a day (one container – every container)",
        "A month, write units",
        "Stored, with DynamoDB's 100 bytes an item (no TTL for ordinary keys)",
        "`KEYUSE` writes per second at most, of the partition's WRU/s",
      ],
      rows,
    ),
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
  const { measureShardedDesign } = await import("./shardedDesign");
  const started = performance.now();
  const inputs: CapacityInputs = {
    stacks: await stackFacts(),
    requests: await measureRequestCost(),
    sharded: await measureShardedDesign(),
    coldStart: COLD_START_FIGURES,
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
