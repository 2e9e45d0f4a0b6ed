/**
 * The moment a request's DynamoDB calls must give up, so that the request can still answer a
 * retryable 503 before Lambda stops the function (lib/http/middleware/requestDeadline.ts sets it).
 * Each call gets `signal` as the SDK's `abortSignal`: the SDK then stops waiting for an answer, a
 * connection or its back-off before the next attempt, and the call fails with an AbortError.
 */
export class Deadline {
  #controller: AbortController | undefined;
  /** Set by `within`: how the race answers when the deadline passes first. */
  #rejectRace: ((error: Error) => void) | undefined;
  #expiredError: (() => Error) | undefined;

  /** `atMs`: epoch milliseconds, as Date.now(). */
  constructor(readonly atMs: number) {}

  /**
   * Armed on first use, so that a request that never reaches DynamoDB (a key found in the
   * verifier's cache, an invalid body) arms nothing. Aborted as AbortSignal.timeout would abort it,
   * with a TimeoutError, but by the process's one deadline timer: AbortSignal.timeout starts a timer
   * of its own per signal, which costs every request about 1.5 µs (npm run bench).
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      deadlineTimer.watch(this);
    }
    return this.#controller.signal;
  }

  /**
   * The request is over: its calls are done, nothing is left to abort. A deadline armed and never
   * released (a request refused after its key lookup) is dropped when it passes.
   */
  release(): void {
    if (this.#controller !== undefined) deadlineTimer.forget(this);
  }

  /**
   * `work`'s outcome, or `expired()`'s error if the deadline passes first: the answer for anything
   * that does not heed the signal. It replaces Middy's early timeout, which starts a timer per request.
   */
  within<T>(work: Promise<T>, expired: () => Error): Promise<T> {
    // Armed as a signal is: the same timer, and nothing new if a store call armed it already.
    this.signal;
    return new Promise<T>((resolve, reject) => {
      this.#rejectRace = reject;
      this.#expiredError = expired;
      // The work is the request's last use of the deadline: once it settles, there is nothing to abort.
      work.then(
        (value) => {
          this.release();
          resolve(value);
        },
        (error: unknown) => {
          this.release();
          reject(error);
        },
      );
    });
  }

  /** @internal Called by the deadline timer once `atMs` has passed. */
  expire(): void {
    this.#controller?.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    const reject = this.#rejectRace;
    const expired = this.#expiredError;
    // A turn after the abort: a store call the abort ended answers first, with its cause (logged
    // with the 503); only work that ignores the signal gets `expired()`.
    if (reject !== undefined && expired !== undefined) setImmediate(() => reject(expired()));
  }
}

/**
 * One timer for every armed deadline of the process, set for the earliest of them. A Lambda
 * container serves one request at a time and releases its deadline when it answers, so the timer
 * usually finds nothing due when it fires, re-arms for the deadline in flight, and is created
 * about once per function timeout rather than once per request.
 */
/** The longest delay setTimeout takes (https://nodejs.org/api/timers.html#settimeoutcallback-delay-args). */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

class DeadlineTimer {
  /**
   * Armed deadlines in the order they were armed. An array rather than a Set: a container holds
   * one at a time, armed and then released last-in first-out, which a push and a pop do for less
   * than a Set's add and delete (npm run bench). Each deadline is in it at most once (`watch` is
   * called when its signal is first made).
   */
  readonly #armed: Deadline[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #firesAtMs = Number.POSITIVE_INFINITY;

  watch(deadline: Deadline): void {
    this.#armed.push(deadline);
    if (deadline.atMs < this.#firesAtMs) this.#schedule(deadline.atMs);
  }

  forget(deadline: Deadline): void {
    const armed = this.#armed;
    const last = armed.length - 1;
    if (armed[last] === deadline) {
      armed.pop();
      return;
    }
    // Requests overlapping in one process (the local server, tests) may finish in any order.
    const index = armed.lastIndexOf(deadline);
    if (index !== -1) armed.splice(index, 1);
  }

  /** How many deadlines are armed and not yet released: for tests. */
  get armedCount(): number {
    return this.#armed.length;
  }

  #schedule(atMs: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#firesAtMs = atMs;
    // Node fires a longer delay than setTimeout's maximum at once; the timer then re-arms for the rest.
    this.#timer = setTimeout(() => this.#fire(), Math.min(Math.max(0, atMs - Date.now()), MAX_TIMER_DELAY_MS));
    // As AbortSignal.timeout's timer: it never keeps a process alive on its own.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#firesAtMs = Number.POSITIVE_INFINITY;
    const now = Date.now();
    const due: Deadline[] = [];
    const armed = this.#armed;
    // Due deadlines leave the list before any expires: an abort runs its listeners at once.
    let kept = 0;
    for (const deadline of armed) {
      if (deadline.atMs <= now) due.push(deadline);
      else armed[kept++] = deadline;
    }
    armed.length = kept;
    for (const deadline of due) deadline.expire();
    let next = Number.POSITIVE_INFINITY;
    for (const deadline of armed) if (deadline.atMs < next) next = deadline.atMs;
    if (next < this.#firesAtMs) this.#schedule(next);
  }
}

export const deadlineTimer = new DeadlineTimer();
