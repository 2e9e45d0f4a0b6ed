/**
 * The deployment settings a run must match: those of the branch the pipeline deploys. Committed
 * means committed there, not "on this disk": a laptop deploy is compared with `cdk.json` at a git ref
 * (`origin/main` unless `-c settingsRef=<ref>` names another), so that a stale or unmerged checkout
 * cannot deploy settings the pipeline's next run would undo. The pipeline itself (`-c pipeline=true`)
 * deploys the commit it checked out, whose `cdk.json` is the baseline.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { comparable, SettingsError } from "./settings";

export const projectRoot = fileURLToPath(new URL("../", import.meta.url));

/** Context keys that choose the baseline (infra/app.ts). */
export const BASELINE_CONTEXT = {
  /** The git ref whose cdk.json a laptop deploy must match. */
  settingsRef: "settingsRef",
  /** Set by the pipeline's synthesis: the checked-out commit is what it deploys. */
  pipeline: "pipeline",
} as const;

export const DEFAULT_SETTINGS_REF = "origin/main";

export interface SettingsBaseline {
  /** What the settings are compared with, for messages: `cdk.json on origin/main (commit 1a2b3c4d5e6f)`. */
  readonly label: string;
  /** That cdk.json's "context". */
  readonly context: Readonly<Record<string, unknown>>;
  /** This checkout's cdk.json "context", when it is not the baseline itself. */
  readonly workingTree?: Readonly<Record<string, unknown>>;
  /**
   * Why this checkout's cdk.json has another value for a key than the baseline: an uncommitted
   * change, a commit not merged, or a checkout behind the ref.
   */
  readonly describeLocalChange?: (key: string) => string;
}

type ContextObject = Record<string, unknown>;

function contextOf(json: string, where: string): ContextObject {
  try {
    const parsed = JSON.parse(json) as { context?: unknown };
    const context = parsed.context ?? {};
    if (typeof context !== "object" || context === null || Array.isArray(context)) throw new Error("not an object");
    return context as ContextObject;
  } catch {
    throw new SettingsError(`${where} is not valid JSON with a "context" object.`);
  }
}

/** cdk.json's "context" in a checkout (the project's own by default). */
export function checkoutContext(root: string = projectRoot): ContextObject {
  return contextOf(readFileSync(join(root, "cdk.json"), "utf8"), "cdk.json");
}

/** The pipeline's baseline: the commit it checked out, and so deploys. */
export function checkoutBaseline(root: string = projectRoot): SettingsBaseline {
  return { label: "cdk.json of the commit being deployed", context: checkoutContext(root) };
}

/** Runs git in `root`; undefined when git fails (no repository, no such ref, no git). */
export type Git = (args: readonly string[]) => string | undefined;

export const runGit =
  (root: string): Git =>
  (args) => {
    try {
      return execFileSync("git", ["-C", root, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    } catch {
      return undefined;
    }
  };

/**
 * A laptop's baseline: cdk.json at `ref` in this checkout's git repository. It is read from the
 * local copy of the ref: `git fetch` first to compare with what the remote holds now. When it cannot
 * be read the run stops with one line saying why and what to do.
 */
export function gitBaseline(ref: string, root: string = projectRoot, git: Git = runGit(root)): SettingsBaseline {
  const stop = (why: string) =>
    new SettingsError(
      `Cannot read cdk.json at ${ref} (${why}): a deploy's settings are compared with the branch the pipeline deploys. ` +
        `Run git fetch, name the ref with -c ${BASELINE_CONTEXT.settingsRef}=<ref>, or pass -c allowSettingsDrift=true for a deliberate one-off.`,
    );
  if (git(["rev-parse", "--is-inside-work-tree"])?.trim() !== "true") throw stop("this is not a git checkout");
  const commit = git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])?.trim();
  if (!commit) throw stop("no such ref here");
  const atRef = git(["show", `${commit}:cdk.json`]);
  if (atRef === undefined) throw stop("the file does not exist there");
  const context = contextOf(atRef, `cdk.json at ${ref}`);
  const workingTree = checkoutContext(root);
  const headText = git(["show", "HEAD:cdk.json"]);
  const head = headText === undefined ? undefined : contextOf(headText, "cdk.json at HEAD");
  const behind = git(["merge-base", "--is-ancestor", "HEAD", commit]) !== undefined;
  return {
    label: `cdk.json on ${ref} (commit ${commit.slice(0, 12)})`,
    context,
    workingTree,
    describeLocalChange: (key) => {
      if (head === undefined || comparable(workingTree[key]) !== comparable(head[key])) {
        return "uncommitted change to cdk.json";
      }
      return behind ? `this checkout is behind ${ref}: pull it` : `committed on this branch, not merged into ${ref}`;
    },
  };
}
