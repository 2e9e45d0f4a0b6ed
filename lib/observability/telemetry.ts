import {
  createJsonLogger,
  createPrettyLogger,
  enabled,
  isoTimestamp,
  type LineWriter,
  type Logger,
  type LogLevel,
  writeStdout,
} from "./logger";
import { embeddedMetricRecord, type RequestMeasurement, roundedMsText } from "./metrics";

/** What one request looked like, for the request log line and the metrics. */
export interface RequestSummary extends RequestMeasurement {
  readonly method: string;
  readonly route: string;
  readonly path: string;
  readonly requestId: string | undefined;
  readonly lambdaRequestId: string | undefined;
  /** The public id of the API key used; never the key. */
  readonly apiKeyId: string | undefined;
  /**
   * The client's User-Agent, as API Gateway saw it. Logged here, JSON-escaped, rather than in the
   * gateway's access log, which cannot escape it (infra/stacks/accessLog.ts).
   */
  readonly userAgent: string | undefined;
  /** The Error shape's `code` of an error answer (`not_found`, `unauthorized`, …); none for a success. */
  readonly errorCode?: string | undefined;
  /** The X-Ray trace header the request came with (API Gateway's X-Amzn-Trace-Id), if any. */
  readonly traceHeader?: string | undefined;
}

export interface Telemetry {
  readonly log: Logger;
  requestCompleted(summary: RequestSummary): void;
}

export type LogFormat = "json" | "pretty";

/**
 * JSON (deployed, or not on a terminal): a request log line and an EMF metrics line per request.
 * Pretty (a developer's terminal): the local server prints the request line itself; handlers only
 * print what went wrong, and no metrics.
 */
export function createTelemetry(options: {
  readonly service: string;
  readonly stage: string;
  readonly level: LogLevel;
  readonly format: LogFormat;
  readonly write?: LineWriter;
  /**
   * Where the X-Ray trace header is read from when a request brings none: Lambda's environment
   * unless a test says otherwise.
   */
  readonly fallbackTraceHeader?: () => string | undefined;
}): Telemetry {
  const write = options.write ?? writeStdout;
  if (options.format === "pretty") {
    return { log: createPrettyLogger({ level: options.level, write }), requestCompleted: () => undefined };
  }
  const log = createJsonLogger({
    level: options.level,
    base: { service: options.service, stage: options.stage },
    write,
  });
  const isEnabled = enabled(options.level);
  const requestLine = requestLineWriter(options.service, options.stage);
  const traceId = xrayTraceIdReader(options.fallbackTraceHeader ?? lambdaTraceHeader);
  return {
    log,
    requestCompleted(summary) {
      const level = summary.status >= 500 ? "ERROR" : "INFO";
      // The metrics line whatever the level: it is how the alarms count requests. It carries no
      // level, so Lambda's own filter counts it as INFO; the stacks therefore let every line
      // through Lambda (infra/stacks/petStoreStack.ts) and the level is applied here.
      const latencyText = roundedMsText(summary.latencyMs);
      const metrics = embeddedMetricRecord(options.stage, summary, Date.now(), latencyText);
      write(
        isEnabled(level)
          ? `${requestLine(level, summary, latencyText, traceId(summary.traceHeader))}\n${metrics}`
          : metrics,
      );
    },
  };
}

/**
 * The X-Ray trace header of the invocation being served, when the request did not bring one: Lambda
 * sets `_X_AMZN_TRACE_ID` for each invocation (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 */
const lambdaTraceHeader = () => process.env._X_AMZN_TRACE_ID;

/** `Root=1-…;Parent=…;Sampled=…` → `1-…`; Lambda puts Root first, but any position is read. */
function traceRoot(header: string): string | undefined {
  const at = header.startsWith("Root=") ? 0 : header.indexOf(";Root=") + 1;
  if (at === 0 && !header.startsWith("Root=")) return undefined;
  const start = at + "Root=".length;
  const end = header.indexOf(";", start);
  const root = (end === -1 ? header.slice(start) : header.slice(start, end)).trim();
  return root === "" ? undefined : root;
}

/**
 * The trace id (`Root=…`) of a request: from the X-Amzn-Trace-Id header API Gateway passes on (it
 * adds one to every request that lacks it, and Lambda's active tracing continues that trace:
 * https://docs.aws.amazon.com/xray/latest/devguide/xray-services-apigateway.html), else from
 * `fallback` (Lambda's environment, read only then: an environment read costs every request about
 * half a microsecond). A header is parsed only when it differs from the last one.
 */
function xrayTraceIdReader(fallback: () => string | undefined): (header: string | undefined) => string | undefined {
  let lastHeader: string | undefined;
  let lastRoot: string | undefined;
  return (header) => {
    const current = header ?? fallback();
    if (current !== lastHeader) {
      lastHeader = current;
      lastRoot = current === undefined ? undefined : traceRoot(current);
    }
    return lastRoot;
  };
}

const json = JSON.stringify;

/**
 * The request log line, as the JSON logger would write `log.info("request", fields)` (same keys,
 * same order, undefined fields left out), joined from parts: the fields that are the same for every
 * request of a route are serialised once. Every value from the request goes through
 * JSON.stringify, so the line is valid JSON whatever a client sends.
 */
function requestLineWriter(service: string, stage: string) {
  // Keyed by level, then operation (a constant string of the route table): no key is built per request.
  const prefixes = { INFO: new Map<string, RoutePrefix>(), ERROR: new Map<string, RoutePrefix>() };
  return (
    level: "INFO" | "ERROR",
    summary: RequestSummary,
    latencyText: string,
    xrayTraceId: string | undefined,
  ): string => {
    let prefix = prefixes[level].get(summary.operation);
    if (prefix === undefined || prefix.method !== summary.method || prefix.route !== summary.route) {
      prefix = {
        method: summary.method,
        route: summary.route,
        text:
          `","level":${json(level)},"message":"request","service":${json(service)},"stage":${json(stage)}` +
          `,"operation":${json(summary.operation)},"method":${json(summary.method)},"route":${json(summary.route)}`,
      };
      prefixes[level].set(summary.operation, prefix);
    }
    return (
      `{"timestamp":"${isoTimestamp()}${prefix.text},"path":${json(summary.path)}${statusText(summary.status)}` +
      `${latencyText}${summary.coldStart ? ',"coldStart":true' : ',"coldStart":false'}` +
      optional(',"requestId":', summary.requestId) +
      optional(',"lambdaRequestId":', summary.lambdaRequestId) +
      optional(',"apiKeyId":', summary.apiKeyId) +
      optional(',"userAgent":', summary.userAgent) +
      optional(',"errorCode":', summary.errorCode) +
      `${optional(',"xrayTraceId":', xrayTraceId)}}`
    );
  };
}

/** `,"status":<status>,"latencyMs":` for each HTTP status written so far: a handful per function. */
const statusTexts: string[] = [];

function statusText(status: number): string {
  const cacheable = Number.isInteger(status) && status >= 0 && status < 1000;
  const known = cacheable ? statusTexts[status] : undefined;
  if (known !== undefined) return known;
  const text = `,"status":${json(status)},"latencyMs":`;
  if (cacheable) statusTexts[status] = text;
  return text;
}

interface RoutePrefix {
  readonly method: string;
  readonly route: string;
  readonly text: string;
}

/** `keyText` (`,"<key>":`) and the value as JSON, or nothing for a field without a value. */
const optional = (keyText: string, value: string | undefined) => (value === undefined ? "" : keyText + json(value));

/** For tests and tools that inject their own dependencies: errors only, as JSON on stderr. */
export const errorsOnlyTelemetry: Telemetry = {
  log: createJsonLogger({ level: "ERROR", write: (line) => console.error(line) }),
  requestCompleted: () => undefined,
};
