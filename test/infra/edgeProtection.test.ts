/**
 * The edge firewall on a small stack of its own (no functions to bundle): rules, answers, metrics.
 * Values come from the production stage config and the API's one body limit.
 */
import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import { beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { bodyInspectionLimitFor, EDGE_RULES, EdgeProtection } from "../../infra/stacks/edgeProtection";
import { edgeErrors, errorTemplate } from "../../infra/stacks/gatewayErrors";
import { Monitoring } from "../../infra/stacks/monitoring";
import { MAX_BODY_BYTES } from "../../lib/contract/schemas";
import { COMMON_HEADERS } from "../../lib/http/middleware/responseEnvelope";

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
  const stack = new Stack(new App(), "EdgeUnderTest");
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
  });
  new EdgeProtection(stack, "Edge", { stage: "prod", api, config, maxBodyBytes: MAX_BODY_BYTES, monitoring });
  template = Template.fromStack(stack);
  webAcl = Object.values(template.findResources("AWS::WAFv2::WebACL"))[0]?.Properties;
});

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

  it("alarms on blocked requests, to the stage's alarm topic", () => {
    const [topicId] = Object.keys(template.findResources("AWS::SNS::Topic")).filter((id) => id.includes("AlarmTopic"));
    const alarm = Object.entries(template.findResources("AWS::CloudWatch::Alarm")).find(([id]) =>
      id.includes("EdgeBlockedRequests"),
    )?.[1]?.Properties;

    expect(alarm).toMatchObject({
      Namespace: "AWS/WAFV2",
      MetricName: "BlockedRequests",
      Statistic: "Sum",
      Threshold: config.blockedRequestsAlarmThreshold,
      TreatMissingData: "notBreaching",
      AlarmActions: [{ Ref: topicId }],
      OKActions: [{ Ref: topicId }],
    });
    expect(alarm?.Dimensions).toEqual(
      expect.arrayContaining([
        { Name: "WebACL", Value: "petstore-prod" },
        { Name: "Rule", Value: "ALL" },
      ]),
    );
  });

  it("shows allowed and blocked requests, per rule, on the stage's dashboard", () => {
    const [dashboard] = Object.values(template.findResources("AWS::CloudWatch::Dashboard"));
    const body = JSON.stringify(dashboard?.Properties.DashboardBody);

    expect(body).toContain("Edge firewall (AWS WAF)");
    expect(body).toContain("AWS/WAFV2");
    expect(body).toContain("AllowedRequests");
    for (const name of Object.values(EDGE_RULES)) expect(body).toContain(name);
  });
});
