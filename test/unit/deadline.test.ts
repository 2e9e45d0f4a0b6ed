import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Deadline, deadlineTimer } from "../../lib/db/deadline";

describe("request deadlines", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    // The process's deadline timer outlives a test: let it fire, so that the next test starts with none pending.
    vi.runAllTimers();
    vi.useRealTimers();
  });

  it("aborts a request's calls when its deadline passes, with the TimeoutError AbortSignal.timeout gives", () => {
    const deadline = new Deadline(Date.now() + 1000);
    const { signal } = deadline;

    vi.advanceTimersByTime(999);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);

    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe("TimeoutError");
    expect(deadlineTimer.armedCount).toBe(0);
  });

  it("gives every call of a request the same signal", () => {
    const deadline = new Deadline(Date.now() + 1000);
    expect(deadline.signal).toBe(deadline.signal);
    deadline.release();
  });

  it("never aborts a request that was answered and released before its deadline", () => {
    const deadline = new Deadline(Date.now() + 1000);
    const { signal } = deadline;
    deadline.release();

    vi.advanceTimersByTime(5000);

    expect(signal.aborted).toBe(false);
    expect(deadlineTimer.armedCount).toBe(0);
  });

  it("starts no timer per request: one process timer serves requests one after another", () => {
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    const signals: AbortSignal[] = [];
    for (let request = 0; request < 100; request++) {
      const deadline = new Deadline(Date.now() + 9000);
      signals.push(deadline.signal);
      vi.advanceTimersByTime(10);
      deadline.release();
    }
    const timersStarted = setTimeoutSpy.mock.calls.length;
    setTimeoutSpy.mockRestore();

    expect(timersStarted).toBeLessThanOrEqual(1);
    vi.advanceTimersByTime(20_000);
    expect(signals.some((signal) => signal.aborted)).toBe(false);
  });

  it("aborts each of several requests in flight at its own deadline, earliest first", () => {
    const late = new Deadline(Date.now() + 3000);
    const early = new Deadline(Date.now() + 1000);
    const [lateSignal, earlySignal] = [late.signal, early.signal];

    vi.advanceTimersByTime(1000);
    expect([earlySignal.aborted, lateSignal.aborted]).toEqual([true, false]);
    vi.advanceTimersByTime(2000);
    expect([earlySignal.aborted, lateSignal.aborted]).toEqual([true, true]);
  });

  it("keeps the deadlines of overlapping requests released out of order apart", () => {
    const [first, second, third] = [1000, 2000, 3000].map((ms) => new Deadline(Date.now() + ms)) as Deadline[];
    const signals = [first, second, third].map((deadline) => deadline?.signal);
    expect(deadlineTimer.armedCount).toBe(3);

    second?.release();
    first?.release();
    second?.release();
    expect(deadlineTimer.armedCount).toBe(1);

    vi.advanceTimersByTime(3000);
    expect(signals.map((signal) => signal?.aborted)).toEqual([false, false, true]);
    expect(deadlineTimer.armedCount).toBe(0);
  });

  it("aborts at once a deadline that has already passed when first used", () => {
    const { signal } = new Deadline(Date.now() - 1);
    vi.advanceTimersByTime(0);
    expect(signal.aborted).toBe(true);
  });

  it("waits out a deadline further away than one timer can wait without firing early", () => {
    const { signal } = new Deadline(Date.now() + 2 ** 31 + 5000);
    vi.advanceTimersByTime(2 ** 31 - 1);
    expect(signal.aborted).toBe(false);
    vi.advanceTimersByTime(5002);
    expect(signal.aborted).toBe(true);
  });

  it("answers for work that ignores the signal once the deadline passes, and not before", async () => {
    const deadline = new Deadline(Date.now() + 1000);
    const outcome = deadline
      .within(new Promise(() => undefined), () => new Error("deadline passed"))
      .then(
        () => "resolved",
        (error: Error) => error.message,
      );

    vi.advanceTimersByTime(999);
    await Promise.resolve();
    const early = await Promise.race([outcome, Promise.resolve("still waiting")]);
    // The answer comes a turn after the abort, so that a store call the abort ended answers first.
    await vi.advanceTimersByTimeAsync(1);
    await vi.runOnlyPendingTimersAsync();

    expect(early).toBe("still waiting");
    await expect(outcome).resolves.toBe("deadline passed");
  });

  it("hands on the work's own outcome when it settles in time, and releases the deadline then", async () => {
    const answered = new Deadline(Date.now() + 1000);
    await expect(answered.within(Promise.resolve(42), () => new Error("late"))).resolves.toBe(42);
    expect(deadlineTimer.armedCount).toBe(0);

    const failed = new Deadline(Date.now() + 1000);
    const { signal } = failed;
    await expect(failed.within(Promise.reject(new Error("own")), () => new Error("late"))).rejects.toThrow("own");
    expect(deadlineTimer.armedCount).toBe(0);
    vi.advanceTimersByTime(5000);
    expect(signal.aborted).toBe(false);
  });
});
