/**
 * When each key last called each operation, by UTC day: what `keys list` shows, what finds keys
 * nobody uses any more (`keys list --unused-for 90d`), and who still calls the deprecated get
 * (`npm run deprecation-report`). A day's use is written once per key and operation, not once per
 * request: each container remembers what it has recorded (recordKeyUse), and the store's write
 * succeeds only for a later day than the one stored, so containers racing on the same day change
 * the item once.
 */
import type { Deadline } from "../db/deadline";
import type { Logger } from "../observability/logger";
import { describeError } from "../observability/logger";

/** A UTC day, `YYYY-MM-DD`. */
export type UsageDay = string;

export interface KeyUse {
  readonly keyId: string;
  readonly operationId: string;
  /** The last UTC day the key called the operation. */
  readonly lastUsedOn: UsageDay;
}

export interface KeyUsageStore {
  /**
   * Records that `keyId` called `operationId` on `day`; true when this write moved the stored day
   * forward, false when the day (or a later one) was recorded already.
   */
  recordUse(use: KeyUse, options?: { readonly synthetic?: boolean; readonly deadline?: Deadline }): Promise<boolean>;
  /** Every key's uses. */
  list(): Promise<KeyUse[]>;
}

/** The UTC day of `at`. */
export function usageDayOf(at: Date): UsageDay {
  return at.toISOString().slice(0, 10);
}

export interface KeyUseRecorder {
  /**
   * Records a request's use of a key at `atMs` (epoch ms): at once (undefined) when this container
   * has recorded that key and operation that day already, which is every request but the first of
   * the day; otherwise a promise that settles once the store has answered. Never rejects: a failed
   * write is logged and retried on the next request, since the request itself succeeded.
   */
  record(
    principal: { readonly keyId: string; readonly synthetic?: boolean },
    operationId: string,
    atMs: number,
    deadline?: Deadline,
  ): Promise<void> | undefined;
}

/** How many keys a container remembers per operation; past that, the oldest is forgotten. */
const MAX_REMEMBERED_KEYS = 10_000;
const DAY_MS = 86_400_000;

export function createKeyUseRecorder(store: KeyUsageStore, log?: Pick<Logger, "warn">): KeyUseRecorder {
  /** Per operation, each key's day recorded (or being recorded) by this container. */
  const recorded = new Map<string, Map<string, UsageDay>>();
  // The day of the last request, reused until it ends: no date formatting on every request.
  let day = "";
  let dayStart = 0;
  let dayEnd = 0;
  return {
    record(principal, operationId, atMs, deadline) {
      if (atMs < dayStart || atMs >= dayEnd) {
        dayStart = atMs - (atMs % DAY_MS);
        dayEnd = dayStart + DAY_MS;
        day = usageDayOf(new Date(dayStart));
      }
      let keys = recorded.get(operationId);
      if (keys === undefined) {
        keys = new Map();
        recorded.set(operationId, keys);
      }
      const { keyId } = principal;
      // A later day remembered counts too: a clock stepped back over midnight must not write a day
      // the store would refuse (a wasted write unit per request until the clock is past it again).
      const remembered = keys.get(keyId);
      if (remembered !== undefined && remembered >= day) return undefined;
      const recording = day;
      // Marked before the write, so that concurrent requests of this container do not write too.
      keys.delete(keyId);
      if (keys.size >= MAX_REMEMBERED_KEYS) {
        const oldest = keys.keys().next().value;
        if (oldest !== undefined) keys.delete(oldest);
      }
      keys.set(keyId, recording);
      return store
        .recordUse(
          { keyId, operationId, lastUsedOn: recording },
          { ...(principal.synthetic ? { synthetic: true } : {}), ...(deadline ? { deadline } : {}) },
        )
        .then(
          () => undefined,
          (error: unknown) => {
            if (keys.get(keyId) === recording) keys.delete(keyId);
            log?.warn("recording a key's use failed; the next request retries", {
              keyId,
              operationId,
              error: describeError(error),
            });
          },
        );
    },
  };
}
