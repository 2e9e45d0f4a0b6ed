/**
 * The lines `npm start` itself prints after its banner: one per request (as API Gateway's access
 * log would), and the last ones on Ctrl-C. Pretty for a person at a terminal, JSON (the deployed
 * stages' format) for a file, a pipe or a log collector; PETSTORE_LOG_FORMAT chooses.
 */
import type { LogFormat } from "../lib/observability/telemetry";
import type { RequestLogEntry } from "./server";

export interface StartLog {
  request(entry: RequestLogEntry): void;
  handlerFailed(error: unknown): void;
  stopping(signal: string): void;
  stopped(): void;
}

/**
 * `GET /v1/pets?limit=2 200 3.1ms <request id>`; an error adds its code (`401 unauthorized`), a
 * replayed create says so (`201 replayed`).
 */
export function requestLine(entry: RequestLogEntry, format: LogFormat, now = new Date()): string {
  if (format === "json") {
    return JSON.stringify({ timestamp: now.toISOString(), level: "INFO", message: "gateway", ...entry });
  }
  const outcome = [String(entry.status), entry.errorCode, entry.replayed ? "replayed" : undefined]
    .filter((part) => part !== undefined)
    .join(" ");
  return `${entry.method} ${entry.path} ${outcome} ${entry.durationMs.toFixed(1)}ms ${entry.requestId}`;
}

export function createStartLog(
  format: LogFormat,
  write: (line: string) => void = console.log,
  writeError: (line: string) => void = console.error,
): StartLog {
  const event = (message: string, fields: Record<string, unknown> = {}, level = "INFO") =>
    JSON.stringify({ timestamp: new Date().toISOString(), level, message, ...fields });
  return {
    request: (entry) => write(requestLine(entry, format)),
    // The stack is for the developer at this machine; the client only got a generic 500.
    handlerFailed: (error) =>
      writeError(
        format === "json"
          ? event("handler failed", { error: String(error) }, "ERROR")
          : `ERROR handler failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      ),
    stopping: (signal) =>
      write(
        format === "json"
          ? event("stopping", { signal })
          : // After the ^C the terminal echoes, on a line of its own.
            `\n${signal}: finishing requests in flight, then closing the database...`,
      ),
    stopped: () => write(format === "json" ? event("stopped") : "Stopped."),
  };
}
