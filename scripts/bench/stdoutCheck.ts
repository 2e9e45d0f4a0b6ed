/**
 * The middleware bench's stdout, checked in the measuring child, and how that child and its parent
 * (scripts/bench/middleware.ts) talk.
 *
 * The child's stdout is /dev/null (middleware.ts says why): every line is still flattened and
 * written with write(2) by Node's own stdout stream, but nothing can read it back. So the child
 * checks what each side writes itself, while nothing is timed: it wraps process.stdout.write (both
 * Powertools' Console and our writer call the stream's `write`), counts each side's writes, lines
 * and bytes, keeps the text of each side's first request, and puts the original method back before
 * anything is timed.
 *
 * Imported by the child before the code under test is loaded (./middlewareChild.ts): nothing here
 * may load it.
 */
import { fstatSync, statSync } from "node:fs";
import type { SideName } from "./middlewareMeasure";

/** Set in the measuring child's environment: scripts/bench/middlewareChild.ts then measures. */
export const MEASURING_CHILD_ENV = "PETSTORE_MIDDLEWARE_BENCH_CHILD";

/** The child's result goes back to the parent as JSON on this file descriptor. */
export const RESULT_FD = 3;

/** Fails unless fd 1 is /dev/null: then every measured line is a real write(2) that no reader has to wake for. */
export function checkStdoutIsDevNull(): void {
  const stdout = fstatSync(1);
  if (!stdout.isCharacterDevice() || stdout.rdev !== statSync("/dev/null").rdev) {
    throw new Error("the measuring child's stdout must be /dev/null (scripts/bench/middleware.ts passes it)");
  }
}

/** What one side wrote over the requests it made while stdout was captured. */
export interface CapturedOutput {
  requests: number;
  writes: number;
  lines: number;
  bytes: number;
  /** All its first request wrote. */
  firstText: string;
}

type StdoutWrite = typeof process.stdout.write;

/** Counts what is written to process.stdout, request by request, until `restore`. */
export class StdoutCapture {
  readonly outputs = new Map<string, CapturedOutput>();
  /** Lines written outside any request (none should be). */
  strayLines = 0;
  readonly #stream = process.stdout;
  readonly #original: StdoutWrite;
  #current: CapturedOutput | undefined;
  #keepText = false;

  constructor() {
    const original = this.#stream.write;
    this.#original = original;
    const note = (chunk: unknown) => this.#note(chunk);
    this.#stream.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
      note(chunk);
      return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as StdoutWrite;
  }

  /** Runs one request of `key`'s: what is written meanwhile is its output. */
  async request<T>(key: string, invoke: () => Promise<T>): Promise<T> {
    const output = this.outputs.get(key) ?? { requests: 0, writes: 0, lines: 0, bytes: 0, firstText: "" };
    this.outputs.set(key, output);
    this.#current = output;
    this.#keepText = output.requests === 0;
    try {
      return await invoke();
    } finally {
      output.requests += 1;
      this.#current = undefined;
    }
  }

  /**
   * The stream's own `write` from then on is the original method: deleting the own property would
   * turn the stream's properties into a dictionary (V8), slowing every write after it.
   */
  restore(): void {
    this.#stream.write = this.#original;
  }

  #note(chunk: unknown): void {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    let lines = 0;
    for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) lines += 1;
    const output = this.#current;
    if (output === undefined) {
      this.strayLines += lines;
      return;
    }
    output.writes += 1;
    output.lines += lines;
    output.bytes += Buffer.byteLength(text);
    if (this.#keepText) output.firstText += text;
  }
}

type LogRecord = Record<string, unknown>;

/** A side's request line and metrics record, as its first request wrote them. */
function linesOf(output: CapturedOutput | undefined, label: string): { log: LogRecord; emf: LogRecord } {
  let records: LogRecord[];
  try {
    records = (output?.firstText ?? "")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as LogRecord);
  } catch {
    throw new Error(`${label}: wrote a line to stdout that is not JSON`);
  }
  const emf = records.find((record) => "_aws" in record);
  const log = records.find((record) => !("_aws" in record));
  if (!emf || !log) throw new Error(`${label}: no request line and metrics record on stdout`);
  return { log, emf };
}

/**
 * Our request line's key as Powertools writes it: injectLambdaContext adds the cold start and the
 * Lambda request id, and the Logger the trace id, each under its own name.
 */
const powertoolsNames: Readonly<Record<string, string>> = {
  xrayTraceId: "xray_trace_id",
  coldStart: "cold_start",
  lambdaRequestId: "function_request_id",
};
const powertoolsKey = (ours: string) => powertoolsNames[ours] ?? ours;

/**
 * The equal-content peer wrote what our chain wrote: every field of our request line, and a
 * metrics record with the same metrics, units, dimensions and members. Answers the fields it has
 * beyond ours.
 */
function equalContentExtraFields(
  ours: CapturedOutput | undefined,
  peer: CapturedOutput | undefined,
  operation: string,
) {
  const our = linesOf(ours, `${operation} handler`);
  const their = linesOf(peer, `${operation} powertoolsEqual`);
  const missing = Object.keys(our.log).filter((key) => !(powertoolsKey(key) in their.log));
  if (missing.length > 0) throw new Error(`${operation}: Powertools' equal-content line lacks ${missing.join(", ")}`);
  const declaration = (emf: LogRecord) =>
    JSON.stringify((emf._aws as { CloudWatchMetrics: unknown }).CloudWatchMetrics);
  const members = (emf: LogRecord) => JSON.stringify(Object.keys(emf).sort());
  if (declaration(our.emf) !== declaration(their.emf) || members(our.emf) !== members(their.emf)) {
    throw new Error(
      `${operation}: Powertools' equal-content metrics differ from ours: ` +
        `${declaration(their.emf)} ${members(their.emf)} vs ${declaration(our.emf)} ${members(our.emf)}`,
    );
  }
  const ourKeys = new Set(Object.keys(our.log).map(powertoolsKey));
  return Object.keys(their.log).filter((key) => !ourKeys.has(key));
}

export const captureKey = (operation: string, side: SideName) => `${operation}:${side}`;

export interface CheckedOutput {
  /** Per operation and side: bytes, writes and lines per request. */
  readonly perRequest: Record<string, Record<SideName, { bytes: number; writes: number; lines: number }>>;
  /** Fields of Powertools' equal-content request line that ours does not have (its content beyond ours). */
  readonly powertoolsEqualExtraFields: string[];
  /** Our handler's first request's output (request line and metrics record), for the write-cost figure. */
  readonly handlerText: string;
}

/**
 * Every side wrote the lines it should for every request (`linesPerRequest`), nothing was written
 * outside a request, each logging side's first request wrote a request line and a metrics record,
 * and the equal-content peer's carry all ours do. `when` names the check in a failure.
 */
export function checkCapturedOutput(
  capture: StdoutCapture,
  operations: readonly string[],
  linesPerRequest: Readonly<Record<SideName, number>>,
  when: string,
): CheckedOutput {
  if (capture.strayLines > 0) {
    throw new Error(`stdout check (${when}): ${capture.strayLines} lines written to stdout outside any request`);
  }
  const perRequest: CheckedOutput["perRequest"] = {};
  const extraFields = new Set<string>();
  let handlerText = "";
  for (const operation of operations) {
    const sides = {} as Record<SideName, { bytes: number; writes: number; lines: number }>;
    for (const side of Object.keys(linesPerRequest) as SideName[]) {
      const output = capture.outputs.get(captureKey(operation, side));
      const requests = output?.requests ?? 0;
      const expected = requests * linesPerRequest[side];
      if (requests === 0 || output?.lines !== expected) {
        throw new Error(
          `stdout check (${when}): ${operation} ${side} wrote ${output?.lines ?? 0} lines in ${requests} requests, ${expected} expected`,
        );
      }
      sides[side] = {
        bytes: Math.round(output.bytes / requests),
        writes: round2(output.writes / requests),
        lines: round2(output.lines / requests),
      };
      if (linesPerRequest[side] > 0) linesOf(output, `${operation} ${side}`);
    }
    perRequest[operation] = sides;
    const handler = capture.outputs.get(captureKey(operation, "handler"));
    handlerText ||= handler?.firstText ?? "";
    for (const field of equalContentExtraFields(
      handler,
      capture.outputs.get(captureKey(operation, "powertoolsEqual")),
      operation,
    )) {
      extraFields.add(field);
    }
  }
  return { perRequest, powertoolsEqualExtraFields: [...extraFields], handlerText };
}

const round2 = (value: number) => Math.round(value * 100) / 100;
