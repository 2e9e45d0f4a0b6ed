/** Starting the project's own commands as child processes, the way a developer runs them. */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
const tsx = `${projectRoot}node_modules/.bin/tsx`;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port");
  return address.port;
}

export interface RunningProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Sends `signal` to the script and every process it started. */
  killGroup(signal: NodeJS.Signals): void;
  output(): string;
  /** Resolves with the output once `pattern` appears in it. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<number | null>;
}

/** Runs a TypeScript entry point of the project with tsx, in `cwd`. */
export function runScript(
  script: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string> },
): RunningProcess {
  return runCommand(tsx, [`${projectRoot}${script}`, ...args], {
    cwd: options.cwd,
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...options.env },
  });
}

/** Runs any command with exactly `env` (a variable set to undefined is left out), in `cwd`. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string | undefined> },
): RunningProcess {
  // Its own process group, so that killGroup also ends the processes the command starts.
  const child = spawn(command, args, { cwd: options.cwd, detached: true, env: options.env });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    killGroup: (signal) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    },
    output: () => output,
    exited,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const started = Date.now();
        const check = () => {
          const match = pattern.exec(output);
          if (match) return resolve(match);
          if (child.exitCode !== null)
            return reject(new Error(`exited ${child.exitCode} before ${pattern}:\n${output}`));
          if (Date.now() - started > timeoutMs)
            return reject(new Error(`timed out waiting for ${pattern}:\n${output}`));
          setTimeout(check, 50);
        };
        check();
      }),
  };
}

/** Runs a script to completion and returns its exit code and output. */
export async function runToEnd(script: string, args: string[], options: { cwd: string; env?: Record<string, string> }) {
  const run = runScript(script, args, options);
  const code = await run.exited;
  return { code, output: run.output() };
}

/** What the tests start npm start with unless they say otherwise: no pinned key, its own DynamoDB, JSON logs. */
export const CLEAN_LOCAL_SERVER_ENV = {
  PETSTORE_API_KEY: "",
  DYNAMODB_ENDPOINT: "",
  PETSTORE_LOG_FORMAT: "",
  npm_config_in_memory: "",
  npm_config_port: "",
  PETS_TABLE_NAME: "",
};
