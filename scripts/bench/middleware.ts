/**
 * Middleware overhead (npm run bench, section 3; issue 26): warm invocations of each handler (the
 * full Middy chain, with the repository and key store in memory) against the bare operation the
 * chain wraps, and against the same bare operation wrapped in what a user would pick instead,
 * AWS Lambda Powertools' Logger and Metrics, twice: as Powertools' documentation configures them
 * (one log line, one metric) and writing the same content as our chain (the same request-line
 * fields, the same 7 metrics and dimensions). Every side pays what it pays in Lambda
 * (scripts/bench/middlewareMeasure.ts): a full recorded-shape REST proxy event per invocation, real
 * writes to stdout, the request's deadline armed by the first store call, a quiet container's clock
 * (every request in a new second) and Lambda's per-invocation trace header.
 *
 * Every Node version is measured in a child process of its own (scripts/bench/middlewareChild.ts)
 * with Lambda's environment. Its stdout is /dev/null, opened here: every line is still flattened
 * and written with a write(2) by Node's own stdout stream (on a file, a SyncWriteStream, synchronous
 * as it is on Lambda's stdout pipe), so each side pays each of its writes (Powertools two per
 * request, ours one), but no reader has to be woken. Why not a pipe someone drains, as Lambda's
 * runtime drains a function's stdout: a write to a pipe whose reader sleeps costs the reader's
 * wake-up, several times the write itself, set by the OS scheduler and the reader rather than by
 * either side's code, and noisy on a shared machine; with it, both sides' times and so the ratios
 * would mostly measure the scheduler. That wake-up is reported apart instead, as `writeCost`
 * (scripts/bench/writeCost.ts): the handler's own request line and metrics record written to
 * /dev/null and to a drained pipe, p50 and p90 µs per write. Add it per write to a side's time to
 * see that side with a sleeping reader (Powertools' second write of a request mostly finds the
 * reader still awake).
 *
 * Nothing can read /dev/null back, so the child checks what each side writes itself, before the
 * timing and after (scripts/bench/stdoutCheck.ts): the lines per request, a request line and a
 * metrics record for each logging side, the equal-content Powertools line carrying every field ours
 * does with the same metrics declaration. The result comes back on fd 3.
 *
 * Figures per operation: p50/p99 µs per side; peerRatio = median over rounds of (handler − bare) /
 * (documented Powertools − bare) and equalPeerRatio the same against equal-content Powertools, with
 * each round's ratio and their spread; bytes allocated per request per side (v8.GCProfiler, each
 * side alone); stdout bytes and writes per request per side; the share of requests that missed the
 * log timestamp's per-second cache; and each chain step's median µs. Per run: writeCost.
 */
import { execFileSync, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { createTelemetry } from "../../lib/observability/telemetry";
import { lambdaRuntimeVariables } from "./lambdaEnvironment";
import type { MeasuredOverhead } from "./middlewareMeasure";
import { MEASURING_CHILD_ENV, RESULT_FD } from "./stdoutCheck";

/** The deployed functions' JSON telemetry at INFO, formatted in full but written nowhere (the throughput bench's). */
export function discardedTelemetry() {
  return createTelemetry({
    service: "petstore",
    stage: "local",
    level: "INFO",
    format: "json",
    write: () => undefined,
  });
}

export type OverheadResult = MeasuredOverhead;

const childScript = fileURLToPath(new URL("./middlewareChild.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The stage the measured functions run as: production's, with its log level (infra/config.ts). */
const BENCH_STAGE = "prod";
const FUNCTION_NAME = "Production-PetStore-listPets";

/**
 * The environment of a deployed function: what Lambda sets in every function's
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
 * what the stack adds (infra/stacks/petStoreStack.ts: the table, stage and level, JSON log format
 * with its application log level, active tracing), and nothing of Powertools' own settings (its
 * POWERTOOLS_DEV would swap its Console for the global one). _X_AMZN_TRACE_ID is set by the child
 * for each invocation, as Lambda sets it.
 */
function lambdaEnvironment(node: string): NodeJS.ProcessEnv {
  const major = /^v(\d+)\./.exec(execFileSync(node, ["--version"], { encoding: "utf8" }).trim())?.[1] ?? "22";
  const region = process.env.AWS_REGION || "us-east-1";
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("POWERTOOLS_") && name !== "_X_AMZN_TRACE_ID"),
  );
  return {
    ...inherited,
    ...lambdaRuntimeVariables({
      functionName: FUNCTION_NAME,
      memoryMb: 512,
      nodeMajor: major,
      region,
      version: "42",
      taskRoot: "/var/task",
    }),
    PETS_TABLE_NAME: "petstore-bench",
    PETSTORE_STAGE: BENCH_STAGE,
    LOG_LEVEL: "INFO",
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${FUNCTION_NAME}`,
    AWS_LAMBDA_LOG_STREAM_NAME: "2026/03/17/[42]0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    AWS_LAMBDA_LOG_FORMAT: "JSON",
    AWS_LAMBDA_LOG_LEVEL: "INFO",
    AWS_LAMBDA_RUNTIME_API: "127.0.0.1:9001",
    AWS_XRAY_CONTEXT_MISSING: "LOG_ERROR",
    AWS_XRAY_DAEMON_ADDRESS: "169.254.79.129:2000",
    _AWS_XRAY_DAEMON_ADDRESS: "169.254.79.129",
    _AWS_XRAY_DAEMON_PORT: "2000",
    LAMBDA_RUNTIME_DIR: "/var/runtime",
    _HANDLER: "index.handler",
    [MEASURING_CHILD_ENV]: "1",
  };
}

function runMeasurement(node: string, iterations: number, warmup: number, rounds: number): Promise<OverheadResult> {
  const failure = `middleware bench on ${node} failed`;
  return new Promise((resolve, reject) => {
    const devNull = openSync("/dev/null", "w");
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(
        node,
        // --expose-gc: each allocation phase starts from a full collection.
        ["--expose-gc", "--import", "tsx", childScript, String(iterations), String(warmup), String(rounds)],
        { cwd: projectRoot, env: lambdaEnvironment(node), stdio: ["ignore", devNull, "pipe", "pipe"] },
      );
    } finally {
      // The child has its own descriptor on it.
      closeSync(devNull);
    }
    let result = "";
    (child.stdio[RESULT_FD] as Readable).on("data", (chunk: Buffer) => {
      result += chunk.toString();
    });
    let stderr = "";
    (child.stderr as Readable).on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.once("error", reject);
    child.once("close", (code, signal) => {
      if (code !== 0 || result === "") {
        reject(new Error(`${failure} (exit ${code ?? signal}): ${stderr.trim() || "no result"}`));
        return;
      }
      try {
        resolve(JSON.parse(result) as MeasuredOverhead);
      } catch (error) {
        reject(error);
      }
    });
  });
}

/** The same measurement on another Node binary, under the same loader (tsx) as the bench. */
export function measureMiddlewareOverheadOn(
  node: string,
  iterations: number,
  warmup: number,
  rounds: number,
): Promise<OverheadResult> {
  return runMeasurement(node, iterations, warmup, rounds);
}
