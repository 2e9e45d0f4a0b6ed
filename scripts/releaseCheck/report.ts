/**
 * What the release check prints: one summary line, then one line per finding (and per stale acknowledgement); and, for
 * a run's summary, the same in Markdown with each changed stack's diff as `cdk diff` formats it.
 */
import { Writable } from "node:stream";
import { stripVTControlCharacters } from "node:util";
import { formatDifferences, type TemplateDiff } from "@aws-cdk/cloudformation-diff";
import { ACKNOWLEDGEMENTS_FILE, type Acknowledgement, type Verdict } from "./acknowledgements";
import type { Finding, StackComparison } from "./compare";

export interface ReportContext {
  /** What is released: `the working tree (commit 1a2b3c4d5e6f)`. */
  readonly head: string;
  /** What it is compared with: `origin/main (commit 0f1e2d3c4b5a)`, or `nothing (first release)`. */
  readonly base: string;
  /** Notes that change nothing in the verdict (the dependencies differ from the base's). */
  readonly notes?: readonly string[];
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

export function summaryLine(comparisons: readonly StackComparison[], verdict: Verdict, context: ReportContext): string {
  const compared = `${plural(comparisons.length, "stack")} of ${context.head} against ${context.base}`;
  if (verdict.failing.length > 0) {
    return (
      `release-check: FAILED: ${plural(verdict.failing.length, "change")} would replace, remove, move or weaken stateful resources ` +
      `or widen access (${compared}). Keep the logical ids and settings (docs/deploy.md, "Stateful resources"), or acknowledge ` +
      `each in ${ACKNOWLEDGEMENTS_FILE} with a reason.`
    );
  }
  const added = comparisons.filter((comparison) => comparison.status === "added").length;
  const moved = comparisons.filter((comparison) => comparison.status === "moved").length;
  const counts = [
    added > 0 ? `${plural(added, "new stack")}, nothing to compare with` : "",
    moved > 0 ? `${plural(moved, "stack")} moved to another account or region` : "",
    verdict.acknowledged.length > 0 ? `${verdict.acknowledged.length} acknowledged` : "",
    verdict.stale.length > 0 ? plural(verdict.stale.length, "stale acknowledgement") : "",
  ].filter(Boolean);
  const outcome =
    verdict.acknowledged.length > 0
      ? "every finding is acknowledged"
      : "nothing stateful replaced, removed, moved or weakened, no access widened";
  return `release-check: passed: ${compared}; ${outcome}${counts.length > 0 ? ` (${counts.join(", ")})` : ""}.`;
}

const describe = (finding: Finding) =>
  `${finding.stack ? `${finding.stack} ` : ""}${finding.logicalId}${finding.resourceType ? ` (${finding.resourceType})` : ""} ${finding.change}: ${finding.detail}`;

const describeStale = (acknowledgement: Acknowledgement) =>
  `stale acknowledgement: ${acknowledgement.base !== undefined ? `base ${acknowledgement.base}` : `${acknowledgement.stack} ${acknowledgement.logicalId}`} ${acknowledgement.change} matches no change; remove it from ${ACKNOWLEDGEMENTS_FILE}`;

/** The lines after the summary line. */
export function findingLines(verdict: Verdict): string[] {
  return [
    ...verdict.failing.map((finding) => `FAIL ${describe(finding)}`),
    ...verdict.acknowledged.map(
      ({ finding, acknowledgement }) => `acknowledged ${describe(finding)} (reason: ${acknowledgement.reason})`,
    ),
    ...verdict.stale.map(describeStale),
  ];
}

/**
 * Past this a stack's diff is cut short: GitHub drops a step summary over 1,024 KiB
 * (https://docs.github.com/actions/using-workflows/workflow-commands-for-github-actions#adding-a-markdown-summary).
 */
const MAX_DIFF_CHARACTERS = 100_000;

/** A stack's diff as `cdk diff` prints it (IAM and security group tables first), without colours. */
function formattedDiff(diff: TemplateDiff, constructPaths: Readonly<Record<string, string>>): string {
  let text = "";
  const sink = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  formatDifferences(sink, diff, { ...constructPaths });
  return stripVTControlCharacters(text).trimEnd();
}

const shortened = (diff: string) =>
  diff.length <= MAX_DIFF_CHARACTERS
    ? diff
    : `${diff.slice(0, diff.lastIndexOf("\n", MAX_DIFF_CHARACTERS))}\n… (cut short to fit in a job summary)`;

const code = (text: string) => `\`${text.replaceAll("`", "'")}\``;

export function markdownReport(
  comparisons: readonly StackComparison[],
  verdict: Verdict,
  context: ReportContext,
): string {
  const item = (label: string, finding: Finding, reason?: string) =>
    `- **${label}** ${finding.stack ? `${code(finding.stack)} ` : ""}${code(finding.logicalId)}${finding.resourceType ? ` (${finding.resourceType})` : ""}, ${finding.change}: ${finding.detail}${reason ? ` *Reason:* ${reason}` : ""}`;
  const lines = [
    `### Release check: ${context.head} against ${context.base}`,
    "",
    summaryLine(comparisons, verdict, context),
    "",
    ...verdict.failing.map((finding) => item("FAIL", finding)),
    ...verdict.acknowledged.map(({ finding, acknowledgement }) =>
      item("acknowledged", finding, acknowledgement.reason),
    ),
    ...verdict.stale.map((acknowledgement) => `- ${describeStale(acknowledgement)}`),
    ...(context.notes ?? []).map((note) => `- Note: ${note}`),
    "",
  ];
  const unchanged = comparisons.filter((comparison) => comparison.status === "unchanged");
  for (const comparison of comparisons.filter((candidate) => candidate.status !== "unchanged")) {
    const what =
      comparison.status === "changed"
        ? plural(comparison.diff.resources.differenceCount, "resource change")
        : comparison.status === "added"
          ? "new stack"
          : comparison.status === "moved"
            ? `moved from ${comparison.movedFrom}: every resource is new there (the diff is against the deployed stack as if it were there)`
            : "no longer in the app";
    lines.push(
      `<details><summary>${comparison.stackName} (${comparison.environment}): ${what}</summary>`,
      "",
      "```diff",
      shortened(formattedDiff(comparison.diff, comparison.constructPaths)),
      "```",
      "",
      "</details>",
      "",
    );
  }
  if (unchanged.length > 0)
    lines.push(`Unchanged: ${unchanged.map((comparison) => comparison.stackName).join(", ")}.`, "");
  return `${lines.join("\n")}\n`;
}
