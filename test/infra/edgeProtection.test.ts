/**
 * The edge firewall on a small stack of its own (no functions to bundle): rules, answers, metrics.
 * Values come from the production stage config and the API's one body limit; docs/alarms.md's
 * "What pages and why" table is held against the template here.
 */
import { readFileSync } from "node:fs";
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import {
  bodyInspectionLimitFor,
  EDGE_PAGING_ALARM_ID,
  EDGE_RULES,
  EdgeProtection,
  RATE_LIMIT_RULES,
  rateLimitedRequests,
} from "../../infra/stacks/edgeProtection";
import { edgeErrors, errorTemplate } from "../../infra/stacks/gatewayErrors";
import { Monitoring } from "../../infra/stacks/monitoring";
import { MAX_BODY_BYTES } from "../../lib/contract/schemas";
import { COMMON_HEADERS } from "../../lib/http/middleware/responseEnvelope";
import { scratchDirectory } from "../support/scratch";

const config = stageConfigs.Production.edgeProtection;
if (!config) throw new Error("production has an edge firewall");

interface Rule {
  Name: string;
  Priority: number;
  Statement: Record<string, Record<string, unknown>>;
  Action?: { Block?: { CustomResponse?: CustomResponse } };
  OverrideAction?: Record<string, unknown>;
}
interface CustomResponse {
  ResponseCode: number;
  CustomResponseBodyKey: string;
  ResponseHeaders: { Name: string; Value: string }[];
}

let template: Template;
let webAcl: {
  Rules: Rule[];
  CustomResponseBodies: Record<string, { ContentType: string; Content: string }>;
  AssociationConfig: unknown;
  Scope: string;
  DefaultAction: unknown;
};
const rule = (name: string): Rule => {
  const found = webAcl.Rules.find((candidate) => candidate.Name === name);
  if (!found) throw new Error(`no rule ${name}`);
  return found;
};

beforeAll(() => {
  const stack = new Stack(new App({ outdir: scratchDirectory() }), "EdgeUnderTest");
  const api = new apigateway.RestApi(stack, "Api", { cloudWatchRole: false });
  api.root.addMethod("GET", new apigateway.MockIntegration());
  const table = new dynamodb.TableV2(stack, "Table", {
    partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
  });
  const monitoring = new Monitoring(stack, "Monitoring", {
    stage: "prod",
    methodThrottlePerSecond: 100,
    api,
    functions: {},
    table,
    config: stageConfigs.Production.monitoring,
    functionTimeout: stageConfigs.Production.functions.timeout,
    destinations: { alarmEmails: [] },
    rateLimitedRequests: rateLimitedRequests(stack, "prod"),
  });
  new EdgeProtection(stack, "Edge", { stage: "prod", api, config, maxBodyBytes: MAX_BODY_BYTES, monitoring });
  template = Template.fromStack(stack);
  webAcl = Object.values(template.findResources("AWS::WAFv2::WebACL"))[0]?.Properties;
});

interface AlarmProperties {
  Threshold: number;
  EvaluationPeriods: number;
  Metrics: {
    Id: string;
    Expression?: string;
    MetricStat?: { Metric: { MetricName: string; Dimensions: { Name: string; Value: unknown }[] } };
  }[];
}
function alarmNamed(logicalIdStart: string): AlarmProperties {
  const found = Object.entries(template.findResources("AWS::CloudWatch::Alarm")).filter(([id]) =>
    id.startsWith(logicalIdStart),
  );
  if (found.length !== 1) throw new Error(`expected one ${logicalIdStart} alarm, found ${found.length}`);
  return found[0]?.[1].Properties;
}
const pagingAlarm = () => alarmNamed(`Edge${EDGE_PAGING_ALARM_ID}`);

/**
 * The value CloudWatch would compute for an alarm's metric math, given each metric's sum in the
 * period: the expressions use only IF, FILL, arithmetic and comparisons, which read the same in JS.
 */
function evaluateAlarm(alarm: AlarmProperties, sums: Readonly<Record<string, number>>): number {
  const byId = new Map(alarm.Metrics.map((metric) => [metric.Id, metric]));
  const value = (id: string): number => {
    const metric = byId.get(id);
    if (!metric) throw new Error(`no metric ${id}`);
    if (!metric.Expression) {
      const key = metricsOf(alarm)[id] ?? "";
      return sums[key] ?? 0;
    }
    const ids = [...byId.keys()].filter((other) => new RegExp(`\\b${other}\\b`).test(metric.Expression ?? ""));
    const run = new Function("IF", "FILL", ...ids, `return ${metric.Expression};`);
    return run(
      (condition: boolean, then: number, otherwise: number) => (condition ? then : otherwise),
      (series: number) => series,
      ...ids.map(value),
    );
  };
  const returned = alarm.Metrics.find((metric) => (metric as { ReturnData?: boolean }).ReturnData !== false);
  if (!returned) throw new Error("no returned metric");
  return value(returned.Id);
}
const expressionOf = (alarm: AlarmProperties) => alarm.Metrics.find((metric) => metric.Expression)?.Expression;
/** Each metric the alarm's expression reads, by id: `<metric name>/<Rule dimension>` (API Gateway's: the name). */
const metricsOf = (alarm: AlarmProperties) =>
  Object.fromEntries(
    alarm.Metrics.flatMap(({ Id, MetricStat }) =>
      MetricStat
        ? [
            [
              Id,
              [MetricStat.Metric.MetricName, MetricStat.Metric.Dimensions.find((d) => d.Name === "Rule")?.Value]
                .filter(Boolean)
                .join("/"),
            ],
          ]
        : [],
    ),
  );

/** The rows of docs/alarms.md's "What pages and why (edge firewall)" table. */
function docTable() {
  const text = readFileSync(new URL("../../docs/alarms.md", import.meta.url), "utf8");
  const section = text.split(/^## /m).find((part) => part.startsWith("What pages and why (edge firewall)"));
  if (!section) throw new Error('docs/alarms.md has no "What pages and why (edge firewall)" section');
  return section
    .split("\n")
    .filter((line) => line.startsWith("| ") && !line.startsWith("| Alarm or metric"))
    .map((line) => {
      const [name = "", pages = "", firesWhen = ""] = line.split(" | ").map((cell) => cell.replace(/^\| /, ""));
      return { name: name.replaceAll("`", ""), pages, firesWhen };
    });
}

/** The answer a rule's block gives: status, headers and the JSON body it names. */
function answerOf(name: string) {
  const response = rule(name).Action?.Block?.CustomResponse;
  if (!response) throw new Error(`rule ${name} has no custom response`);
  const body = webAcl.CustomResponseBodies[response.CustomResponseBodyKey];
  return {
    status: response.ResponseCode,
    headers: Object.fromEntries(response.ResponseHeaders.map((header) => [header.Name, header.Value])),
    contentType: body?.ContentType,
    body: JSON.parse(body?.Content ?? "null"),
  };
}

describe("edge firewall (AWS WAF)", () => {
  it("is a regional web ACL that allows by default, associated with the API's stage", () => {
    const association = Object.values(template.findResources("AWS::WAFv2::WebACLAssociation"))[0]?.Properties;

    expect(webAcl.Scope).toBe("REGIONAL");
    expect(webAcl.DefaultAction).toEqual({ Allow: {} });
    expect(JSON.stringify(association?.ResourceArn)).toContain("/stages/");
    expect(association?.WebACLArn).toEqual({ "Fn::GetAtt": [expect.stringContaining("EdgeWebAcl"), "Arn"] });
  });

  it("limits each API key (the Authorization header, however the scheme is spelled) to its budget", () => {
    const statement = rule(EDGE_RULES.ratePerApiKey).Statement.RateBasedStatement;

    expect(statement).toMatchObject({
      Limit: config.requestsPerApiKey,
      EvaluationWindowSec: config.rateLimitWindowSeconds,
      AggregateKeyType: "CUSTOM_KEYS",
      CustomKeys: [
        {
          Header: {
            Name: "authorization",
            TextTransformations: [
              { Priority: 0, Type: "LOWERCASE" },
              { Priority: 1, Type: "COMPRESS_WHITE_SPACE" },
            ],
          },
        },
      ],
    });
  });

  it("limits each client address, with or without a key", () => {
    expect(rule(EDGE_RULES.ratePerIp).Statement.RateBasedStatement).toEqual({
      Limit: config.requestsPerIp,
      EvaluationWindowSec: config.rateLimitWindowSeconds,
      AggregateKeyType: "IP",
    });
  });

  it("answers a rate limit 429 too_many_requests in the Error shape, with Retry-After of the window", () => {
    for (const name of [EDGE_RULES.ratePerApiKey, EDGE_RULES.ratePerIp]) {
      const answer = answerOf(name);

      expect(answer.status).toBe(429);
      expect(answer.contentType).toBe("APPLICATION_JSON");
      expect(answer.body).toEqual({ code: "too_many_requests", message: expect.any(String), status: 429 });
      expect(answer.headers).toEqual({
        "Retry-After": String(config.rateLimitWindowSeconds),
        "Cache-Control": COMMON_HEADERS["Cache-Control"],
        "X-Content-Type-Options": COMMON_HEADERS["X-Content-Type-Options"],
      });
    }
  });

  it("blocks a body over the API's limit 413 payload_too_large, also beyond what it can inspect", () => {
    const answer = answerOf(EDGE_RULES.bodySize);

    expect(rule(EDGE_RULES.bodySize).Statement.SizeConstraintStatement).toEqual({
      FieldToMatch: { Body: { OversizeHandling: "MATCH" } },
      ComparisonOperator: "GT",
      Size: MAX_BODY_BYTES,
      TextTransformations: [{ Priority: 0, Type: "NONE" }],
    });
    expect(webAcl.AssociationConfig).toEqual({
      RequestBody: { API_GATEWAY: { DefaultSizeInspectionLimit: "KB_16" } },
    });
    expect(answer.status).toBe(413);
    expect(answer.body).toEqual({ code: "payload_too_large", message: expect.any(String), status: 413 });
  });

  it("inspects at least as much of the body as the API accepts", () => {
    expect(bodyInspectionLimitFor(16 * 1024)).toBe("KB_16");
    expect(bodyInspectionLimitFor(10_000)).toBe("KB_16");
    expect(bodyInspectionLimitFor(16 * 1024 + 1)).toBe("KB_32");
    expect(() => bodyInspectionLimitFor(64 * 1024 + 1)).toThrow(/64 KB/);
  });

  it("takes its answers from the gateway's error definitions, so both say the same", () => {
    expect(Object.values(webAcl.CustomResponseBodies).map((body) => body.Content)).toEqual(
      expect.arrayContaining([errorTemplate(edgeErrors.tooManyRequests), errorTemplate(edgeErrors.payloadTooLarge)]),
    );
  });

  it("runs the IP reputation, known bad inputs and core rule sets, the core set's 8 KB body rule only counting", () => {
    const managed = (name: string) => rule(name).Statement.ManagedRuleGroupStatement;

    for (const name of [EDGE_RULES.ipReputation, EDGE_RULES.knownBadInputs, EDGE_RULES.coreRuleSet]) {
      expect(managed(name)).toMatchObject({ VendorName: "AWS", Name: name });
      // Blocks keep their own actions; API Gateway answers them with WAF_FILTERED: 403 forbidden.
      expect(rule(name).OverrideAction).toEqual({ None: {} });
    }
    expect(managed(EDGE_RULES.coreRuleSet)?.RuleActionOverrides).toEqual([
      { Name: "SizeRestrictions_BODY", ActionToUse: { Count: {} } },
    ]);
  });

  it("checks threat-listed addresses first, then the rate limits, then the body size, then the managed rules", () => {
    const order = [...webAcl.Rules].sort((a, b) => a.Priority - b.Priority).map((candidate) => candidate.Name);

    expect(order).toEqual([
      EDGE_RULES.ipReputation,
      EDGE_RULES.ratePerIp,
      EDGE_RULES.ratePerApiKey,
      EDGE_RULES.bodySize,
      EDGE_RULES.knownBadInputs,
      EDGE_RULES.coreRuleSet,
    ]);
  });

  it("pages on the share the non-rate-limit rules block, above a minimum volume, to the stage's alarm topic", () => {
    const [topicId] = Object.keys(template.findResources("AWS::SNS::Topic")).filter((id) => id.includes("AlarmTopic"));
    const alarm = pagingAlarm();

    expect(alarm).toMatchObject({
      Threshold: config.pageOnBlockedShare.share,
      EvaluationPeriods: config.pageOnBlockedShare.periods,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
      AlarmActions: [{ Ref: topicId }],
      OKActions: [{ Ref: topicId }],
    });
    expect(expressionOf(alarm)).toMatch(new RegExp(`^IF\\(.+ >= ${config.pageOnBlockedShare.minimumRequests}, `));
    // Every other rule's blocks count, each from its own metric, over the same web ACL.
    expect(Object.values(metricsOf(alarm)).sort()).toEqual(
      [
        "AllowedRequests/ALL",
        ...Object.values(EDGE_RULES)
          .filter((name) => !RATE_LIMIT_RULES.includes(name))
          .map((name) => `BlockedRequests/${name}`),
      ].sort(),
    );
  });

  it("reads no metric a single key over its rate limit moves, so that key cannot trip the page", () => {
    const read = Object.values(metricsOf(pagingAlarm()));

    expect(RATE_LIMIT_RULES).toEqual(expect.arrayContaining([EDGE_RULES.ratePerApiKey, EDGE_RULES.ratePerIp]));
    for (const name of RATE_LIMIT_RULES) expect(read).not.toContain(`BlockedRequests/${name}`);
    // The web ACL's total blocks include the rate rules' blocks.
    expect(read).not.toContain("BlockedRequests/ALL");
    // The only other alarm that reads the firewall's metrics reads the rate rules' blocks to take them out.
    const others = Object.entries(template.findResources("AWS::CloudWatch::Alarm")).filter(
      ([id, found]) =>
        !id.startsWith(`Edge${EDGE_PAGING_ALARM_ID}`) && JSON.stringify(found.Properties).includes("AWS/WAFV2"),
    );
    expect(others.map(([id]) => id)).toEqual([expect.stringMatching(/^MonitoringClientErrorRate/)]);
  });

  it("leaves a single key at twice its rate limit out of the client error alarm, and still sees clients failing", () => {
    const clientErrors = alarmNamed("MonitoringClientErrorRate");
    const threshold = stageConfigs.Production.monitoring.clientErrorRate;
    const perPeriod = (perWindow: number) => (perWindow * 300) / config.rateLimitWindowSeconds;
    // 5 minutes of ordinary traffic, 2% of it 4xx, and one key sending twice its limit.
    const ordinary = 5000;
    const refused = perPeriod(config.requestsPerApiKey);
    const flood = {
      Count: ordinary + 2 * refused,
      "4XXError": ordinary * 0.02 + refused,
      [`BlockedRequests/${EDGE_RULES.ratePerApiKey}`]: refused,
    };
    // The flood alone would be over the threshold if its refusals counted.
    expect(flood["4XXError"] / flood.Count).toBeGreaterThan(threshold);
    // What is left is the ordinary 4xx among the requests that reached the API (the key's allowed half included).
    expect(evaluateAlarm(clientErrors, flood)).toBeCloseTo((ordinary * 0.02) / (ordinary + refused));
    // Clients failing on their own still page, flood or not (the flood's allowed half dilutes, no more).
    const failing = { ...flood, "4XXError": ordinary * 0.9 + refused };
    expect(evaluateAlarm(clientErrors, failing)).toBeGreaterThan(threshold);
    expect(evaluateAlarm(clientErrors, { Count: ordinary, "4XXError": ordinary * 0.5 })).toBe(0.5);
  });

  it("pages as docs/alarms.md's table says, and its non-paging rows are the rate rules' own metrics and limits", () => {
    const rows = docTable();
    const paging = rows.filter((row) => row.pages === "yes");
    const quiet = rows.filter((row) => row.pages === "no");

    expect(paging.map((row) => row.name)).toEqual([EDGE_PAGING_ALARM_ID]);
    const [, share, minimum, periods] =
      /^≥ (\d+)% of requests .*at least (\d+) requests in 5 min, (\d+) periods in a row$/.exec(
        paging[0]?.firesWhen ?? "",
      ) ?? [];
    const alarm = pagingAlarm();
    expect(Number(share) / 100).toBe(alarm.Threshold);
    expect(Number(periods)).toBe(alarm.EvaluationPeriods);
    expect(expressionOf(alarm)).toContain(`>= ${minimum},`);

    expect(quiet.map((row) => row.name).sort()).toEqual(RATE_LIMIT_RULES.map((name) => `metric ${name}`).sort());
    for (const row of quiet) {
      const [, limit, window] = /^over (\d+) requests per (\d+) s /.exec(row.firesWhen) ?? [];
      const statement = rule(row.name.replace("metric ", "")).Statement.RateBasedStatement;
      expect({ Limit: Number(limit), EvaluationWindowSec: Number(window) }).toEqual({
        Limit: statement?.Limit,
        EvaluationWindowSec: statement?.EvaluationWindowSec,
      });
    }
  });

  it("shows allowed and blocked requests, per rule, on the stage's dashboard", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    expect(body).toContain("Edge firewall (AWS WAF)");
    expect(body).toContain("AWS/WAFV2");
    expect(body).toContain("AllowedRequests");
    for (const name of Object.values(EDGE_RULES)) expect(body).toContain(name);
  });

  it("shows each client over its rate limit, with the limit, on the dashboard, and the paging share with its line", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    expect(body).toContain("Edge: clients over their rate limit (not a page)");
    expect(body).toContain(
      `${EDGE_RULES.ratePerApiKey}: over ${config.requestsPerApiKey} per ${config.rateLimitWindowSeconds} s`,
    );
    expect(body).toContain(
      `${EDGE_RULES.ratePerIp}: over ${config.requestsPerIp} per ${config.rateLimitWindowSeconds} s`,
    );
    expect(body).toContain(`pages at ${config.pageOnBlockedShare.share * 100}%`);
  });
});
