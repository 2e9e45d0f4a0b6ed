/**
 * Runs a function's uploaded artifact as Lambda would: its asset directory copied out of the cloud
 * assembly into a folder outside the repository, started on the Node major of the template's
 * `Runtime` (runtime/bootstrap.mjs resolves the `Handler` as the runtime does), with exactly the
 * environment variables the template sets (resolved), those Lambda itself sets, and endpoint
 * overrides that send every AWS call to the local stand-ins. Nothing else from this machine's
 * environment or the repository is reachable.
 */
import { type ChildProcess, fork } from "node:child_process";
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
  readonly logGroupName: string;
  readonly region: string;
  /** The template's variables, resolved. */
  readonly environment: Readonly<Record<string, string>>;
  /** The fake access key id the function signs with: the stand-ins name the caller by it. */
  readonly accessKeyId: string;
}

/** The Node majors the rehearsal can run, by Lambda runtime id. */
const nodeFor: Record<string, () => Promise<string>> = { "nodejs24.x": () => ensureNode(NODE_VERSIONS.lambda) };

export class RuntimeUnavailableError extends Error {
  override readonly name = "RuntimeUnavailableError";
}

export class RunningFunction {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: InvokeOutcome) => void }>();
  private output = "";
  private constructor(
    readonly spec: LambdaFunctionSpec,
    private readonly child: ChildProcess,
    private readonly workDir: string,
    /** Resolves with the init error, or undefined once the handler has loaded. */
    readonly initialized: Promise<FunctionError | undefined>,
  ) {
    child.on("message", (message: { type: string; id?: number; result?: unknown; error?: FunctionError }) => {
      if (message.type !== "result" || message.id === undefined) return;
      this.pending.get(message.id)?.resolve(message.error ? { error: message.error } : { result: message.result });
      this.pending.delete(message.id);
    });
    child.on("exit", () => {
      for (const waiting of this.pending.values()) {
        waiting.resolve({ error: { errorType: "Runtime.ExitError", errorMessage: this.logTail() } });
      }
      this.pending.clear();
    });
    child.stdout?.on("data", (chunk) => {
      this.output = (this.output + chunk).slice(-20_000);
    });
    child.stderr?.on("data", (chunk) => {
      this.output = (this.output + chunk).slice(-20_000);
    });
  }

  static async start(spec: LambdaFunctionSpec, overrides: Readonly<Record<string, string>>): Promise<RunningFunction> {
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
      // What Lambda sets for every function: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime
      _HANDLER: spec.handler,
      AWS_REGION: spec.region,
      AWS_DEFAULT_REGION: spec.region,
      AWS_EXECUTION_ENV: `AWS_Lambda_${spec.runtime}`,
      AWS_LAMBDA_FUNCTION_NAME: spec.functionName,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_LOG_GROUP_NAME: spec.logGroupName,
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
    const child = fork(join(runtimeDir, "bootstrap.mjs"), [], {
      cwd: taskRoot,
      env,
      execPath: binary,
      execArgv: [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const initialized = new Promise<FunctionError | undefined>((resolve) => {
      child.on("message", (message: { type: string; error?: FunctionError }) => {
        if (message.type === "ready") resolve(undefined);
        if (message.type === "initError") resolve(message.error);
      });
      child.on("exit", (code) =>
        resolve({ errorType: "Runtime.ExitError", errorMessage: `exited with ${code} during init` }),
      );
    });
    return new RunningFunction(spec, child, workDir, initialized);
  }

  logTail(): string {
    return this.output.split("\n").slice(-10).join("\n");
  }

  async invoke(event: unknown, invokedFunctionArn = this.spec.functionArn): Promise<InvokeOutcome> {
    const initError = await this.initialized;
    if (initError) return { error: initError };
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve });
      this.child.send({ type: "invoke", id, event, invokedFunctionArn });
    });
  }

  stop(): void {
    this.child.kill("SIGKILL");
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

export type InvokeOutcome =
  | { readonly result: unknown; readonly error?: undefined }
  | { readonly error: FunctionError };
