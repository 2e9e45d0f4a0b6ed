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
  return {
    log,
    requestCompleted(summary) {
      const level = summary.status >= 500 ? "ERROR" : "INFO";
      if (isEnabled(level)) write(requestLine(level, summary));
      write(embeddedMetricRecord(options.stage, summary, Date.now()));
    },
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
  const prefixes = new Map<string, string>();
  return (level: "INFO" | "ERROR", summary: RequestSummary): string => {
    const routeKey = `${level} ${summary.operation} ${summary.method} ${summary.route}`;
    let prefix = prefixes.get(routeKey);
    if (prefix === undefined) {
      prefix =
        `","level":${json(level)},"message":"request","service":${json(service)},"stage":${json(stage)}` +
        `,"operation":${json(summary.operation)},"method":${json(summary.method)},"route":${json(summary.route)}`;
      prefixes.set(routeKey, prefix);
    }
    return (
      `{"timestamp":"${isoTimestamp()}${prefix},"path":${json(summary.path)},"status":${summary.status}` +
      `,"latencyMs":${roundedMsText(summary.latencyMs)},"coldStart":${summary.coldStart}` +
      optional("requestId", summary.requestId) +
      optional("lambdaRequestId", summary.lambdaRequestId) +
      optional("apiKeyId", summary.apiKeyId) +
      `${optional("userAgent", summary.userAgent)}}`
    );
  };
}

const optional = (key: string, value: string | undefined) => (value === undefined ? "" : `,"${key}":${json(value)}`);

/** For tests and tools that inject their own dependencies: errors only, as JSON on stderr. */
export const errorsOnlyTelemetry: Telemetry = {
  log: createJsonLogger({ level: "ERROR", write: (line) => console.error(line) }),
  requestCompleted: () => undefined,
};
