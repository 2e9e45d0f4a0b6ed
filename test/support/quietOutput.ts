/**
 * Runs first in every test worker. The handlers' telemetry (request logs, EMF metrics) and CDK's
 * "Bundling asset …" lines are written straight to process.stdout and process.stderr, which Vitest
 * passes through as they come, unattributed: 1,200 lines of a passing run. Routed through the
 * console instead, Vitest ties each line to the test that wrote it and, with `silent: "passed-only"`
 * (vitest.config.ts), prints it only if that test fails. Not loaded with TEST_LOGS=1. Child
 * processes are not affected: tests collect their output themselves.
 */

const routed = Symbol.for("petstore.quietOutput");

type Write = typeof process.stdout.write;

function throughConsole(log: (text: string) => void): Write {
  return ((chunk: string | Uint8Array, encodingOrCallback?: unknown, callback?: unknown) => {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    log(text.endsWith("\n") ? text.slice(0, -1) : text);
    const done = typeof encodingOrCallback === "function" ? encodingOrCallback : callback;
    if (typeof done === "function") queueMicrotask(() => done());
    return true;
  }) as Write;
}

const streams = process as unknown as Record<symbol, boolean>;
if (!streams[routed]) {
  streams[routed] = true;
  process.stdout.write = throughConsole((text) => console.log(text));
  process.stderr.write = throughConsole((text) => console.error(text));
  // npx, which CDK runs to bundle the functions, says only what went wrong.
  process.env.npm_config_loglevel ??= "error";
}
