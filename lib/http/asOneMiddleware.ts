import type { MiddlewareObj, Request } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ApiEvent, ApiResult } from "./types";

type ChainRequest = Request<ApiEvent, ApiResult, Error, Context>;
type ChainMiddleware = MiddlewareObj<ApiEvent, ApiResult, Error, Context>;
type Phase = (request: ChainRequest) => unknown;

/** One middleware of the chain, named so that the bench can say what each one costs. */
export interface ChainStep {
  readonly name: string;
  readonly middleware: ChainMiddleware;
}

/** Called around each step as it runs (the bench times the steps with them). */
export interface StepHooks {
  readonly beforeStep?: (name: string) => void;
  readonly afterStep?: (name: string) => void;
}

interface NamedPhase {
  readonly name: string;
  readonly run: Phase;
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === "function";

/**
 * Runs `phases` in order, as Middy runs the middlewares it was given: each awaited only when it
 * returns a promise, and the first that returns a value ends the phase with it (Middy's early
 * response; in onError, the answer that ends error handling). Synchronous all the way unless a step
 * is not: what Middy would otherwise do per step (await it, a promise and a microtask each) is
 * done once for the lot.
 */
function sequence(phases: readonly NamedPhase[], hooks: StepHooks): Phase {
  if (phases.length === 0) return () => undefined;
  const from = (request: ChainRequest, start: number): unknown => {
    for (let index = start; index < phases.length; index++) {
      const { name, run } = phases[index] as NamedPhase;
      hooks.beforeStep?.(name);
      const result = run(request);
      if (isThenable(result)) {
        return Promise.resolve(result).then((value) => {
          hooks.afterStep?.(name);
          return value === undefined ? from(request, index + 1) : value;
        });
      }
      hooks.afterStep?.(name);
      if (result !== undefined) return result;
    }
    return undefined;
  };
  return (request) => from(request, 0);
}

/**
 * The chain's middlewares registered with Middy as one: `before` top to bottom, `after` and
 * `onError` bottom to top, exactly the order and early-answer rules Middy applies to middlewares
 * registered one by one (https://middy.js.org/docs/intro/how-it-works). Each step stays a small
 * middleware of its own (lib/http/middleware/); what changes is that Middy awaits one step where it
 * awaited six to eight (one per `before` and `after` of the route), each a promise and a microtask on
 * every request (npm run bench).
 */
export function asOneMiddleware(steps: readonly ChainStep[], hooks: StepHooks = {}): ChainMiddleware {
  const phase = (key: "before" | "after" | "onError", order: readonly ChainStep[]) =>
    sequence(
      order.flatMap(({ name, middleware }) => {
        const run = middleware[key] as Phase | undefined;
        return run ? [{ name: key === "before" ? name : `${name} (${key})`, run }] : [];
      }),
      hooks,
    );
  const reversed = [...steps].reverse();
  return {
    before: phase("before", steps),
    after: phase("after", reversed),
    onError: phase("onError", reversed),
  } as ChainMiddleware;
}
