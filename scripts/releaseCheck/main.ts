/**
 * `npm run release-check -- --base <git ref>`: the release gate for stateful resources. Synthesizes
 * the app at the base commit (what is deployed, or the branch a pull request merges into) and in the
 * working tree, compares each stack's template, and fails when the release would replace or remove a
 * stateful resource (the table, KMS keys, secrets, log groups, anything retained), weaken how it is
 * kept, or widen IAM permissions or security group rules of a deployed stack, unless
 * release-acknowledgements.json acknowledges that change with a reason (docs/deploy.md, "Stateful
 * resources"). `--first-release` compares with nothing: everything is new.
 *
 * Prints one summary line and one line per finding; appends a Markdown report with each stack's diff
 * to `--summary <file>`, or to $GITHUB_STEP_SUMMARY when set. Exit 0 passed, 1 failed, 2 on input it
 * cannot work with (one line, no stack trace). Offline; two syntheses, run side by side.
 */
import { appendFileSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { ACKNOWLEDGEMENTS_FILE, AcknowledgementsError, judge, readAcknowledgements } from "./acknowledgements";
import { compareAssemblies, type StackTemplate } from "./compare";
import { findingLines, markdownReport, type ReportContext, summaryLine } from "./report";
import {
  dependencyNote,
  materialize,
  ReleaseCheckInputError,
  resolveBase,
  synthesizeCheckout,
  workingTreeLabel,
} from "./synthesize";

export const usage = "Usage: npm run release-check -- (--base <git ref> | --first-release) [--summary <file>]";

export interface ReleaseCheckOptions {
  /** The git ref to compare with; undefined with --first-release. */
  readonly base: string | undefined;
  /** Where the Markdown report is appended. */
  readonly summary: string | undefined;
}

export function parseReleaseCheckArguments(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ReleaseCheckOptions {
  let values: { base?: string; "first-release"?: boolean; summary?: string };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        base: { type: "string" },
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
  if ((values.base === undefined) === (values["first-release"] !== true)) {
    throw new ReleaseCheckInputError(`give either --base <git ref> or --first-release. ${usage}`);
  }
  if (values.summary === "") throw new ReleaseCheckInputError(`--summary needs a file. ${usage}`);
  const summary = values.summary ?? (env.GITHUB_STEP_SUMMARY || undefined);
  return { base: values.base, summary };
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
  const head = workingTreeLabel(appRoot);
  const materialized = base ? await materialize(appRoot, base) : undefined;
  try {
    const [baseStacks, headStacks] = await Promise.all([
      materialized && base ? synthesizeCheckout(materialized.app, base.label) : Promise.resolve<StackTemplate[]>([]),
      synthesizeCheckout(appRoot, head),
    ]);
    const comparisons = compareAssemblies(baseStacks, headStacks);
    const verdict = judge(
      comparisons.flatMap((comparison) => comparison.findings),
      acknowledgements,
    );
    const note = base ? dependencyNote(appRoot, base) : undefined;
    const context: ReportContext = {
      head,
      base: base?.label ?? "nothing (first release: every resource is new)",
      ...(note ? { notes: [note] } : {}),
    };
    return {
      exitCode: verdict.failing.length > 0 ? 1 : 0,
      lines: [summaryLine(comparisons, verdict, context), ...findingLines(verdict)],
      markdown: markdownReport(comparisons, verdict, context),
    };
  } finally {
    if (materialized) rmSync(materialized.root, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  try {
    const options = parseReleaseCheckArguments(process.argv.slice(2), process.env);
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main();
}
