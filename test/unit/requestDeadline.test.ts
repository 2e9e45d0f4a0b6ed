import { describe, expect, it } from "vitest";
import { Deadline } from "../../lib/db/deadline";
import { answerByDeadline } from "../../lib/http/middleware/requestDeadline";

const never = () => new Promise<string>(() => undefined);
const after = (ms: number, value: string) => new Promise<string>((resolve) => setTimeout(() => resolve(value), ms));
const inMs = (ms: number) => new Deadline(Date.now() + ms);
const timedOut = () => "timed out";

describe("answering by the request's deadline", () => {
  it("answers with the work's result when it settles first, and with its error when it fails", async () => {
    await expect(answerByDeadline(after(5, "done"), inMs(200), timedOut)).resolves.toBe("done");
    await expect(answerByDeadline(Promise.reject(new Error("failed")), inMs(200), timedOut)).rejects.toThrow("failed");
  });

  it("answers with the timeout's answer, or its error, when the deadline comes first", async () => {
    const started = Date.now();
    await expect(answerByDeadline(never(), inMs(30), timedOut)).resolves.toBe("timed out");
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
    await expect(
      answerByDeadline(never(), inMs(10), () => {
        throw new Error("503");
      }),
    ).rejects.toThrow("503");
  });

  it("times out each of several waiting requests at its own deadline, whatever order they came in", async () => {
    const started = Date.now();
    const settledAt = (promise: Promise<string>) => promise.then((value) => ({ value, ms: Date.now() - started }));

    const [late, early, middle] = await Promise.all([
      settledAt(answerByDeadline(never(), inMs(120), () => "late")),
      settledAt(answerByDeadline(never(), inMs(20), () => "early")),
      settledAt(answerByDeadline(never(), inMs(70), () => "middle")),
    ]);

    expect([early.value, middle.value, late.value]).toEqual(["early", "middle", "late"]);
    expect(early.ms).toBeLessThan(middle.ms);
    expect(middle.ms).toBeLessThan(late.ms);
    expect(late.ms).toBeGreaterThanOrEqual(115);
  });

  it("still times out a request that starts after earlier ones finished in time (one timer serves them all)", async () => {
    for (let i = 0; i < 50; i++) await answerByDeadline(Promise.resolve("quick"), inMs(40 + i), timedOut);

    await expect(answerByDeadline(never(), inMs(60), timedOut)).resolves.toBe("timed out");
  });
});
