/**
 * `npm run release-check -- --base <git ref>` (docs/deploy.md, "Stateful resources"): synthesizes the base commit and
 * the working tree side by side, compares each stack (./compare.ts) and fails on an unacknowledged finding
 * (release-acknowledgements.json). `--first-release` compares with nothing; `--base-assembly <dir>` with a recorded
 * cdk.out. An unbuildable base is a finding; acknowledged, nothing is compared and the summary says so. Prints a
 * summary line and one per finding, a Markdown report to `--summary <file>` or $GITHUB_STEP_SUMMARY. Exit 0 passed, 1
 * failed, 2 bad input (one line).
 */
import { appendFileSync, existsSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { runAsScript } from "../entryPoint";
import {
  ACKNOWLEDGEMENTS_FILE,
  AcknowledgementsError,
  judge,
  readAcknowledgements,
  UNBUILDABLE_BASE,
} from "./acknowledgements";
import { compareAssemblies, type Finding, type StackTemplate } from "./compare";
import { findingLines, markdownReport, type ReportContext, summaryLine } from "./report";
import {
  type BaseCommit,
  materialize,
  ReleaseCheckInputError,
  readAssembly,
  requireApp,
  resolveBase,
  synthesizeCheckout,
  UnbuildableBaseError,
  workingTreeLabel,
} from "./synthesize";

export const usage =
  "Usage: npm run release-check -- (--base <git ref> | --base-assembly <cdk.out dir> | --first-release) [--summary <file>]";

export interface ReleaseCheckOptions {
  /** The git ref to compare with; undefined with --first-release. */
  readonly base: string | undefined;
  /** A cloud assembly directory to compare with instead of a commit. */
  readonly baseAssembly?: string | undefined;
  /** Where the Markdown report is appended. */
  readonly summary: string | undefined;
}

export function parseReleaseCheckArguments(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ReleaseCheckOptions {
  let values: { base?: string; "base-assembly"?: string; "first-release"?: boolean; summary?: string };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        base: { type: "string" },
        "base-assembly": { type: "string" },
        "first-release": { type: "boolean" },
        summary: { type: "string" },
      },
      allowPositionals: false,
      strict: true,
    }));
  } catch (error) {
    // parseArgs' first sentence only: the rest suggests `--` spellings that mean nothing here.
    const message = (error as Error).message.split(/\.\s/)[0]?.replace(/\.$/, "") ?? "bad arguments";
    throw new ReleaseCheckInputError(`${message.replace(/\s+/g, " ")}. ${usage}`);
  }
  const given = [values.base !== undefined, values["base-assembly"] !== undefined, values["first-release"] === true];
  if (given.filter(Boolean).length !== 1) {
    throw new ReleaseCheckInputError(
      `give one of --base <git ref>, --base-assembly <dir> or --first-release. ${usage}`,
    );
  }
  if (values["base-assembly"] === "") throw new ReleaseCheckInputError(`--base-assembly needs a directory. ${usage}`);
  if (values.summary === "") throw new ReleaseCheckInputError(`--summary needs a file. ${usage}`);
  const summary = values.summary ?? (env.GITHUB_STEP_SUMMARY || undefined);
  return { base: values.base, baseAssembly: values["base-assembly"], summary };
}

export interface ReleaseCheckResult {
  readonly exitCode: 0 | 1;
  /** The summary line, then one line per finding. */
  readonly lines: string[];
  readonly markdown: string;
}

/** The whole check for the app in `appRoot` (the working tree). */
export async function releaseCheck(appRoot: string, options: ReleaseCheckOptions): Promise<ReleaseCheckResult> {
  if (!existsSync(join(appRoot, "infra", "app.ts"))) {
    throw new ReleaseCheckInputError(`${appRoot} has no infra/app.ts: run the check in the project's root.`);
  }
  // Read first: a mistake there should not wait for two syntheses.
  const acknowledgements = readAcknowledgements(join(appRoot, ACKNOWLEDGEMENTS_FILE));
  const base = options.base === undefined ? undefined : resolveBase(appRoot, options.base);
  if (base) requireApp(appRoot, base);
  const recorded = options.baseAssembly === undefined ? undefined : resolve(appRoot, options.baseAssembly);
  const recordedStacks = recorded ? readAssembly(recorded) : undefined;
  const head = workingTreeLabel(appRoot);
  const [baseSide, headStacks] = await Promise.all([
    base ? buildBase(appRoot, base) : Promise.resolve<BaseSide>({ stacks: recordedStacks ?? [] }),
    synthesizeCheckout(appRoot, head),
  ]);
  const comparisons = compareAssemblies(baseSide.stacks, headStacks);
  const verdict = judge(
    [
      ...(baseSide.unbuildable ? [baseSide.unbuildable] : []),
      ...comparisons.flatMap((comparison) => comparison.findings),
    ],
    acknowledgements,
  );
  const baseLabel = baseSide.unbuildable
    ? `NOTHING, because ${base?.label} cannot be built: every resource counts as new and nothing was compared`
    : recorded
      ? `the cloud assembly in ${recorded}`
      : (base?.label ?? "nothing (first release: every resource is new)");
  const context: ReportContext = {
    head,
    base: baseLabel,
    ...(baseSide.note ? { notes: [baseSide.note] } : {}),
  };
  return {
    exitCode: verdict.failing.length > 0 ? 1 : 0,
    lines: [summaryLine(comparisons, verdict, context), ...findingLines(verdict)],
    markdown: markdownReport(comparisons, verdict, context),
  };
}

interface BaseSide {
  readonly stacks: StackTemplate[];
  /** The finding that the base commit cannot be built. */
  readonly unbuildable?: Finding;
  readonly note?: string;
}

/**
 * The base commit's stacks (./synthesize.ts); or, when it cannot be built, none and the `unbuildable-base` finding,
 * which only an acknowledgement of that commit lets through, to compare with nothing.
 */
async function buildBase(appRoot: string, base: BaseCommit): Promise<BaseSide> {
  try {
    const materialized = await materialize(appRoot, base);
    try {
      const stacks = await synthesizeCheckout(materialized.app, base.label, UnbuildableBaseError);
      const note =
        materialized.dependencies === "installed"
          ? `package-lock.json differs from the base's: the base was built with its own locked dependencies (npm ci), so what a dependency upgrade changes in the templates is compared too.`
          : undefined;
      return { stacks, ...(note ? { note } : {}) };
    } finally {
      rmSync(materialized.root, { recursive: true, force: true });
    }
  } catch (error) {
    if (!(error instanceof UnbuildableBaseError)) throw error;
    const entry = JSON.stringify({ change: UNBUILDABLE_BASE, base: base.commit, reason: "<why>" });
    return {
      stacks: [],
      unbuildable: {
        stack: "",
        logicalId: base.commit,
        resourceType: "",
        change: UNBUILDABLE_BASE,
        detail: `${error.message}; to release anyway, comparing with nothing, acknowledge it in ${ACKNOWLEDGEMENTS_FILE}: ${entry} (docs/deploy.md, "A base that cannot be built")`,
      },
    };
  }
}

async function main(argv: readonly string[]): Promise<number> {
  try {
    const options = parseReleaseCheckArguments(argv, process.env);
    const result = await releaseCheck(process.cwd(), options);
    for (const line of result.lines) console.log(line);
    if (options.summary) appendFileSync(options.summary, result.markdown);
    return result.exitCode;
  } catch (error) {
    if (!(error instanceof ReleaseCheckInputError || error instanceof AcknowledgementsError)) throw error;
    console.error(`release-check: ${error.message}`);
    return 2;
  }
}

await runAsScript(import.meta.url, main);
