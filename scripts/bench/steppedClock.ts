/**
 * A quiet container's clock for the warm bench: before each invocation of a side (outside the timed span) its clock
 * moves on just over a second, so per-second caches miss as in a container serving one request a second, and the key
 * cache (lib/auth/verifier.ts) expires every 30 or so requests. One clock per side; within a request, real time.
 */

const realNow: () => number = Date.now;

/** Just over a second: each step lands in a new second whatever the milliseconds were. */
export const CLOCK_STEP_MS = 1001;

export interface QuietClock {
  offsetMs: number;
}

let current: QuietClock = { offsetMs: 0 };

/** Date.now() from then on reads the clock of the container entered last (the real time until one is). */
export function installSteppedClock(): void {
  Date.now = () => realNow() + current.offsetMs;
}

/** `clock`'s container is invoked next: a quiet second (and a millisecond) passes on its clock. */
export function enterContainer(clock: QuietClock): void {
  clock.offsetMs += CLOCK_STEP_MS;
  current = clock;
}
