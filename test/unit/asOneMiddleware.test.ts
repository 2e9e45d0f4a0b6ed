import middy, { type MiddlewareObj, type Request } from "@middy/core";
import type { Context } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { asOneMiddleware, type ChainStep } from "../../lib/http/asOneMiddleware";
import type { ApiEvent, ApiResult } from "../../lib/http/types";

type Step = MiddlewareObj<ApiEvent, ApiResult, Error, Context>;
type ChainRequest = Request<ApiEvent, ApiResult, Error, Context>;

/** How a recording step behaves in each phase it takes part in. */
interface Behaviour {
  readonly async?: boolean;
  readonly throws?: boolean;
  /** A value to return (Middy's early answer in `before`, the end of error handling in `onError`). */
  readonly answer?: ApiResult;
  /** Set request.response (as errorResponse and the envelope do). */
  readonly sets?: ApiResult;
}

function recordingStep(
  name: string,
  log: string[],
  phases: Partial<Record<"before" | "after" | "onError", Behaviour>>,
): ChainStep {
  const middleware: Record<string, (request: ChainRequest) => unknown> = {};
  for (const [phase, behaviour] of Object.entries(phases)) {
    middleware[phase] = (request) => {
      const run = () => {
        log.push(`${name}.${phase}`);
        if (behaviour.throws) throw new Error(`${name}.${phase} failed`);
        if (behaviour.sets) request.response = behaviour.sets;
        return behaviour.answer;
      };
      return behaviour.async ? Promise.resolve().then(run) : run();
    };
  }
  return { name, middleware: middleware as Step };
}

const ok: ApiResult = { statusCode: 200, body: "done" };
const early: ApiResult = { statusCode: 304, body: "early" };
const mapped: ApiResult = { statusCode: 400, body: "mapped" };

/** Runs the same steps under Middy registered one by one, and as one middleware; returns both logs and outcomes. */
async function bothWays(
  build: (log: string[]) => ChainStep[],
  operation: (log: string[]) => Promise<ApiResult> = async (log) => {
    log.push("operation");
    return ok;
  },
) {
  const run = async (asOne: boolean) => {
    const log: string[] = [];
    const steps = build(log);
    const handler = middy<ApiEvent, ApiResult, Error, Context>(() => operation(log), { timeoutEarlyInMillis: 0 });
    if (asOne) handler.use(asOneMiddleware(steps));
    else for (const step of steps) handler.use(step.middleware);
    const outcome = await handler({} as ApiEvent, {} as Context).then(
      (response) => ({ response }),
      (error: Error) => ({ error: error.message }),
    );
    return { log, outcome };
  };
  return { oneByOne: await run(false), asOne: await run(true) };
}

describe("the chain's steps registered with Middy as one middleware", () => {
  it("run before top to bottom, then after and onError bottom to top, as Middy runs them one by one", async () => {
    const { oneByOne, asOne } = await bothWays((log) => [
      recordingStep("outer", log, { before: {}, after: {} }),
      recordingStep("middle", log, { before: { async: true }, after: { async: true } }),
      recordingStep("inner", log, { before: {} }),
    ]);

    expect(asOne).toEqual(oneByOne);
    expect(asOne.log).toEqual([
      "outer.before",
      "middle.before",
      "inner.before",
      "operation",
      "middle.after",
      "outer.after",
    ]);
    expect(asOne.outcome).toEqual({ response: ok });
  });

  it("stop at a failing step and run every onError bottom to top, as Middy does", async () => {
    const { oneByOne, asOne } = await bothWays((log) => [
      recordingStep("telemetry", log, { before: {}, onError: {} }),
      recordingStep("envelope", log, { onError: { async: true } }),
      recordingStep("errors", log, { onError: { sets: mapped } }),
      recordingStep("auth", log, { before: { async: true, throws: true } }),
      recordingStep("body", log, { before: {} }),
    ]);

    expect(asOne).toEqual(oneByOne);
    expect(asOne.log).toEqual([
      "telemetry.before",
      "auth.before",
      "errors.onError",
      "envelope.onError",
      "telemetry.onError",
    ]);
    expect(asOne.outcome).toEqual({ response: mapped });
  });

  it("answer early with what a before step returns, skipping the operation and the after steps, as Middy does", async () => {
    const { oneByOne, asOne } = await bothWays((log) => [
      recordingStep("outer", log, { before: {}, after: {} }),
      recordingStep("cache", log, { before: { async: true, answer: early } }),
      recordingStep("inner", log, { before: {} }),
    ]);

    expect(asOne).toEqual(oneByOne);
    expect(asOne.log).toEqual(["outer.before", "cache.before"]);
    expect(asOne.outcome).toEqual({ response: early });
  });

  it("end error handling at an onError step that returns an answer, as Middy does", async () => {
    const { oneByOne, asOne } = await bothWays(
      (log) => [
        recordingStep("outer", log, { onError: {} }),
        recordingStep("inner", log, { onError: { answer: mapped } }),
      ],
      async () => {
        throw new Error("operation failed");
      },
    );

    expect(asOne).toEqual(oneByOne);
    expect(asOne.log).toEqual(["inner.onError"]);
    expect(asOne.outcome).toEqual({ response: mapped });
  });

  it("hand Middy the error when no onError step answers, as Middy does", async () => {
    const { oneByOne, asOne } = await bothWays(
      (log) => [recordingStep("outer", log, { before: {}, onError: {} })],
      async () => {
        throw new Error("operation failed");
      },
    );

    expect(asOne).toEqual(oneByOne);
    expect(asOne.outcome).toEqual({ error: "operation failed" });
  });

  it("finish synchronous steps without waiting a turn, and wait only for a step that returns a promise", async () => {
    const log: string[] = [];
    const synchronous = asOneMiddleware([
      recordingStep("a", log, { before: {} }),
      recordingStep("b", log, { before: {} }),
    ]);
    const request = { event: {}, context: {}, internal: {} } as unknown as ChainRequest;

    expect(synchronous.before?.(request)).toBeUndefined();
    expect(log).toEqual(["a.before", "b.before"]);

    log.length = 0;
    const waiting = asOneMiddleware([
      recordingStep("a", log, { before: {} }),
      recordingStep("b", log, { before: { async: true } }),
      recordingStep("c", log, { before: {} }),
    ]);
    const pending = waiting.before?.(request);
    expect(pending).toBeInstanceOf(Promise);
    expect(log).toEqual(["a.before"]);
    await pending;
    expect(log).toEqual(["a.before", "b.before", "c.before"]);
  });

  it("tells the hooks each step's name as it starts and ends, phase by phase", async () => {
    const log: string[] = [];
    const seen: string[] = [];
    const handler = middy<ApiEvent, ApiResult, Error, Context>(async () => ok, { timeoutEarlyInMillis: 0 }).use(
      asOneMiddleware(
        [
          recordingStep("outer", log, { before: {}, after: {} }),
          recordingStep("inner", log, { before: { async: true } }),
        ],
        { beforeStep: (name) => seen.push(`start ${name}`), afterStep: (name) => seen.push(`end ${name}`) },
      ),
    );

    await handler({} as ApiEvent, {} as Context);

    expect(seen).toEqual([
      "start outer",
      "end outer",
      "start inner",
      "end inner",
      "start outer (after)",
      "end outer (after)",
    ]);
  });
});
