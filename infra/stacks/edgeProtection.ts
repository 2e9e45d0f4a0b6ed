/**
 * The edge firewall: an AWS WAF web ACL in front of the API's stage. Stage throttling is one budget
 * shared by every caller (per method), so without it one client, even one without a key, can push
 * everyone into 429s, and every request, authenticated or not, costs a Lambda invocation. Here:
 * - a rate limit per API key (the Authorization header) and one per client address, answered 429;
 * - a body-size rule: a body over the API's limit is answered 413 before any function runs;
 * - AWS managed rule groups: IP reputation, known bad inputs, and the core rule set.
 * Every answer is the API's Error body, taken from ./gatewayErrors.ts. Its metrics go on the stage's
 * dashboard, and an alarm fires on a burst of blocked requests.
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
  /** Requests the firewall may block in 5 minutes before the `EdgeBlockedRequests` alarm fires. */
  readonly blockedRequestsAlarmThreshold: number;
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
    const webAclName = `petstore-${stage}`;
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
      name: webAclName,
      description: `Edge firewall of the Pet Store ${stage} API`,
      scope: "REGIONAL",
      defaultAction: { allow: {} },
      visibilityConfig: visibility(webAclName),
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

    const period = Duration.minutes(5);
    const wafMetric = (metricName: string, rule: string, label?: string) =>
      new cloudwatch.Metric({
        namespace: "AWS/WAFV2",
        metricName,
        dimensionsMap: { WebACL: webAclName, Region: Stack.of(this).region, Rule: rule },
        statistic: "Sum",
        period,
        ...(label === undefined ? {} : { label }),
      });

    this.blockedRequestsAlarm = new cloudwatch.Alarm(this, "EdgeBlockedRequests", {
      alarmDescription: `The edge firewall blocked more than ${config.blockedRequestsAlarmThreshold} requests in 5 minutes. The dashboard's "Edge firewall" graph shows which rule: rate limits mean one client (or key) is flooding; managed rules mean an attack, or a client whose requests look like one. AWS WAF's sampled requests (console) show the requests.`,
      metric: wafMetric("BlockedRequests", "ALL"),
      threshold: config.blockedRequestsAlarmThreshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      // No data means nothing was blocked.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    monitoring.notify(this.blockedRequestsAlarm);

    monitoring.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Edge firewall (AWS WAF)",
        left: [wafMetric("AllowedRequests", "ALL", "allowed"), wafMetric("BlockedRequests", "ALL", "blocked")],
        right: Object.values(EDGE_RULES).map((rule) => wafMetric("BlockedRequests", rule, `blocked: ${rule}`)),
        width: 24,
      }),
    );
  }
}
