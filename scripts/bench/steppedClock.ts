/**
 * A quiet container's clock for the middleware bench: Date.now() moved on by just over a second
 * before each invocation (outside the timed span), so that every request starts in a new second,
 * as in a container serving under one request a second. What keeps a per-second cache (the log
 * timestamp's, lib/observability/logger.ts isoTimestamp) then misses on every request, as it does
 * there. The clock only jumps between invocations, so anything that measures a span with Date.now
 * within one request (the request's deadline, lib/db/deadline.ts) sees real time.
 *
 * Installed before the code under test is imported, so that nothing keeps the unshifted Date.now.
 */

/** The real clock, for what must not see the jumps (the bench's own bookkeeping). */
export const realNow: () => number = Date.now;

/** Just over a second: each step lands in a new second whatever the milliseconds were. */
export const CLOCK_STEP_MS = 1001;

let offsetMs = 0;

export function installSteppedClock(): void {
  Date.now = () => realNow() + offsetMs;
}

/** One quiet second (and a millisecond) passes. */
export function stepClock(): void {
  offsetMs += CLOCK_STEP_MS;
}
