/**
 * The stage's access log: one JSON object per request, written by API Gateway itself (so it also
 * covers requests no function saw: unknown routes, throttling, firewall blocks, gateway errors).
 *
 * API Gateway substitutes `$context` variables into the format as they are, without escaping them
 * for JSON (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html; a
 * quote or backslash in a field breaks the line: https://github.com/DataBiosphere/azul/issues/4348),
 * and writes `-` for a variable that has no value in a request. So every variable is written inside
 * quotes (a `-` stays a valid string, and a number a string of digits), and a variable goes in only
 * if API Gateway builds its value from a fixed set of characters (ids, numbers, times, addresses,
 * names of its own). Values a client or a function controls are left out, valid JSON winning over
 * completeness: the user agent, the raw path, and the integration's error message. The functions log
 * the first two in their own request line, escaped by their JSON logger
 * (lib/observability/telemetry.ts), and log their errors with the request id; `resourcePath` (the
 * matched route) stands in for the path here.
 *
 * `$context.error.messageString` is left out too: API Gateway writes it already quoted, so it could
 * only go in unquoted, and what it writes for a request without an error is not documented (a bare
 * `-` would break the line of every successful request). `errorType` (the gateway response type,
 * e.g. THROTTLED) names the gateway's error, whose message is fixed per type (./gatewayErrors.ts).
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-variables-for-access-logging.html
 */
import { AccessLogField } from "aws-cdk-lib/aws-apigateway";

/** The access log's fields: values API Gateway builds from a fixed set of characters, each written in quotes. */
export const accessLogFields = {
  requestId: AccessLogField.contextRequestId(),
  extendedRequestId: AccessLogField.contextExtendedRequestId(),
  xrayTraceId: AccessLogField.contextXrayTraceId(),
  ip: AccessLogField.contextIdentitySourceIp(),
  requestTime: AccessLogField.contextRequestTime(),
  method: AccessLogField.contextHttpMethod(),
  resourcePath: AccessLogField.contextResourcePath(),
  status: AccessLogField.contextStatus(),
  responseLength: AccessLogField.contextResponseLength(),
  responseLatency: AccessLogField.contextResponseLatency(),
  integrationStatus: AccessLogField.contextIntegrationStatus(),
  integrationLatency: AccessLogField.contextIntegrationLatency(),
  errorType: AccessLogField.contextErrorResponseType(),
  wafResponse: AccessLogField.contextWafResponseCode(),
} as const;

/** Variables never in the access log: a client or a function controls their values, or (the last) API Gateway quotes it itself (see above). */
export const excludedAccessLogVariables = [
  AccessLogField.contextIdentityUserAgent(),
  AccessLogField.contextPath(),
  AccessLogField.contextIntegrationErrorMessage(),
  "$context.integration.error",
  AccessLogField.contextErrorMessage(),
  AccessLogField.contextErrorMessageString(),
] as const;

/** The access log format: a JSON object whose every value is one quoted variable. */
export function accessLogFormat(): string {
  return JSON.stringify(Object.fromEntries(Object.entries(accessLogFields)));
}
