/**
 * The stage's access log: one JSON object per request, written by API Gateway itself (so it also
 * covers requests no function saw: unknown routes, throttling, firewall blocks, gateway errors).
 *
 * API Gateway substitutes `$context` variables into the format as they are, without escaping them
 * for JSON (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html; a
 * quote or backslash in a field breaks the line: https://github.com/DataBiosphere/azul/issues/4348).
 * So a variable goes in only if API Gateway builds its value from a fixed set of characters (ids,
 * numbers, times, addresses, names of its own), or already quotes and escapes it
 * (`$context.error.messageString`, which is written unquoted below). Values a client or a function
 * controls are left out, valid JSON winning over completeness: the user agent, the raw path, and the
 * integration's error message. The functions log the first two in their own request line, escaped
 * by their JSON logger (lib/observability/telemetry.ts), and log their errors with the request id;
 * `resourcePath` (the matched route) stands in for the path here.
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-variables-for-access-logging.html
 */
import { AccessLogField } from "aws-cdk-lib/aws-apigateway";

/** Fields whose values API Gateway builds from a fixed set of characters; each is written in quotes. */
export const plainAccessLogFields = {
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

/** Fields API Gateway writes as a quoted, escaped JSON string itself; each is written without quotes. */
export const quotedAccessLogFields = {
  errorMessage: AccessLogField.contextErrorMessageString(),
} as const;

/** Variables whose values a client or a function controls: never in the access log (see above). */
export const uncontrolledAccessLogVariables = [
  AccessLogField.contextIdentityUserAgent(),
  AccessLogField.contextPath(),
  AccessLogField.contextIntegrationErrorMessage(),
  "$context.integration.error",
  AccessLogField.contextErrorMessage(),
] as const;

/** The access log format: a JSON object once API Gateway has substituted the variables. */
export function accessLogFormat(): string {
  const members = [
    ...Object.entries(plainAccessLogFields).map(([name, variable]) => `${JSON.stringify(name)}:"${variable}"`),
    ...Object.entries(quotedAccessLogFields).map(([name, variable]) => `${JSON.stringify(name)}:${variable}`),
  ];
  return `{${members.join(",")}}`;
}
