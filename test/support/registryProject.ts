/**
 * A new npm project outside this repository, set up the way a user sets one up: `npm init -y`, then
 * packages from the npm registry (npm's cache first), nothing borrowed from this repository's
 * node_modules. For recipes whose versions the docs pin: the test installs exactly those.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
}

export interface RegistryProject {
  /** The project's folder (in the system's temporary folder). */
  readonly dir: string;
  /** `npm install` of these specs (`name@version`, a tarball path…), as devDependencies when `dev`. */
  install(specs: readonly string[], options?: { dev?: boolean }): Promise<void>;
  /** Runs a command in the project; rejects with its output when it exits non-zero. */
  run(command: string, args: readonly string[], options?: { env?: NodeJS.ProcessEnv }): Promise<CommandResult>;
  /** Deletes the folder. */
  remove(): void;
}

/** npm's own output stays out of the test's; only failures carry it. */
const QUIET_NPM = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

/**
 * The environment without the settings of this repository's .npmrc, which `npm test` passes on to
 * every process as npm_config_*: a user's project has none of them (engine-strict would refuse a
 * tool whose engines name a newer Node than the one running npm, where npm otherwise only warns).
 */
function userEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name.toLowerCase() !== "npm_config_engine_strict"),
  );
}

export async function newRegistryProject(prefix: string): Promise<RegistryProject> {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  async function run(command: string, args: readonly string[], options: { env?: NodeJS.ProcessEnv } = {}) {
    try {
      const { stdout, stderr } = await execFileAsync(command, [...args], {
        cwd: dir,
        env: options.env ?? userEnvironment(),
        maxBuffer: 64 * 1024 * 1024,
      });
      return { stdout, stderr };
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`${command} ${args.join(" ")} failed in ${dir}:\n${failed.stdout ?? ""}${failed.stderr ?? ""}`, {
        cause: error,
      });
    }
  }
  await run("npm", ["init", "-y", "--loglevel=error"]);
  return {
    dir,
    async install(specs, { dev = false } = {}) {
      await run("npm", ["install", ...(dev ? ["--save-dev"] : []), ...QUIET_NPM, ...specs]);
    },
    run,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
