/**
 * Stands in for the global `ReadableStream` wherever the bundled code names it (esbuild `inject`,
 * infra/bundling.ts). The SDK asks of every response body whether it is a web ReadableStream
 * (`typeof ReadableStream == "function" && … instanceof ReadableStream`), and merely reading the
 * global makes Node load its web streams, about 1 ms of every cold request (npm run bench), though
 * in Node the body is always a Node stream. This answers those questions the same way without
 * loading anything for a Node stream or a value that is no object, and defers to the real class
 * for anything else, so every answer is the one the global would give.
 */
import { Readable } from "node:stream";

/** The global class, read only when a question needs it (the read is what loads web streams). */
const realReadableStream = () => globalThis.ReadableStream;

class ReadableStreamProbe {
  static [Symbol.hasInstance](value: unknown): boolean {
    // Neither a primitive nor a Node stream can be a web stream; anything else is asked of the class.
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
    if (value instanceof Readable) return false;
    return value instanceof realReadableStream();
  }

  // The code that names the global may also build one (a stream it hands back): that is the real class's.
  constructor(...args: ConstructorParameters<typeof ReadableStream>) {
    // biome-ignore lint/correctness/noConstructorReturn: a stand-in constructs what the real class would
    return new (realReadableStream())(...args);
  }

  static from(...args: Parameters<typeof ReadableStream.from>) {
    return realReadableStream().from(...args);
  }
}

// Code compares constructor names with `ReadableStream.name`.
Object.defineProperty(ReadableStreamProbe, "name", { value: "ReadableStream" });

export { ReadableStreamProbe as ReadableStream };
