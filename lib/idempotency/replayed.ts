/**
 * The header that marks a replayed create, on its own (no imports) because the request telemetry
 * reads it and the logging and metrics code stays small (its bundle is measured by `npm run bench`).
 */

/** Marks a 201 that repeats the stored answer of an earlier request: nothing was created by this one. */
export const IDEMPOTENT_REPLAYED_HEADER = "Idempotent-Replayed";

/** True when an answer's headers (as the handler returns them) say it is a replay. */
export function isReplayedAnswer(headers: Record<string, unknown> | null | undefined): boolean {
  return headers?.[IDEMPOTENT_REPLAYED_HEADER] === "true";
}
