import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { Deadline } from "../../db/deadline";
import type { ApiEvent, ApiResult } from "../types";

/**
 * How long before Lambda's own timeout a request stops waiting for DynamoDB and answers 503: room
 * to map the error, log it and hand the answer back. The early answer (answerByDeadline) comes at
 * the same moment, for anything that does not heed the deadline.
 */
export const REQUEST_DEADLINE_MARGIN_MS = 1000;

/**
 * Gives the request its deadline as it enters the chain, before the bearer check's key lookup.
 * Without a Lambda context that knows its remaining time (tests, tools), it sets none.
 */
export function requestDeadline(): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const remainingMs = request.context.getRemainingTimeInMillis?.();
      if (remainingMs !== undefined) {
        request.event.deadline = new Deadline(Date.now() + remainingMs - REQUEST_DEADLINE_MARGIN_MS);
      }
    },
  };
}

/** A request whose operation is still running, and what to do if its deadline comes first. */
interface Waiter {
  readonly atMs: number;
  readonly expire: () => void;
}

/**
 * One timer for the whole container instead of one per request (Middy's timeoutEarlyInMillis arms
 * and clears a setTimeout on every invocation): armed for the earliest deadline of the requests in
 * flight, it answers those that are due and re-arms for the next. A Lambda container serves one
 * request at a time, and each deadline is later than the last, so the timer armed by one request
 * usually still stands when the next one starts. It holds the process open only while a request
 * waits, as Middy's did.
 */
const waiting = new Set<Waiter>();
let timer: NodeJS.Timeout | undefined;
let timerAtMs = Number.POSITIVE_INFINITY;

function arm(atMs: number): void {
  if (timer) clearTimeout(timer);
  timerAtMs = atMs;
  timer = setTimeout(expireDue, Math.max(0, atMs - Date.now()));
}

function expireDue(): void {
  timer = undefined;
  timerAtMs = Number.POSITIVE_INFINITY;
  const now = Date.now();
  let next = Number.POSITIVE_INFINITY;
  for (const waiter of waiting) {
    if (waiter.atMs <= now) {
      waiting.delete(waiter);
      waiter.expire();
    } else if (waiter.atMs < next) {
      next = waiter.atMs;
    }
  }
  // A timer may fire a little before Date.now() reaches its instant: those waiters are re-armed for.
  if (next !== Number.POSITIVE_INFINITY) arm(next);
}

/**
 * What `work` settles with, unless `deadline` comes first: then what `onTimeout` returns or throws,
 * and `work` is left to finish unheard. The request's answer then comes in time even when the
 * operation waits on something that ignores the deadline's signal.
 */
export function answerByDeadline<T>(work: Promise<T>, deadline: Deadline, onTimeout: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const waiter: Waiter = {
      atMs: deadline.atMs,
      expire: () => {
        try {
          resolve(onTimeout());
        } catch (error) {
          reject(error);
        }
      },
    };
    waiting.add(waiter);
    if (waiter.atMs < timerAtMs) arm(waiter.atMs);
    else timer?.ref();
    const settle = () => {
      waiting.delete(waiter);
      if (waiting.size === 0) timer?.unref();
    };
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}
