/**
 * The edge firewall: an AWS WAF web ACL in front of the API's stage. Stage throttling is one budget
 * shared by every caller (per method), so without it one client, even one without a key, can push
 * everyone into 429s, and every request, authenticated or not, costs a Lambda invocation. Here:
 * - a rate limit per API key (the Authorization header) and one per client address, answered 429;
 * - a body-size rule: a body over the API's limit is answered 413 before any function runs;
 * - AWS managed rule groups: IP reputation, known bad inputs, and the core rule set.
 * Every answer is the API's Error body, taken from ./gatewayErrors.ts. Its metrics go on the stage's
 * dashboard. An alarm pages when the other rules block a large share of the stage's requests (an
 * attack, or a rule refusing real clients); a client over its rate limit does not page.
 */
import { Duration, Stack } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as wafv2 from "aws-cdk-lib/aws-wafv2";
import { Construct } from "constructs";
import { COMMON_HEADERS } from "../../lib/http/middleware/responseEnvelope";
import { edgeErrors, errorTemplate, type GatewayError } from "./gatewayErrors";
import type { Monitoring } from "./monitoring";

export interface EdgeProtectionConfig {
  /**
   * The window AWS WAF counts each client's requests over, in seconds (60, 120, 300 or 600). A
   * client over its limit is blocked until its count over the last window falls below it again, so
   * this is also the `Retry-After` of the firewall's 429.
   */
  readonly rateLimitWindowSeconds: 60 | 120 | 300 | 600;
  /** Requests one API key (one `Authorization` header value) may send per window. */
  readonly requestsPerApiKey: number;
  /** Requests one client address may send per window, with or without a key. */
  readonly requestsPerIp: number;
  /**
   * When the firewall's blocks page (the `EdgeBlockedShare` alarm): the share of the stage's requests
   * that the rules other than the rate limits blocked, in each of `periods` 5-minute periods in a row
   * with at least `minimumRequests` requests. One client over its rate limit never pages: that is
   * its problem, on the dashboard and in its rule's metric (docs/alarms.md, "What pages and why").
   */
  readonly pageOnBlockedShare: {
    /** A fraction, e.g. 0.1 for 10%. */
    readonly share: number;
    readonly minimumRequests: number;
    readonly periods: number;
  };
}

export interface EdgeProtectionProps {
  readonly stage: string;
  readonly api: apigateway.RestApi;
  readonly config: EdgeProtectionConfig;
  /** The largest request body the API accepts (lib/contract/schemas.ts). */
  readonly maxBodyBytes: number;
  readonly monitoring: Monitoring;
}

/** The rules, in the order AWS WAF evaluates them; names are also their metric names. */
export const EDGE_RULES = {
  ipReputation: "AWSManagedRulesAmazonIpReputationList",
  ratePerIp: "RateLimitPerClientAddress",
  ratePerApiKey: "RateLimitPerApiKey",
  bodySize: "BodySizeLimit",
  knownBadInputs: "AWSManagedRulesKnownBadInputsRuleSet",
  coreRuleSet: "AWSManagedRulesCommonRuleSet",
} as const;

/**
 * The rules whose blocks are one client over its own budget (per key, per address): visible on the
 * dashboard and in their own metrics, never part of the paging alarm's expression.
 */
export const RATE_LIMIT_RULES: readonly string[] = [EDGE_RULES.ratePerIp, EDGE_RULES.ratePerApiKey];

/** The web ACL's name, which its CloudWatch metrics carry as the `WebACL` dimension. */
export const webAclName = (stage: string): string => `petstore-${stage}`;

/**
 * One metric of the stage's web ACL: a rule's (its visibility metric name is the `Rule` dimension)
 * or the whole ACL's (`ALL`). https://docs.aws.amazon.com/waf/latest/developerguide/waf-metrics.html
 */
export function wafMetric(
  scope: Construct,
  stage: string,
  metricName: "AllowedRequests" | "BlockedRequests",
  rule: string,
  label?: string,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: "AWS/WAFV2",
    metricName,
    dimensionsMap: { WebACL: webAclName(stage), Region: Stack.of(scope).region, Rule: rule },
    statistic: "Sum",
    period: EDGE_METRIC_PERIOD,
    ...(label === undefined ? {} : { label }),
  });
}

const EDGE_METRIC_PERIOD = Duration.minutes(5);

/**
 * Requests the per-key and per-address rate limits refused, per 5 minutes: one client over its own
 * budget. API Gateway counts them among its 4xx (WAF answers for API Gateway, which still sees and
 * logs the request: https://repost.aws/questions/QUT-Ts0igfSrCdZdWeuzwLCA), so the client error
 * alarm takes them out (infra/stacks/monitoring.ts). FILL: a rule that blocked nothing publishes no
 * data point.
 */
export function rateLimitedRequests(scope: Construct, stage: string): cloudwatch.MathExpression {
  const ids = RATE_LIMIT_RULES.map((_, index) => `limited${index}`);
  return new cloudwatch.MathExpression({
    expression: ids.map((id) => `FILL(${id}, 0)`).join(" + "),
    usingMetrics: Object.fromEntries(
      RATE_LIMIT_RULES.map((rule, index) => [ids[index], wafMetric(scope, stage, "BlockedRequests", rule)]),
    ),
    label: "refused by the rate limits",
    period: EDGE_METRIC_PERIOD,
  });
}

/** The alarm that pages on the firewall's blocks; its id is also the first column of docs/alarms.md's table. */
export const EDGE_PAGING_ALARM_ID = "EdgeBlockedShare";

/**
 * The body sizes AWS WAF can be told to inspect for API Gateway (the default is 16 KB); a larger
 * setting costs extra. A body beyond the setting is "oversize", which the size rule matches, so the
 * setting only has to be at least the API's limit.
 * https://docs.aws.amazon.com/waf/latest/developerguide/web-acl-setting-body-inspection-limit.html
 */
const BODY_INSPECTION_LIMITS = [
  ["KB_16", 16 * 1024],
  ["KB_32", 32 * 1024],
  ["KB_48", 48 * 1024],
  ["KB_64", 64 * 1024],
] as const;

export function bodyInspectionLimitFor(maxBodyBytes: number): string {
  const fitting = BODY_INSPECTION_LIMITS.find(([, bytes]) => bytes >= maxBodyBytes);
  if (!fitting) throw new Error(`AWS WAF cannot inspect request bodies of ${maxBodyBytes} bytes (64 KB at most).`);
  return fitting[0];
}

/** Custom response body keys of the web ACL, one per firewall answer. */
const BODY_KEYS = { tooManyRequests: "TooManyRequests", payloadTooLarge: "PayloadTooLarge" } as const;

export class EdgeProtection extends Construct {
  readonly webAcl: wafv2.CfnWebACL;
  readonly blockedRequestsAlarm: cloudwatch.Alarm;

  constructor(scope: Construct, id: string, props: EdgeProtectionProps) {
    super(scope, id);
    const { stage, api, config, maxBodyBytes, monitoring } = props;
    const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
      cloudWatchMetricsEnabled: true,
      metricName,
      sampledRequestsEnabled: true,
    });

    // AWS WAF's answers are fixed texts: the Error body and the headers every answer carries, except
    // X-Request-Id (no per-request value can go in) and Content-Type (set from the body's type).
    const blockWith = (
      error: GatewayError,
      bodyKey: string,
      extraHeaders: Record<string, string> = {},
    ): wafv2.CfnWebACL.RuleActionProperty => ({
      block: {
        customResponse: {
          responseCode: error.status,
          customResponseBodyKey: bodyKey,
          responseHeaders: Object.entries({
            "Cache-Control": COMMON_HEADERS["Cache-Control"],
            "X-Content-Type-Options": COMMON_HEADERS["X-Content-Type-Options"],
            ...extraHeaders,
          }).map(([name, value]) => ({ name, value })),
        },
      },
    });
    const rateLimited = blockWith(edgeErrors.tooManyRequests, BODY_KEYS.tooManyRequests, {
      "Retry-After": String(config.rateLimitWindowSeconds),
    });
    const managedRuleGroup = (
      name: string,
      priority: number,
      ruleActionOverrides?: wafv2.CfnWebACL.RuleActionOverrideProperty[],
    ): wafv2.CfnWebACL.RuleProperty => ({
      name,
      priority,
      // The group's rules keep the actions AWS gives them. A request they block has no custom
      // response, so API Gateway answers it with its WAF_FILTERED gateway response: our 403
      // `forbidden`, with X-Request-Id (./gatewayErrors.ts). Matching the groups' labels with a
      // blocking rule of our own instead would also block what a rule only counts (as
      // SizeRestrictions_BODY does here).
      overrideAction: { none: {} },
      statement: {
        managedRuleGroupStatement: { vendorName: "AWS", name, ...(ruleActionOverrides ? { ruleActionOverrides } : {}) },
      },
      visibilityConfig: visibility(name),
    });

    this.webAcl = new wafv2.CfnWebACL(this, "WebAcl", {
      name: webAclName(stage),
      description: `Edge firewall of the Pet Store ${stage} API`,
      scope: "REGIONAL",
      defaultAction: { allow: {} },
      visibilityConfig: visibility(webAclName(stage)),
      customResponseBodies: {
        [BODY_KEYS.tooManyRequests]: {
          contentType: "APPLICATION_JSON",
          content: errorTemplate(edgeErrors.tooManyRequests),
        },
        [BODY_KEYS.payloadTooLarge]: {
          contentType: "APPLICATION_JSON",
          content: errorTemplate(edgeErrors.payloadTooLarge),
        },
      },
      associationConfig: {
        requestBody: { API_GATEWAY: { defaultSizeInspectionLimit: bodyInspectionLimitFor(maxBodyBytes) } },
      },
      rules: [
        // Addresses on AWS's threat lists are refused before they use up anyone's budget.
        managedRuleGroup(EDGE_RULES.ipReputation, 0),
        {
          name: EDGE_RULES.ratePerIp,
          priority: 1,
          statement: {
            rateBasedStatement: {
              limit: config.requestsPerIp,
              evaluationWindowSec: config.rateLimitWindowSeconds,
              aggregateKeyType: "IP",
            },
          },
          action: rateLimited,
          visibilityConfig: visibility(EDGE_RULES.ratePerIp),
        },
        {
          // One budget per key: the header value is the aggregation key, so a request without one
          // is not counted here (only per address). Lower-casing and folding white space stop a
          // client from getting more budgets by respelling the scheme ("Bearer", "bearer  ").
          // https://docs.aws.amazon.com/waf/latest/APIReference/API_RateBasedStatementCustomKey.html
          name: EDGE_RULES.ratePerApiKey,
          priority: 2,
          statement: {
            rateBasedStatement: {
              limit: config.requestsPerApiKey,
              evaluationWindowSec: config.rateLimitWindowSeconds,
              aggregateKeyType: "CUSTOM_KEYS",
              customKeys: [
                {
                  header: {
                    name: "authorization",
                    textTransformations: [
                      { priority: 0, type: "LOWERCASE" },
                      { priority: 1, type: "COMPRESS_WHITE_SPACE" },
                    ],
                  },
                },
              ],
            },
          },
          action: rateLimited,
          visibilityConfig: visibility(EDGE_RULES.ratePerApiKey),
        },
        {
          // Larger than the API accepts: AWS WAF sees the body up to its inspection limit (at least
          // the API's limit, above), and OversizeHandling MATCH counts anything beyond that limit as
          // a match, so every body over maxBodyBytes is answered 413 without invoking a function.
          // https://docs.aws.amazon.com/waf/latest/developerguide/waf-oversize-request-components.html
          name: EDGE_RULES.bodySize,
          priority: 3,
          statement: {
            sizeConstraintStatement: {
              fieldToMatch: { body: { oversizeHandling: "MATCH" } },
              comparisonOperator: "GT",
              size: maxBodyBytes,
              textTransformations: [{ priority: 0, type: "NONE" }],
            },
          },
          action: blockWith(edgeErrors.payloadTooLarge, BODY_KEYS.payloadTooLarge),
          visibilityConfig: visibility(EDGE_RULES.bodySize),
        },
        managedRuleGroup(EDGE_RULES.knownBadInputs, 4),
        // The core rule set blocks bodies over 8 KB, below the API's own limit: that rule only counts,
        // and the size rule above is the one that answers.
        managedRuleGroup(EDGE_RULES.coreRuleSet, 5, [{ name: "SizeRestrictions_BODY", actionToUse: { count: {} } }]),
      ],
    });
    new wafv2.CfnWebACLAssociation(this, "StageAssociation", {
      resourceArn: api.deploymentStage.stageArn,
      webAclArn: this.webAcl.attrArn,
    });

    const period = EDGE_METRIC_PERIOD;
    const metric = (metricName: "AllowedRequests" | "BlockedRequests", rule: string, label?: string) =>
      wafMetric(this, stage, metricName, rule, label);

    // Rule metrics carry the rule's visibility metric name as the `Rule` dimension; `ALL` is the
    // whole web ACL. https://docs.aws.amazon.com/waf/latest/developerguide/waf-metrics.html
    // The paging expression reads only the non-rate-limit rules' blocks and the allowed requests:
    // a key flooding at any multiple of its limit adds nothing to it, so it can neither trip the
    // alarm nor dilute the share and hide an attack. FILL(…, 0): a rule that blocked nothing
    // publishes no data point. IF: below the minimum volume a few blocked scanners are no share.
    // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html
    const paging = config.pageOnBlockedShare;
    const pagingRules = Object.entries(EDGE_RULES).filter(([, rule]) => !RATE_LIMIT_RULES.includes(rule));
    const blocked = pagingRules.map(([id]) => `FILL(${id}, 0)`).join(" + ");
    const volume = `FILL(allowed, 0) + ${blocked}`;
    const blockedShare = new cloudwatch.MathExpression({
      expression: `IF(${volume} >= ${paging.minimumRequests}, (${blocked}) / (${volume}), 0)`,
      usingMetrics: {
        allowed: metric("AllowedRequests", "ALL"),
        ...Object.fromEntries(pagingRules.map(([id, rule]) => [id, metric("BlockedRequests", rule)])),
      },
      label: "share blocked by the non-rate-limit rules",
      period,
    });
    const rateLimits = {
      [EDGE_RULES.ratePerApiKey]: config.requestsPerApiKey,
      [EDGE_RULES.ratePerIp]: config.requestsPerIp,
    };
    this.blockedRequestsAlarm = new cloudwatch.Alarm(this, EDGE_PAGING_ALARM_ID, {
      alarmDescription: `The edge firewall's rules other than the rate limits (${pagingRules.map(([, rule]) => rule).join(", ")}) blocked ${paging.share * 100}% or more of the stage's requests, ${paging.periods} periods of 5 minutes in a row with at least ${paging.minimumRequests} requests: an attack, or a managed rule refusing real clients. The dashboard's "Edge firewall" graph shows which rule; AWS WAF's sampled requests (console) show the requests (docs/alarms.md).`,
      metric: blockedShare,
      threshold: paging.share,
      evaluationPeriods: paging.periods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      // No data means no traffic, and no traffic is the synthetic check's to catch.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    monitoring.notify(this.blockedRequestsAlarm);

    monitoring.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Edge firewall (AWS WAF)",
        left: [metric("AllowedRequests", "ALL", "allowed"), metric("BlockedRequests", "ALL", "blocked")],
        right: Object.values(EDGE_RULES).map((rule) => metric("BlockedRequests", rule, `blocked: ${rule}`)),
        width: 24,
      }),
      new cloudwatch.GraphWidget({
        title: `Edge: share blocked by the non-rate-limit rules (pages at ${paging.share * 100}%)`,
        left: [blockedShare],
        leftAnnotations: [{ value: paging.share, label: EDGE_PAGING_ALARM_ID }],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        // A client over its budget gets 429s with Retry-After; it is that client's to slow down.
        title: "Edge: clients over their rate limit (not a page)",
        left: Object.entries(rateLimits).map(([rule, limit]) =>
          metric("BlockedRequests", rule, `${rule}: over ${limit} per ${config.rateLimitWindowSeconds} s`),
        ),
        width: 12,
      }),
    );
  }
}
