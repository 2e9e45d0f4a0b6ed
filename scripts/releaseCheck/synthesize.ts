/**
 * The two cloud assemblies the release check compares: the base commit's, materialized from git into
 * a temporary directory (`git archive`, which changes nothing in the repository: no worktree, no
 * checkout), and the working tree's, both synthesized at once by ./synthDriver.ts in processes of
 * their own. The base reuses the working tree's installed dependencies through a node_modules link,
 * as a clean clone after `npm ci` would have them; no network, no credentials.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CloudAssembly } from "aws-cdk-lib/cx-api";
import type { StackTemplate } from "./compare";
import type { CfnTemplate } from "./stateful";
import { SYNTHESIS_FAILURE } from "./synthDriver";

/** Input the check cannot work with (no such ref, not a git checkout, a base without this app): exit 2, one line. */
export class ReleaseCheckInputError extends Error {}

const driver = fileURLToPath(new URL("./synthDriver.ts", import.meta.url));

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

/** A note when the base's locked dependencies differ from the working tree's, which both are synthesized with. */
export function dependencyNote(appRoot: string, base: BaseCommit): string | undefined {
  const lockFile = join(appRoot, "package-lock.json");
  const atBase = git(appRoot, ["show", `${base.commit}:${appPrefix(appRoot)}package-lock.json`]);
  if (atBase === undefined || !existsSync(lockFile) || atBase === readFileSync(lockFile, "utf8")) return undefined;
  return (
    "package-lock.json differs from the base's: both were synthesized with the working tree's installed " +
    "dependencies, so what a dependency upgrade itself changes in the templates shows only in cdk diff " +
    "against the deployed stacks."
  );
}

/**
 * The base commit's files in a temporary directory, with the working tree's node_modules linked in;
 * returns the app's directory there. The caller removes `root` when done.
 */
export async function materialize(appRoot: string, base: BaseCommit): Promise<{ root: string; app: string }> {
  const prefix = appPrefix(appRoot);
  if (git(appRoot, ["cat-file", "-e", `${base.commit}:${prefix}infra/app.ts`]) === undefined) {
    throw new ReleaseCheckInputError(`${base.label} has no ${prefix}infra/app.ts: it is not a commit of this app.`);
  }
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
    // A node_modules link committed by mistake (.gitignore's `node_modules/` matches directories
    // only) would point anywhere: the working tree's dependencies replace it.
    rmSync(join(root, prefix, "node_modules"), { recursive: true, force: true });
    symlinkSync(join(appRoot, "node_modules"), join(root, prefix, "node_modules"), "dir");
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return { root, app: join(root, prefix) };
}

/** The stacks of a cloud assembly directory, nested stage assemblies included. */
export function readAssembly(outdir: string): StackTemplate[] {
  return new CloudAssembly(outdir).stacksRecursively.map((artifact) => ({
    stackName: artifact.stackName,
    environment: artifact.environment.name,
    template: artifact.template as CfnTemplate,
    constructPaths: Object.fromEntries(
      artifact.findMetadataByType("aws:cdk:logicalId").map((entry) => [String(entry.data), entry.path]),
    ),
  }));
}

/** Synthesizes the app in `appDirectory` (./synthDriver.ts) and reads its stacks. */
export async function synthesizeCheckout(appDirectory: string, label: string): Promise<StackTemplate[]> {
  const outdir = mkdtempSync(join(tmpdir(), "release-check-assembly-"));
  try {
    // The app reads context and an output directory from these when the CDK CLI runs it; this run
    // gives its own.
    const { CDK_CONTEXT_JSON: _context, CDK_OUTDIR: _outdir, ...environment } = process.env;
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", driver, appDirectory, outdir], {
        cwd: appDirectory,
        env: environment,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let text = "";
      child.stdout.on("data", (chunk) => {
        text += chunk;
      });
      child.stderr.on("data", (chunk) => {
        text += chunk;
      });
      child.once("error", reject);
      child.once("close", (exitCode) => resolve({ code: exitCode, output: text }));
    });
    if (code !== 0) {
      const lines = output.split("\n").map((line) => line.trim());
      const reason =
        lines.find((line) => line.startsWith(SYNTHESIS_FAILURE))?.slice(SYNTHESIS_FAILURE.length) ??
        lines.filter(Boolean).at(-1) ??
        `exit code ${code}`;
      throw new ReleaseCheckInputError(`cannot synthesize ${label}: ${reason}`);
    }
    return readAssembly(outdir);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}
