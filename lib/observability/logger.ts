/**
 * A structured logger: one JSON object per line on stdout, which CloudWatch Logs Insights
 * indexes field by field. Written here rather than taken from Powertools Logger because the
 * latter adds ~23 KB to each bundle and ~10 ms to module init (README, Operations) for features
 * this API does not use.
 */
export const logLevels = ["DEBUG", "INFO", "WARN", "ERROR", "SILENT"] as const;
export type LogLevel = (typeof logLevels)[number];
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LineWriter = (line: string) => void;
export const writeStdout: LineWriter = (line) => {
  process.stdout.write(`${line}\n`);
};

export function enabled(threshold: LogLevel) {
  const rank = logLevels.indexOf(threshold);
  return (level: LogLevel) => logLevels.indexOf(level) >= rank;
}

/** The second the cached prefix belongs to, and that prefix: `YYYY-MM-DDTHH:MM:SS.` */
let cachedSecondMs = Number.NaN;
let cachedPrefix = "";

/**
 * `new Date(nowMs).toISOString()`, without building a Date and formatting it on every line: every
 * request writes two timestamped lines, and within one second only the milliseconds change.
 */
export function isoTimestamp(nowMs: number = Date.now()): string {
  const millis = nowMs - cachedSecondMs;
  if (millis >= 0 && millis < 1000 && Number.isInteger(millis)) {
    return `${cachedPrefix}${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
  }
  const iso = new Date(nowMs).toISOString();
  // Only the common form (four-digit year, whole milliseconds) is cached; the rest is formatted each time.
  if (iso.length === 24 && Number.isInteger(nowMs)) {
    cachedPrefix = iso.slice(0, 20);
    cachedSecondMs = nowMs - Number(iso.slice(20, 23));
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
