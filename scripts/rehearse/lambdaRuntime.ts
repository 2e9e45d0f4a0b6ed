/**
 * Runs a function's uploaded artifact as Lambda would: copied out of the assembly, on the template's Node major
 * (runtime/bootstrap.mjs), with only the template's environment, Lambda's own variables and endpoints pointing at the
 * local stand-ins. Lambda's limits hold
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html#runtimes-lifecycle-ib): one environment
 * per invocation, `Sandbox.Timedout` past the timeout (environment discarded), init limited to 10 s then retried under
 * the timeout, the heap bounded by the function's memory (`Runtime.OutOfMemory`), so a hung handler never hangs the
 * rehearsal.
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureNode, NODE_VERSIONS } from "../nodeVersions";

const BOOTSTRAP = fileURLToPath(new URL("./runtime/bootstrap.mjs", import.meta.url));

export interface FunctionError {
  readonly errorType: string;
  readonly errorMessage: string;
}

/** Lambda's names for the instruction sets it runs functions on (the template's `Architectures`). */
export type Architecture = "x86_64" | "arm64";

export interface LambdaFunctionSpec {
  /** The caller's name in the report: `Production/PetStore ListPetsFunction…`. */
  readonly label: string;
  readonly functionName: string;
  readonly functionArn: string;
  readonly runtime: string;
  readonly handler: string;
  readonly assetDir: string;
  readonly memoryMb: number;
  readonly timeoutSeconds: number;
  /** What native code in the artifact must be built for; JavaScript runs on either. */
  readonly architecture: Architecture;
  readonly logGroupName: string;
  readonly region: string;
  /** The template's variables, resolved. */
  readonly environment: Readonly<Record<string, string>>;
  /** The fake access key id the function signs with: the stand-ins name the caller by it. */
  readonly accessKeyId: string;
}

/** The Node majors the rehearsal can run, by Lambda runtime id. */
const nodeFor: Record<string, () => Promise<string>> = { "nodejs24.x": () => ensureNode(NODE_VERSIONS.lambda) };

/**
 * Init is limited to 10 s, then retried within the first invocation under the function's timeout (on-demand functions):
 * https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html#runtimes-lifecycle-ib
 */
export const INIT_LIMIT_SECONDS = 10;

/**
 * Lambda's answer past the timeout: `RequestId: … Error: Task timed out after 3.00 seconds`, errorType
 * `Sandbox.Timedout`, as https://github.com/aws/aws-lambda-runtime-interface-emulator (ErrInvokeTimeout) writes it.
 */
export function timedOutError(requestId: string, timeoutSeconds: number): FunctionError {
  return {
    errorType: "Sandbox.Timedout",
    errorMessage: `RequestId: ${requestId} Error: Task timed out after ${timeoutSeconds.toFixed(2)} seconds`,
  };
}

/**
 * The heap limit Lambda's Node.js bootstrap sets: `--max-old-space-size` at 90% of the memory, unless NODE_OPTIONS sets
 * the old or semi space size in either spelling (the nodejs24.x bootstrap, extracted in
 * https://dev.to/wonderfulsoap/deep-dive-into-aws-lambda-3-official-nodejs-runtime-analysis-43je). Semi space: V8's default.
 */
function heapLimitArgs(memoryMb: number, nodeOptions = ""): string[] {
  if (/--max[-_](old|semi)[-_]space[-_]size/.test(nodeOptions)) return [];
  return [`--max-old-space-size=${memoryMb - Math.floor(memoryMb / 10)}`];
}

/** What V8 prints before it aborts the process at its heap limit (`FATAL ERROR: Reached heap limit…`). */
const HEAP_EXHAUSTED = /FATAL ERROR: .*JavaScript heap out of memory/;

/**
 * Lambda's answer when the process ran out of memory: `Runtime.OutOfMemory`, `Runtime exited with error: signal: killed`
 * (https://github.com/adobe/helix-html2md-service/issues/1001). Here V8 aborts first at the heap limit: `signal: aborted`.
 */
export function outOfMemoryError(requestId?: string): FunctionError {
  const request = requestId === undefined ? "" : `RequestId: ${requestId} `;
  return {
    errorType: "Runtime.OutOfMemory",
    errorMessage: `${request}Error: Runtime exited with error: signal: aborted`,
  };
}

export class RuntimeUnavailableError extends Error {
  override readonly name = "RuntimeUnavailableError";
}

/** Shorter limits, for tests only: the rehearsal runs with Lambda's. */
export interface RuntimeLimits {
  readonly initSeconds?: number;
}

const TIMED_OUT = Symbol("timed out");

/** `promise`, or TIMED_OUT once `deadline` (epoch ms) has passed. */
async function before<T>(promise: Promise<T>, deadline: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const expiry = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, expiry]);
  } finally {
    clearTimeout(timer);
  }
}

/** One execution environment: a runtime process, and what it was asked and has not answered yet. */
interface Environment {
  readonly child: ChildProcess;
  /** Resolves with the init error, or undefined once the handler has loaded. No limit of its own. */
  ready: Promise<FunctionError | undefined>;
  /** Invocations sent and not answered, by message id. */
  readonly pending: Map<number, { readonly requestId: string; readonly answer: (outcome: InvokeOutcome) => void }>;
  exited: boolean;
  /** The end of its stderr, where V8 says it ran out of heap. */
  stderrTail: string;
  /** Its Init phase passed the limit: the next invocation it serves runs init again first. */
  initTimedOut: boolean;
}

export class RunningFunction {
  private nextId = 1;
  private output = "";
  private invocationCount = 0;
  private timeoutCount = 0;
  /** Environments free for the next invocation; busy ones are out of this list until they answer. */
  private readonly idle: Environment[] = [];
  private readonly environments = new Set<Environment>();
  private stopped = false;
  /** The first environment's init (at start, as a deploy's first cold start): its error, or undefined. */
  readonly initialized: Promise<FunctionError | undefined>;

  private constructor(
    readonly spec: LambdaFunctionSpec,
    private readonly binary: string,
    private readonly runtimeDir: string,
    private readonly taskRoot: string,
    private readonly env: Readonly<Record<string, string>>,
    private readonly workDir: string,
    private readonly initLimitMs: number,
  ) {
    this.initialized = this.coldStart().then(({ environment, initError }) => {
      if (!this.stopped) this.idle.push(environment);
      return initError;
    });
  }

  /** Invocations asked of the function (each counts once, whatever its outcome). */
  get invocations(): number {
    return this.invocationCount;
  }

  /** Invocations answered Sandbox.Timedout. */
  get timeouts(): number {
    return this.timeoutCount;
  }

  static async start(
    spec: LambdaFunctionSpec,
    overrides: Readonly<Record<string, string>>,
    limits: RuntimeLimits = {},
  ): Promise<RunningFunction> {
    const node = nodeFor[spec.runtime];
    if (!node) {
      throw new RuntimeUnavailableError(
        `${spec.label}: runtime ${spec.runtime} cannot be rehearsed (only ${Object.keys(nodeFor).join(", ")}, on Node ${NODE_VERSIONS.lambda})`,
      );
    }
    const binary = await node();
    // Like /var/task and /var/runtime: a copy of the artifact, and the runtime beside it.
    const workDir = mkdtempSync(join(tmpdir(), "rehearsal-lambda-"));
    const taskRoot = join(workDir, "task");
    const runtimeDir = join(workDir, "runtime");
    cpSync(spec.assetDir, taskRoot, { recursive: true });
    cpSync(BOOTSTRAP, join(runtimeDir, "bootstrap.mjs"));
    const env: Record<string, string> = {
      ...spec.environment,
      // What Lambda sets for every function:
      // https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime
      _HANDLER: spec.handler,
      AWS_REGION: spec.region,
      AWS_DEFAULT_REGION: spec.region,
      AWS_EXECUTION_ENV: `AWS_Lambda_${spec.runtime}`,
      AWS_LAMBDA_FUNCTION_NAME: spec.functionName,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_LOG_GROUP_NAME: spec.logGroupName,
      AWS_LAMBDA_LOG_STREAM_NAME: "2026/01/01/[$LATEST]rehearsal",
      AWS_LAMBDA_FUNCTION_TIMEOUT: String(spec.timeoutSeconds),
      LAMBDA_TASK_ROOT: taskRoot,
      LAMBDA_RUNTIME_DIR: runtimeDir,
      TZ: ":UTC",
      LANG: "en_US.UTF-8",
      PATH: dirname(binary),
      AWS_ACCESS_KEY_ID: spec.accessKeyId,
      AWS_SECRET_ACCESS_KEY: "rehearsal-secret",
      AWS_SESSION_TOKEN: "rehearsal-session",
      ...overrides,
    };
    return new RunningFunction(
      spec,
      binary,
      runtimeDir,
      taskRoot,
      env,
      workDir,
      (limits.initSeconds ?? INIT_LIMIT_SECONDS) * 1000,
    );
  }

  /** A new runtime process, loading the handler. */
  private launch(): Environment {
    // Lambda runs the function on processors of its architecture, this stand-in on this machine's: the bootstrap is
    // told the function's, to refuse native code built for another.
    const child = fork(join(this.runtimeDir, "bootstrap.mjs"), [this.spec.architecture], {
      cwd: this.taskRoot,
      env: this.env,
      execPath: this.binary,
      execArgv: heapLimitArgs(this.spec.memoryMb, this.env.NODE_OPTIONS),
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const environment: Environment = {
      child,
      ready: Promise.resolve(undefined),
      pending: new Map(),
      exited: false,
      stderrTail: "",
      initTimedOut: false,
    };
    // Judged on "close", not "exit": V8's last words on stderr may still be unread when the process exits.
    const outOfMemory = (signal: NodeJS.Signals | null) =>
      signal === "SIGABRT" && HEAP_EXHAUSTED.test(environment.stderrTail);
    environment.ready = new Promise((resolve) => {
      child.on("message", (message: { type: string; error?: FunctionError }) => {
        if (message.type === "ready") resolve(undefined);
        if (message.type === "initError") resolve(message.error);
      });
      child.on("close", (code, signal) =>
        resolve(
          outOfMemory(signal)
            ? outOfMemoryError()
            : { errorType: "Runtime.ExitError", errorMessage: `exited with ${code ?? signal} during init` },
        ),
      );
      // The process could not be started at all: Lambda's Runtime.InvalidEntrypoint.
      child.on("error", (error) => {
        environment.exited = true;
        resolve({ errorType: "Runtime.InvalidEntrypoint", errorMessage: String(error) });
      });
    });
    child.on("message", (message: { type: string; id?: number; result?: unknown; error?: FunctionError }) => {
      if (message.type !== "result" || message.id === undefined) return;
      environment.pending
        .get(message.id)
        ?.answer(message.error ? { error: message.error } : { result: message.result });
      environment.pending.delete(message.id);
    });
    child.on("exit", () => {
      environment.exited = true;
    });
    child.on("close", (_code, signal) => {
      for (const { requestId, answer } of environment.pending.values()) {
        answer({
          error: outOfMemory(signal)
            ? outOfMemoryError(requestId)
            : { errorType: "Runtime.ExitError", errorMessage: this.logTail() },
        });
      }
      environment.pending.clear();
    });
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", (chunk: Buffer) => {
      keep(chunk);
      environment.stderrTail = (environment.stderrTail + chunk.toString()).slice(-2_000);
    });
    this.environments.add(environment);
    return environment;
  }

  /** Lambda's cold start: a new environment whose Init phase has INIT_LIMIT_SECONDS. */
  private async coldStart(): Promise<{ environment: Environment; initError: FunctionError | undefined }> {
    const environment = this.launch();
    const initError = await before(environment.ready, Date.now() + this.initLimitMs);
    if (initError !== TIMED_OUT) return { environment, initError };
    // Lambda logs `INIT_REPORT Init Duration: 10000.00 ms Phase: init Status: timeout` and keeps the environment for
    // the first invocation, which runs init again.
    this.kill(environment);
    environment.initTimedOut = true;
    return {
      environment,
      initError: {
        errorType: "Sandbox.Timedout",
        errorMessage: `INIT_REPORT Init Duration: ${this.initLimitMs.toFixed(2)} ms Phase: init Status: timeout (the handler did not load within Lambda's ${this.initLimitMs / 1000}-second Init phase; Lambda retries init within the first invocation, under the function's timeout)`,
      },
    };
  }

  private kill(environment: Environment): void {
    environment.child.kill("SIGKILL");
    this.environments.delete(environment);
  }

  logTail(): string {
    return this.output.split("\n").slice(-10).join("\n");
  }

  async invoke(event: unknown, invokedFunctionArn = this.spec.functionArn): Promise<InvokeOutcome> {
    this.invocationCount += 1;
    const requestId = randomUUID();
    // The first environment, started with the function, serves the first invocation.
    await this.initialized;
    // One invocation at a time per environment, as Lambda: a free one, else a cold start.
    let environment = this.takeIdle();
    if (!environment) {
      const started = await this.coldStart();
      environment = started.environment;
    }
    const initError = environment.initTimedOut ? undefined : await environment.ready;
    if (initError) return this.release(environment, { error: initError });
    const deadline = Date.now() + this.spec.timeoutSeconds * 1000;
    if (environment.initTimedOut) {
      // Lambda's retry of a timed-out init, within this invocation and under the function's timeout, which the handler
      // then shares. Here: a new process in the old one's place.
      environment = this.launch();
      const retriedError = await before(environment.ready, deadline);
      if (retriedError === TIMED_OUT) return this.timedOut(environment, requestId);
      if (retriedError) return this.release(environment, { error: retriedError });
    }
    const id = this.nextId++;
    const serving = environment;
    const answered = new Promise<InvokeOutcome>((resolve) => {
      serving.pending.set(id, { requestId, answer: resolve });
      serving.child.send(
        { type: "invoke", id, event, invokedFunctionArn, requestId, deadlineMs: deadline },
        (error) => {
          if (error)
            resolve({ error: { errorType: "Runtime.ExitError", errorMessage: this.logTail() || String(error) } });
        },
      );
    });
    const outcome = await before(answered, deadline);
    serving.pending.delete(id);
    if (outcome === TIMED_OUT) return this.timedOut(serving, requestId);
    return this.release(serving, outcome);
  }

  /** A free environment that can still serve: alive, or waiting to run its timed-out init again. */
  private takeIdle(): Environment | undefined {
    for (let environment = this.idle.pop(); environment; environment = this.idle.pop()) {
      if (environment.initTimedOut || !environment.exited) return environment;
      this.environments.delete(environment);
    }
    return undefined;
  }

  /**
   * The environment goes back to the pool unless it died (Lambda resets a crashed environment, one out of memory
   * included: the next invocation cold-starts).
   */
  private release(environment: Environment, outcome: InvokeOutcome): InvokeOutcome {
    if (this.stopped) return outcome;
    if (environment.exited) this.environments.delete(environment);
    else this.idle.push(environment);
    return outcome;
  }

  /** Lambda's answer past the timeout: the environment is thrown away, the next invocation cold-starts. */
  private timedOut(environment: Environment, requestId: string): InvokeOutcome {
    this.timeoutCount += 1;
    environment.pending.clear();
    this.kill(environment);
    return { error: timedOutError(requestId, this.spec.timeoutSeconds) };
  }

  stop(): void {
    this.stopped = true;
    for (const environment of this.environments) environment.child.kill("SIGKILL");
    this.environments.clear();
    this.idle.length = 0;
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

export type InvokeOutcome =
  | { readonly result: unknown; readonly error?: undefined }
  | { readonly error: FunctionError };
