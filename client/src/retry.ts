/**
 * When and how long to wait between attempts. Pure functions, plus an abortable sleep, so that the
 * client's loop stays readable and each rule can be tested alone.
 */

export interface RetryOptions {
  /** Requests per call, the first included (1 turns retries off). Default 3. */
  readonly maxAttempts?: number | undefined;
  /** The first backoff's upper bound, doubled at each retry. Default 200 ms. */
  readonly baseDelayMs?: number | undefined;
  /** No wait is longer: backoff is capped at it, and a longer `Retry-After` ends the retries. Default 10 s. */
  readonly maxDelayMs?: number | undefined;
}

export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 10_000 };

export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  const policy = {
    maxAttempts: options.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
    baseDelayMs: options.baseDelayMs ?? DEFAULT_RETRY.baseDelayMs,
    maxDelayMs: options.maxDelayMs ?? DEFAULT_RETRY.maxDelayMs,
  };
  if (!Number.isInteger(policy.maxAttempts) || policy.maxAttempts < 1)
    throw new RangeError("retry.maxAttempts must be an integer of at least 1");
  for (const name of ["baseDelayMs", "maxDelayMs"] as const) {
    if (!Number.isFinite(policy[name]) || policy[name] < 0) throw new RangeError(`retry.${name} must be 0 or more`);
  }
  return policy;
}

/**
 * The wait before retry number `retry` (1 for the first): "full jitter", uniformly random between 0
 * and min(maxDelayMs, baseDelayMs × 2^(retry−1)), so that clients that failed together do not
 * retry together (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
 */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(random() * ceiling);
}

/**
 * `Retry-After` in milliseconds: delay-seconds or an HTTP-date (RFC 9110, section 10.2.3). The API
 * sends seconds; a date can come from something in front of it. Undefined when absent or unreadable;
 * a date in the past is 0.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP-date starts with the day's name; Date.parse alone would also take "-1" or "1.5".
  const date = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /i.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The longest a call can take under `policy` without a `signal`: every attempt runs to its time
 * limit, and every wait between them is as long as allowed (a wait is the longer of the backoff and
 * `Retry-After`, neither above `maxDelayMs`, since a longer `Retry-After` ends the retries).
 */
export function worstCaseCallMs(policy: RetryPolicy, attemptTimeoutMs: number): number {
  return policy.maxAttempts * attemptTimeoutMs + (policy.maxAttempts - 1) * policy.maxDelayMs;
}
