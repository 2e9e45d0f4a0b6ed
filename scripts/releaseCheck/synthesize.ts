/**
 * The two assemblies the release check compares, synthesized at once by ./synthDriver.ts: the base commit's, from
 * `git archive` into a temporary directory (the repository is untouched), with its own locked dependencies (linked
 * from the working tree when the lock is the same, else `npm ci`), and the working tree's. No credentials.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CloudAssembly } from "aws-cdk-lib/cx-api";
import { firstLine } from "../entryPoint";
import type { StackTemplate } from "./compare";
import type { CfnTemplate } from "./stateful";
import { SYNTHESIS_FAILURE } from "./synthDriver";

/** Input the check cannot work with (no such ref, not a git checkout, a base without this app): exit 2, one line. */
export class ReleaseCheckInputError extends Error {}

/**
 * A base commit of this app that cannot be built (its locked dependencies do not install, its app does not synthesize):
 * one line, which ./main.ts turns into an acknowledgeable finding.
 */
export class UnbuildableBaseError extends Error {}

const driver = fileURLToPath(new URL("./synthDriver.ts", import.meta.url));

/**
 * Runs a command to its end: its exit code, and its stdout and stderr together (a command that cannot start: no code,
 * and one line saying why).
 */
function runToEnd(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk;
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.once("error", (error) => resolve({ code: null, output: `cannot start ${command}: ${error.message}` }));
    child.once("close", (code) => resolve({ code, output }));
  });
}

/** Runs git in `directory`: its output, or undefined when it fails. */
export function git(directory: string, args: readonly string[]): string | undefined {
  const result = spawnSync("git", ["-C", directory, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return result.status === 0 ? result.stdout : undefined;
}

export interface BaseCommit {
  readonly commit: string;
  readonly label: string;
}

/** The commit a ref names in the app's repository, or one line saying why there is none. */
export function resolveBase(appRoot: string, ref: string): BaseCommit {
  if (ref === "" || ref.startsWith("-") || /[\s\0]/.test(ref)) {
    throw new ReleaseCheckInputError(`--base must be a git ref such as origin/main, not ${JSON.stringify(ref)}.`);
  }
  if (git(appRoot, ["rev-parse", "--is-inside-work-tree"])?.trim() !== "true") {
    throw new ReleaseCheckInputError(`${appRoot} is not a git checkout: the base is read from git.`);
  }
  const commit = git(appRoot, ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])?.trim();
  if (!commit) {
    throw new ReleaseCheckInputError(
      `no commit ${ref} in this repository (a shallow clone or a ref not fetched yet? git fetch it first).`,
    );
  }
  return { commit, label: `${ref} (commit ${commit.slice(0, 12)})` };
}

/** What the working tree is, for the report: its commit, and whether it has changes beyond it. */
export function workingTreeLabel(appRoot: string): string {
  const head = git(appRoot, ["rev-parse", "--short=12", "HEAD"])?.trim();
  if (!head) return "the working tree";
  const changed = (git(appRoot, ["status", "--porcelain", "--untracked-files=no"]) ?? "").trim() !== "";
  return `the working tree (commit ${head}${changed ? " with uncommitted changes" : ""})`;
}

/** The app's directory relative to the repository's top (empty when it is the top). */
const appPrefix = (appRoot: string) => git(appRoot, ["rev-parse", "--show-prefix"])?.trim() ?? "";

/** Refuses a base commit without this app, in one line. */
export function requireApp(appRoot: string, base: BaseCommit): void {
  const prefix = appPrefix(appRoot);
  if (git(appRoot, ["cat-file", "-e", `${base.commit}:${prefix}infra/app.ts`]) === undefined) {
    throw new ReleaseCheckInputError(`${base.label} has no ${prefix}infra/app.ts: it is not a commit of this app.`);
  }
}

/** Whether the base's package-lock.json is the working tree's (both absent counts as the same). */
function sameLock(appRoot: string, base: BaseCommit): boolean {
  const lockFile = join(appRoot, "package-lock.json");
  const atBase = git(appRoot, ["show", `${base.commit}:${appPrefix(appRoot)}package-lock.json`]);
  const here = existsSync(lockFile) ? readFileSync(lockFile, "utf8") : undefined;
  return atBase === here;
}

/** The command that installs a base's own locked dependencies: no lifecycle scripts, npm's cache first. */
export const INSTALL_COMMAND = ["ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"] as const;

/**
 * `npm ci` in `directory`, from its own package-lock.json; npm's first error line when it fails. The npm that runs this
 * check's own `npm run` (npm_execpath) when there is one.
 */
export async function installLockedDependencies(directory: string): Promise<void> {
  const npmCli = process.env.npm_execpath;
  const [command, args] = npmCli?.endsWith(".js")
    ? [process.execPath, [npmCli, ...INSTALL_COMMAND]]
    : ["npm", [...INSTALL_COMMAND]];
  // npm_config_* of an enclosing `npm run` (its prefix, workspace) must not steer this install.
  const environment = Object.fromEntries(
    Object.entries(process.env).filter(
      ([name]) => !/^npm_/i.test(name) || /^npm_config_(cache|registry|userconfig)$/i.test(name),
    ),
  );
  const { code, output } = await runToEnd(command, args, directory, environment);
  if (code !== 0) {
    const lines = output.split("\n").map((line) => line.trim());
    const errors = lines
      .filter((line) => /^npm (error|ERR!)/.test(line))
      .map((line) => line.replace(/^npm (error|ERR!)\s*/, ""))
      .filter((line) => line !== "" && !/^code \w+$/.test(line));
    const reason = errors[0] ?? lines.filter(Boolean).at(-1) ?? `exit code ${code}`;
    throw new UnbuildableBaseError(`npm ${INSTALL_COMMAND.join(" ")} of its package-lock.json failed: ${reason}`);
  }
}

/** The base commit's files and locked dependencies in a temporary directory; the caller removes `root`. */
export async function materialize(
  appRoot: string,
  base: BaseCommit,
): Promise<{ root: string; app: string; dependencies: "linked" | "installed" }> {
  const prefix = appPrefix(appRoot);
  requireApp(appRoot, base);
  const top = git(appRoot, ["rev-parse", "--show-toplevel"])?.trim() ?? appRoot;
  const root = mkdtempSync(join(tmpdir(), "release-check-base-"));
  try {
    await new Promise<void>((resolve, reject) => {
      const archive = spawn("git", ["-C", top, "archive", "--format=tar", base.commit], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      const extract = spawn("tar", ["-x", "-f", "-", "-C", root], { stdio: ["pipe", "ignore", "pipe"] });
      archive.stdout.pipe(extract.stdin);
      let errors = "";
      archive.stderr.on("data", (chunk) => {
        errors += chunk;
      });
      extract.stderr.on("data", (chunk) => {
        errors += chunk;
      });
      let pending = 2;
      const exited = (code: number | null) => {
        if (code !== 0)
          reject(new ReleaseCheckInputError(`cannot extract ${base.label}: ${errors.trim().split("\n")[0]}`));
        else if (--pending === 0) resolve();
      };
      archive.once("error", reject);
      extract.once("error", reject);
      archive.once("close", exited);
      extract.once("close", exited);
    });
    // A node_modules link committed by mistake (.gitignore's `node_modules/` matches directories only) would point
    // anywhere: the base's own dependencies replace it.
    rmSync(join(root, prefix, "node_modules"), { recursive: true, force: true });
    if (sameLock(appRoot, base)) {
      symlinkSync(join(appRoot, "node_modules"), join(root, prefix, "node_modules"), "dir");
      return { root, app: join(root, prefix), dependencies: "linked" };
    }
    try {
      await installLockedDependencies(join(root, prefix));
    } catch (error) {
      if (error instanceof UnbuildableBaseError) {
        throw new UnbuildableBaseError(`cannot build ${base.label}: ${error.message}`);
      }
      throw error;
    }
    return { root, app: join(root, prefix), dependencies: "installed" };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The stacks of a cloud assembly directory, nested stage assemblies included. */
export function readAssembly(outdir: string): StackTemplate[] {
  let assembly: CloudAssembly;
  try {
    assembly = new CloudAssembly(outdir);
  } catch (error) {
    const reason = firstLine(error);
    throw new ReleaseCheckInputError(`${outdir} is not a cloud assembly (cdk.out): ${reason}`);
  }
  return assembly.stacksRecursively.map((artifact) => ({
    stackName: artifact.stackName,
    environment: artifact.environment.name,
    template: artifact.template as CfnTemplate,
    constructPaths: Object.fromEntries(
      artifact.findMetadataByType("aws:cdk:logicalId").map((entry) => [String(entry.data), entry.path]),
    ),
  }));
}

/**
 * Synthesizes the app in `appDirectory` (./synthDriver.ts) and reads its stacks. A failure is one line: a
 * ReleaseCheckInputError, or `failure`'s class when given (the base's: UnbuildableBaseError).
 */
export async function synthesizeCheckout(
  appDirectory: string,
  label: string,
  failure: new (message: string) => Error = ReleaseCheckInputError,
): Promise<StackTemplate[]> {
  const outdir = mkdtempSync(join(tmpdir(), "release-check-assembly-"));
  try {
    // The app reads context and an output directory from these when the CDK CLI runs it; this run gives its own.
    const { CDK_CONTEXT_JSON: _context, CDK_OUTDIR: _outdir, ...environment } = process.env;
    const { code, output } = await runToEnd(
      process.execPath,
      ["--import", "tsx", driver, appDirectory, outdir],
      appDirectory,
      environment,
    );
    if (code !== 0) {
      const lines = output.split("\n").map((line) => line.trim());
      const reason =
        lines.find((line) => line.startsWith(SYNTHESIS_FAILURE))?.slice(SYNTHESIS_FAILURE.length) ??
        lines.filter(Boolean).at(-1) ??
        `exit code ${code}`;
      throw new failure(`cannot synthesize ${label}: ${reason}`);
    }
    return readAssembly(outdir);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
