/**
 * Stands in for `node:stream/web` in the Lambda bundles (see infra/bundling.ts). @middy/core
 * imports ReadableStream only to recognise a streamed response, which these functions never
 * return, yet importing the real module costs about 1 ms of every cold start (npm run bench).
 * Node's global ReadableStream is the same class and loads only when first touched.
 */
export class ReadableStream {
  static [Symbol.hasInstance](value: unknown): boolean {
    return value instanceof globalThis.ReadableStream;
  }

  constructor() {
    throw new Error("node:stream/web is replaced in the Lambda bundles; use the global ReadableStream.");
  }
}
