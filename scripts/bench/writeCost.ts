/**
 * What one stdout-sized write costs by where it goes: the middleware bench's informational figure
 * `writeCost` (scripts/bench/middleware.ts says why its measured sides write to /dev/null, and why
 * this figure is reported apart from the ratios).
 *
 * The same bytes (the handler's request line and metrics record, as it wrote them) are written with
 * write(2), alternately to /dev/null and to a pipe that another process drains (a FIFO, a kernel
 * pipe as a function's stdout is, read by a Node process that waits on it in its event loop). Writes
 * are at least 50 µs apart, spent busy as between two requests, so that the reader has drained the
 * previous write and gone back to sleep: each write to the pipe then pays the reader's wake-up, as a
 * request's write does in a function serving one request at a time.
 */
import { execFileSync, spawn } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { percentile, round } from "./stats";

export interface WriteSummary {
  readonly p50: number;
  readonly p90: number;
}

export interface WriteCost {
  readonly devNullUs: WriteSummary;
  readonly drainedPipeUs: WriteSummary;
  /** Bytes per write: the handler's request line and metrics record. */
  readonly bytes: number;
  /** Timed writes to each sink, after the warm-up. */
  readonly writes: number;
  /** Least time between the end of one write and the start of the next. */
  readonly gapUs: number;
}

const GAP_NS = 50_000n;
const WARMUP_WRITES = 200;

/** The drain: reads its stdin (the FIFO) in its event loop and drops it; says when it is reading. */
const DRAIN_SCRIPT = 'process.stdin.on("data", () => {}); process.stdout.write("reading\\n");';

/** A Node process draining a new FIFO; `writeEnd` is a blocking descriptor on it, as a process's stdout pipe is. */
async function drainedFifo(directory: string) {
  const path = join(directory, "stdout");
  execFileSync("mkfifo", [path]);
  // Opened without blocking (no writer yet); with a reader open, the write end then opens at once.
  const readEnd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeEnd = openSync(path, constants.O_WRONLY);
  const drain = spawn(process.execPath, ["-e", DRAIN_SCRIPT], { stdio: [readEnd, "pipe", "inherit"] });
  // The drain has its own copy; once it is the only reader, a write after its death fails (EPIPE) instead of blocking.
  closeSync(readEnd);
  const exited = new Promise<void>((resolve, reject) => {
    drain.once("error", reject);
    drain.once("exit", (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`write cost: the pipe's drain ended with ${code ?? signal}`)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    (drain.stdout as Readable).once("data", () => resolve());
    exited.then(() => reject(new Error("write cost: the pipe's drain ended before reading")), reject);
  });
  (drain.stdout as Readable).resume();
  return { writeEnd, exited };
}

/**
 * `count` timed writes of `text` to each sink, interleaved (which goes first alternates), after
 * a warm-up of each.
 */
export async function measureWriteCost(text: string, count = 2000): Promise<WriteCost> {
  const bytes = Buffer.from(text);
  const directory = mkdtempSync(join(tmpdir(), "petstore-write-cost-"));
  try {
    const pipe = await drainedFifo(directory);
    const devNull = openSync("/dev/null", "w");
    const devNullNs: number[] = [];
    const pipeNs: number[] = [];
    try {
      let lastEnded = process.hrtime.bigint();
      const timedWrite = (fd: number): number => {
        while (process.hrtime.bigint() - lastEnded < GAP_NS) {
          // Busy, as a process between two requests: a sleeping writer would add a wake-up of its own.
        }
        const started = process.hrtime.bigint();
        const written = writeSync(fd, bytes);
        lastEnded = process.hrtime.bigint();
        if (written !== bytes.length) throw new Error(`write cost: ${written} of ${bytes.length} bytes written`);
        return Number(lastEnded - started);
      };
      for (let i = 0; i < WARMUP_WRITES + count; i++) {
        const pipeFirst = i % 2 === 1;
        const first = timedWrite(pipeFirst ? pipe.writeEnd : devNull);
        const second = timedWrite(pipeFirst ? devNull : pipe.writeEnd);
        if (i < WARMUP_WRITES) continue;
        devNullNs.push(pipeFirst ? second : first);
        pipeNs.push(pipeFirst ? first : second);
      }
    } finally {
      closeSync(devNull);
      closeSync(pipe.writeEnd);
    }
    await pipe.exited;
    const summary = (ns: readonly number[]): WriteSummary => ({
      p50: round(percentile(ns, 50) / 1000, 2),
      p90: round(percentile(ns, 90) / 1000, 2),
    });
    return {
      devNullUs: summary(devNullNs),
      drainedPipeUs: summary(pipeNs),
      bytes: bytes.length,
      writes: count,
      gapUs: Number(GAP_NS) / 1000,
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
