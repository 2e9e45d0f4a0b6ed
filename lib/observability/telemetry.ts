import {
  createJsonLogger,
  createPrettyLogger,
  type LineWriter,
  type Logger,
  type LogLevel,
  writeStdout,
} from "./logger";
import { embeddedMetricRecord, type RequestMeasurement } from "./metrics";

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
  return {
    log,
    requestCompleted(summary) {
      const level = summary.status >= 500 ? "error" : "info";
      log[level]("request", {
        operation: summary.operation,
        method: summary.method,
        route: summary.route,
        path: summary.path,
        status: summary.status,
        latencyMs: Math.round(summary.latencyMs * 1000) / 1000,
        coldStart: summary.coldStart,
        requestId: summary.requestId,
        lambdaRequestId: summary.lambdaRequestId,
        apiKeyId: summary.apiKeyId,
        userAgent: summary.userAgent,
      });
      write(embeddedMetricRecord(options.stage, summary, Date.now()));
    },
  };
}

/** For tests and tools that inject their own dependencies: errors only, as JSON on stderr. */
export const errorsOnlyTelemetry: Telemetry = {
  log: createJsonLogger({ level: "ERROR", write: (line) => console.error(line) }),
  requestCompleted: () => undefined,
};
