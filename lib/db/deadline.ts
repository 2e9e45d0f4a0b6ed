/**
 * The moment a request's DynamoDB calls must give up, so that the request can still answer a
 * retryable 503 before Lambda stops the function (lib/http/middleware/requestDeadline.ts sets it).
 * Each call gets `signal` as the SDK's `abortSignal`: the SDK then stops waiting for an answer, a
 * connection or its back-off before the next attempt, and the call fails with an AbortError.
 */
export class Deadline {
  #signal: AbortSignal | undefined;

  /** `atMs`: epoch milliseconds, as Date.now(). */
  constructor(readonly atMs: number) {}

  /**
   * Armed on first use: a timed AbortSignal costs microseconds on Node 20, which only requests
   * that reach DynamoDB then pay (a key found in the verifier's cache costs none).
   */
  get signal(): AbortSignal {
    this.#signal ??= AbortSignal.timeout(Math.max(0, this.atMs - Date.now()));
    return this.#signal;
  }
}
