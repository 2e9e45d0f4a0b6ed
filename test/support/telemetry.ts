/** Request telemetry as the functions write it, captured instead of written to stdout. */
import type { LogLevel } from "../../lib/observability/logger";
import { createTelemetry } from "../../lib/observability/telemetry";

/**
 * `writes`: each call of the writer; `lines`: the log events Lambda makes of them (one per line of
 * a JSON write; a pretty write is one message, stack and all).
 */
export function capturedTelemetry(
  format: "json" | "pretty" = "json",
  options: { level?: LogLevel; fallbackTraceHeader?: () => string | undefined } = {},
) {
  const writes: string[] = [];
  const lines: string[] = [];
  const telemetry = createTelemetry({
    service: "petstore",
    stage: "test",
    level: options.level ?? "INFO",
    format,
    write: (text) => {
      writes.push(text);
      lines.push(...(format === "json" ? text.split("\n") : [text]));
    },
    ...(options.fallbackTraceHeader ? { fallbackTraceHeader: options.fallbackTraceHeader } : {}),
  });
  return { writes, lines, telemetry };
}
