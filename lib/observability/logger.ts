/**
 * A structured logger: one JSON object per line on stdout, which CloudWatch Logs Insights
 * indexes field by field. Written here rather than taken from Powertools Logger because the
 * latter adds ~23 KB to each bundle and ~10 ms to module init (README, Operations) for features
 * this API does not use.
 */
import { writeSync } from "node:fs";

export const logLevels = ["DEBUG", "INFO", "WARN", "ERROR", "SILENT"] as const;
export type LogLevel = (typeof logLevels)[number];
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * Writes one or more complete lines, joined by "\n", at once. Lambda makes each line of stdout a
 * log event of its own (as https://github.com/FormidableLabs/pino-lambda/issues/13 shows), so the
 * request line and the metrics line of a request go out in one write, and stay two events.
 */
export type LineWriter = (lines: string) => void;
export const writeStdout: LineWriter = (lines) => {
  const stdout = process.stdout;
  const text = `${lines}\n`;
  // Through the stream when it is wrapped (a test capturing output, a tool: theirs to see) or
  // holds writes not yet made (ours must not overtake them).
  if (stdout.write !== Object.getPrototypeOf(stdout).write || stdout.writableLength > 0) {
    stdout.write(text);
    return;
  }
  // Otherwise straight to the file descriptor: stdout is synchronous wherever the functions run (a
  // pipe or a file, on Linux: https://nodejs.org/api/process.html#a-note-on-process-io), so the
  // stream would only add its bookkeeping to every request. What the descriptor did not take at
  // once (it would block), or a failure, goes to the stream, which queues or reports it as before.
  let written = 0;
  try {
    written = writeSync(STDOUT_FD, text);
  } catch {
    stdout.write(text);
    return;
  }
  const bytes = Buffer.byteLength(text);
  if (written < bytes) stdout.write(Buffer.from(text).subarray(written));
};
const STDOUT_FD = 1;

export function enabled(threshold: LogLevel) {
  const rank = logLevels.indexOf(threshold);
  return (level: LogLevel) => logLevels.indexOf(level) >= rank;
}

/** The second the cached prefix belongs to, and that prefix: `YYYY-MM-DDTHH:MM:SS.` */
let cachedSecondMs = Number.NaN;
let cachedPrefix = "";
/** The UTC day the cached day prefix belongs to (its first millisecond), and that prefix: `YYYY-MM-DDT`. */
let cachedDayMs = Number.NaN;
let cachedDayPrefix = "";

const MS_PER_DAY = 86_400_000;
const twoDigits = (value: number) => (value < 10 ? `0${value}` : `${value}`);
/** The milliseconds and the zone after a cached second's prefix: `042Z`. */
const millisecondsText = (ms: number) => `${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;

/**
 * `new Date(nowMs).toISOString()`, without building a Date and formatting it on every line: every
 * request writes a timestamped line, and within one second only the milliseconds change. A quiet
 * container (under a request a second) moves to a new second on every request: that second's
 * prefix is then put together from the cached day, which changes once a day.
 */
export function isoTimestamp(nowMs: number = Date.now()): string {
  const millis = nowMs - cachedSecondMs;
  if (millis >= 0 && millis < 1000 && Number.isInteger(millis)) {
    return cachedPrefix + millisecondsText(millis);
  }
  const intoDay = nowMs - cachedDayMs;
  if (intoDay >= 0 && intoDay < MS_PER_DAY && Number.isInteger(intoDay)) {
    const secondOfDay = Math.floor(intoDay / 1000);
    const hours = Math.floor(secondOfDay / 3600);
    const minutes = Math.floor((secondOfDay % 3600) / 60);
    cachedPrefix = `${cachedDayPrefix}${twoDigits(hours)}:${twoDigits(minutes)}:${twoDigits(secondOfDay % 60)}.`;
    cachedSecondMs = cachedDayMs + secondOfDay * 1000;
    return cachedPrefix + millisecondsText(intoDay - secondOfDay * 1000);
  }
  const iso = new Date(nowMs).toISOString();
  // Only the common form (four-digit year, whole milliseconds) is cached; the rest is formatted each time.
  if (iso.length === 24 && Number.isInteger(nowMs)) {
    cachedPrefix = iso.slice(0, 20);
    cachedSecondMs = nowMs - Number(iso.slice(20, 23));
    cachedDayPrefix = iso.slice(0, 11);
    cachedDayMs = Math.floor(nowMs / MS_PER_DAY) * MS_PER_DAY;
  }
  return iso;
}

/** Errors serialise to name, message, stack and cause; JSON.stringify would give `{}`. */
export function describeError(error: unknown): LogFields {
  if (!(error instanceof Error)) return { value: String(error) };
  return {
    name: error.name,
    message: error.message,
    stack: error.stack,
    ...(error.cause !== undefined ? { cause: describeError(error.cause) } : {}),
  };
}

function loggerFrom(log: (level: LogLevel, message: string, fields?: LogFields) => void): Logger {
  return {
    debug: (message, fields) => log("DEBUG", message, fields),
    info: (message, fields) => log("INFO", message, fields),
    warn: (message, fields) => log("WARN", message, fields),
    error: (message, fields) => log("ERROR", message, fields),
  };
}

export function createJsonLogger(options: { level: LogLevel; base?: LogFields; write?: LineWriter }): Logger {
  const isEnabled = enabled(options.level);
  const write = options.write ?? writeStdout;
  const log = (level: LogLevel, message: string, fields?: LogFields) => {
    if (!isEnabled(level)) return;
    write(JSON.stringify({ timestamp: isoTimestamp(), level, message, ...options.base, ...fields }));
  };
  return loggerFrom(log);
}

/** For a terminal: `LEVEL message key=value …`, errors with their stack. */
export function createPrettyLogger(options: { level: LogLevel; write?: LineWriter }): Logger {
  const isEnabled = enabled(options.level);
  const write = options.write ?? writeStdout;
  const log = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (!isEnabled(level)) return;
    const { error, ...rest } = fields;
    const pairs = Object.entries(rest).map(
      ([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
    );
    write([`${level} ${message}`, ...pairs].join(" ") + stackText(error));
  };
  return loggerFrom(log);
}

/** The stack of a described error and of each cause below it: the cause is usually the real story. */
function stackText(error: unknown, prefix = "\n"): string {
  const described = error as { stack?: unknown; message?: unknown; cause?: unknown } | undefined;
  if (!described || typeof described !== "object") return "";
  const own = typeof described.stack === "string" ? described.stack : String(described.message ?? "");
  return (own ? `${prefix}${own}` : "") + stackText(described.cause, "\nCaused by: ");
}
