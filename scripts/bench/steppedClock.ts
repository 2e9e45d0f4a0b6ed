/**
 * A quiet container's clock for the warm bench (./warmChild.ts). Each side of the comparison stands
 * for a container of its own serving about one request a second: before each of its invocations
 * (outside the timed span) its clock moves on by just over a second, and Date.now() reads the clock
 * of the side being invoked. So every request starts in a new second (a per-second cache, the log
 * timestamp's in lib/observability/logger.ts, misses as it does there), and the key cache
 * (lib/auth/verifier.ts, KEY_CACHE_TTL_MS) expires every 30 or so of the side's requests. One clock
 * per side: a shared one would move four seconds per request of each of four sides. It only jumps
 * between invocations: a span within one request (the request's deadline) sees real time.
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
