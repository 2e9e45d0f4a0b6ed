/**
 * The rehearsal's report: one table per stage (caller, action, resource, decision), then the failures, one block per
 * root cause, written for the engineer paged for an AccessDenied: the principal, the effect and AWS's own error
 * message, the statement and the condition that decided, the scenario steps that made the call and what their client
 * saw.
 */
import { type Decision, describeStatement, principalOf } from "./iam";
import { covers, EVERYTHING, type ProofResult, rowText } from "./proof";
import type { ExpectedCall, ScenarioCheck } from "./scenario";

export interface StageReport {
  readonly stack: string;
  readonly account: string;
  readonly region: string;
  readonly functions: string[];
  readonly skipped: { logicalId: string; reason: string }[];
  readonly redirected: string[];
  readonly scenario: ScenarioCheck[];
  readonly expectedCalls: ExpectedCall[];
  /** Every AWS call the artifacts made (and Lambda made with their roles), as IAM decided it. */
  readonly calls: Decision[];
  readonly unmodelled: { caller: string; call: string; step?: string }[];
  /** Calls signed for another region than the stage's. */
  readonly wrongRegion: { caller: string; call: string; region: string; step?: string }[];
  /** Functions that failed or were refused a call: their rows' exercise is not judged. */
  readonly notAssessed: string[];
  /** Their roles, as the matrix names them. */
  readonly stoppedPrincipals: string[];
  /** Parts of the assembly the rehearsal did not drive: each is a failure. */
  readonly undriven: string[];
  /** Managed policies or boundaries that could not be read. */
  readonly policyProblems: string[];
  /** API proxy events the independent schema refused. */
  readonly eventProblems: string[];
  /** Errors the functions answered (init errors, timeouts, exceptions), by function and type. */
  readonly functionErrors: { caller: string; errorType: string; errorMessage: string; steps: string[] }[];
}

export interface RehearsalReport {
  readonly stages: StageReport[];
  /** The access matrix proven against the assembly's templates (./proof.ts). */
  readonly proof?: ProofResult;
  /** Allowed calls of the scenario no row covers. */
  readonly callsOutside: Decision[];
  /** Rows nothing exercised without saying why, or that say so and were. */
  readonly staleRows: string[];
  /** Problems of the assembly as a whole: empty, partial, unpinned. */
  readonly assemblyProblems: string[];
  /** One block per root cause. */
  readonly failures: string[];
}

/** The condition keys that decide, short: `LeadingKeys=APIKEY`, `SourceArn=…:alarm:X`. */
const shortKey = (key: string) => key.split(":").slice(key.startsWith("kms:EncryptionContext") ? 2 : 1);
const contextText = (decision: Decision) =>
  Object.entries(decision.request.context)
    .filter(([key]) => !/SecureTransport|CallerAccount/.test(key))
    .map(([key, value]) => `${shortKey(key).join(":")}=${[value].flat().join("|")}`)
    .join(" ");

/** Columns padded to their widest cell (at most 70). */
const table = (rows: string[][]): string => {
  const widths = rows[0]?.map((_, column) => Math.min(70, Math.max(...rows.map((row) => (row[column] ?? "").length))));
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths?.[column] ?? 0)).join("  ");
  return rows.map((row) => line(row).trimEnd()).join("\n");
};

const indent = (text: string) => text.replaceAll("\n", "\n    ");
const firstLine = (text: string) => {
  const [line = ""] = text.split("\n");
  return line.length > 240 ? `${line.slice(0, 240)}…` : line;
};

/** Groups by a key, keeping first-seen order. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return [...groups.values()];
}

/** What the callers of the failed steps saw, at most `shown` of them. */
const callersSaw = (seen: readonly StageReport["scenario"][number][], shown: number) => [
  ...seen
    .slice(0, shown)
    .map((check) => `what its caller saw: ${check.caller}: ${check.name} failed: ${firstLine(check.detail)}`),
  ...(seen.length > shown ? [`and ${seen.length - shown} more checks failed the same way`] : []),
];

/**
 * Requests the templates allow outside the matrix, one block per statement: a request several statements allow is the
 * widest one's, however much it allows.
 */
function outsideBlocks(outside: readonly Decision[]): string[] {
  const causes = (decision: Decision) =>
    decision.allowedBy.some((ref) => ref.policy !== EVERYTHING.name)
      ? decision.allowedBy.filter((ref) => ref.policy !== EVERYTHING.name).map((ref) => describeStatement(ref))
      : [`a policy the evaluator did not name (${decision.result}: ${decision.explanation.slice(0, 200)})`];
  const weight = new Map<string, number>();
  for (const cause of outside.flatMap(causes)) weight.set(cause, (weight.get(cause) ?? 0) + 1);
  const widest = (decision: Decision) =>
    causes(decision).sort((a, b) => (weight.get(b) ?? 0) - (weight.get(a) ?? 0))[0] as string;
  return groupBy(outside, widest).map((decisions) => {
    const principals = [...new Set(decisions.map((decision) => principalOf(decision)))];
    const requests = [
      ...new Set(
        decisions.map(
          (d) =>
            `${d.request.action} on ${d.request.resource}${Object.keys(d.request.context).length ? ` with ${JSON.stringify(d.request.context)}` : ""}`,
        ),
      ),
    ];
    return [
      `the templates allow more than the access matrix: ${principals.join(", ")} ${principals.length === 1 ? "is" : "are"} allowed what no row of the access matrix covers`,
      `allowed by: ${widest(decisions[0] as Decision)}`,
      `requests (${requests.length}): ${requests.slice(0, 6).join("; ")}${requests.length > 6 ? `; and ${requests.length - 6} more` : ""}`,
      "fix: remove or narrow the statement, or add a row with its reason to scripts/rehearse/accessMatrix.ts",
    ].join("\n    ");
  });
}

/** The explanation without the request's own values, so that calls failing for one reason group together. */
const reasonKey = (decision: Decision) => decision.explanation.replace(/does not hold for .*$/gm, "does not hold");

/**
 * The failures of one stage. `areaOf` names the part of the matrix a denied call falls in (its rows' resources and
 * partitions): the calls one missing or narrowed grant refuses are one block, whatever their actions and number.
 */
function stageFailures(stage: StageReport, areaOf: (decision: Decision) => string | undefined): string[] {
  const where = `${stage.stack} (${stage.account}, ${stage.region})`;
  const blocks: string[] = [];
  const denied = stage.calls.filter((decision) => !decision.allowed);
  const deniedSteps = new Set(denied.map((decision) => decision.request.step).filter((step) => step !== undefined));
  const failedChecks = stage.scenario.filter((check) => !check.ok);

  for (const group of groupBy(denied, (d) =>
    areaOf(d) !== undefined
      ? `${d.request.caller}|${areaOf(d)}`
      : [d.request.caller, d.request.action, d.request.resource, reasonKey(d)].join("|"),
  )) {
    const [first] = group as [Decision, ...Decision[]];
    const { request } = first;
    const steps = [
      ...new Set(group.map((decision) => decision.request.step).filter((step): step is string => step !== undefined)),
    ];
    const seen = failedChecks.filter((check) => check.steps?.some((step) => steps.includes(step)));
    const contexts = [
      ...new Set(
        group.map((d) =>
          d.request.action === request.action && d.request.resource === request.resource
            ? JSON.stringify(d.request.context)
            : `${d.request.action} on ${d.request.resource} ${JSON.stringify(d.request.context)}`,
        ),
      ),
    ];
    blocks.push(
      [
        `${where}: ${request.caller} would be denied ${request.action} on ${request.resource} with ${JSON.stringify(request.context)} (${request.because})`,
        `principal: ${first.principal}`,
        `effect: ${first.result}; AWS answers AccessDeniedException: ${first.accessDenied ?? ""}`,
        `why: ${indent(first.explanation)}`,
        ...(steps.length
          ? [`scenario steps: ${steps.join("; ")} (${group.length} call${group.length === 1 ? "" : "s"})`]
          : []),
        ...(contexts.length > 1 ? [`also with: ${contexts.slice(1).join(", ")}`] : []),
        ...callersSaw(seen, 6),
      ].join("\n    "),
    );
  }
  const erroredSteps = new Set(stage.functionErrors.flatMap((error) => error.steps));
  for (const check of failedChecks) {
    if (check.steps?.some((step) => deniedSteps.has(step) || erroredSteps.has(step))) continue;
    blocks.push(
      `${where}: ${check.caller}: ${check.name} failed: ${check.detail}${check.steps?.length ? `\n    scenario step: ${check.steps.join("; ")}` : ""}`,
    );
  }
  for (const group of groupBy(stage.unmodelled, (entry) => `${entry.caller}|${entry.call}`)) {
    const [first] = group as [StageReport["unmodelled"][number]];
    blocks.push(
      `${where}: ${first.caller} calls ${first.call}${first.step ? `\n    scenario step: ${first.step}` : ""}`,
    );
  }
  for (const group of groupBy(stage.wrongRegion, (entry) => `${entry.caller}|${entry.call}|${entry.region}`)) {
    const [first] = group as [StageReport["wrongRegion"][number]];
    blocks.push(
      `${where}: ${first.caller} called ${first.call} in ${first.region}, but the stage is in ${stage.region} (AWS would reach another region's resources, or none)${first.step ? `\n    scenario step: ${first.step}` : ""}`,
    );
  }
  for (const error of stage.functionErrors) {
    const seen = failedChecks.filter((check) => check.steps?.some((step) => error.steps.includes(step)));
    blocks.push(
      [
        `${where}: ${error.caller} failed with ${error.errorType}: ${error.errorMessage} (not an IAM finding: its rows are not judged)`,
        ...(error.steps.length
          ? [
              `scenario steps: ${error.steps.slice(0, 6).join("; ")}${error.steps.length > 6 ? ` and ${error.steps.length - 6} more` : ""}`,
            ]
          : []),
        ...callersSaw(seen, 3),
      ].join("\n    "),
    );
  }
  for (const problem of [...new Set(stage.policyProblems)]) blocks.push(`${where}: ${problem}`);
  for (const problem of stage.eventProblems) blocks.push(`${where}: ${problem}`);
  for (const part of stage.undriven) blocks.push(`${where}: not rehearsed: ${part}`);
  return blocks;
}

export function failureBlocks(
  stages: readonly StageReport[],
  assemblyProblems: readonly string[],
  proof: ProofResult | undefined,
  callsOutside: readonly Decision[],
  staleRows: readonly string[],
): string[] {
  // A row denied because a statement is missing is reported once: with the calls it refused, if any.
  const refused = stages.flatMap((stage) => stage.calls.filter((decision) => !decision.allowed));
  const deniedRows = (proof?.deniedRows ?? []).filter(
    ({ bound }) => !refused.some((decision) => covers(bound, principalOf(decision), decision.request)),
  );
  return [
    ...assemblyProblems,
    ...(proof?.problems ?? []),
    ...stages.flatMap((stage) =>
      stageFailures(stage, (decision) => {
        const bound = proof?.rows.find((row) => covers(row, principalOf(decision), decision.request));
        return bound && JSON.stringify([bound.principal, bound.resources, bound.row.partitions]);
      }),
    ),
    ...outsideBlocks(proof?.outside ?? []),
    ...deniedRows.map(({ bound, decision }) =>
      [
        `access matrix row denied: ${rowText(bound)}`,
        `request: ${decision.request.action} on ${decision.request.resource} with ${JSON.stringify(decision.request.context)}`,
        `effect: ${decision.result}; AWS answers AccessDeniedException: ${decision.accessDenied ?? ""}`,
        `why: ${indent(decision.explanation)}`,
      ].join("\n    "),
    ),
    ...groupBy(callsOutside, (d) => `${principalOf(d)}|${d.request.action}`).map((group) => {
      const [first] = group as [Decision, ...Decision[]];
      const steps = [...new Set(group.map((d) => d.request.step).filter((step) => step !== undefined))];
      return [
        `${first.request.caller} (${principalOf(first)}) made ${first.request.action} on ${first.request.resource} with ${JSON.stringify(first.request.context)}, which no row of the access matrix covers (${group.length} call${group.length === 1 ? "" : "s"})`,
        `allowed by: ${first.allowedBy.map((ref) => `${ref.policy} statement ${ref.index + 1}`).join("; ") || "a statement the evaluator did not name"}`,
        ...(steps.length ? [`scenario steps: ${steps.slice(0, 6).join("; ")}`] : []),
        "fix: the code or the bundle calls what it must not, or the matrix lacks a reviewed row (scripts/rehearse/accessMatrix.ts)",
      ].join("\n    ");
    }),
    ...staleRows,
  ];
}

export function formatReport(title: string, report: RehearsalReport): string {
  const lines = [`== ${title}`];
  for (const stage of report.stages) {
    lines.push("", `-- ${stage.stack} (account ${stage.account}, ${stage.region})`);
    lines.push(`functions run from their artifacts: ${stage.functions.join(", ")}`);
    for (const skipped of stage.skipped) lines.push(`skipped ${skipped.logicalId}: ${skipped.reason}`);
    for (const redirected of stage.redirected) lines.push(`pointed at the local API: ${redirected}`);
    const passed = stage.scenario.filter((check) => check.ok).length;
    lines.push(`scenario: ${passed} of ${stage.scenario.length} checks passed`);
    if (stage.notAssessed.length) {
      lines.push(
        `rows not judged for exercise: ${stage.notAssessed.join(", ")} failed or was refused a call (see the failures)`,
      );
    }
    lines.push("");
    const rows = [["caller", "action", "resource", "context", "decision"]];
    for (const decision of stage.calls) {
      const { caller, action, resource } = decision.request;
      const outcome = decision.allowed ? "allowed" : `DENIED (${decision.result})`;
      rows.push([caller, action, resource, contextText(decision), outcome]);
    }
    lines.push(table(rows));
  }
  if (report.proof) {
    const { proof } = report;
    lines.push(
      "",
      `access matrix: ${proof.rows.length} rows over ${proof.principals} principals; ${proof.evaluated} requests evaluated, ${proof.outside.length} allowed outside the rows, ${proof.deniedRows.length} rows denied`,
    );
  }
  if (report.failures.length)
    lines.push("", "FAILURES (one per root cause):", ...report.failures.map((failure) => `- ${failure}`));
  return lines.join("\n");
}

export function summaryLine(reports: readonly RehearsalReport[]): string {
  const stages = reports.flatMap((report) => report.stages);
  const allowed = stages.flatMap((stage) => stage.calls.filter((d) => d.allowed));
  const functions = stages.reduce((sum, stage) => sum + stage.functions.length, 0);
  // A service principal counts once per stage of each assembly rehearsed.
  const services = stages.reduce(
    (sum, stage) =>
      sum +
      new Set(stage.calls.filter((d) => d.allowed && !d.principal.startsWith("arn:")).map((d) => d.principal)).size,
    0,
  );
  const proofs = reports.flatMap((report) => (report.proof ? [report.proof] : []));
  const sum = (count: (proof: ProofResult) => number) => proofs.reduce((total, proof) => total + count(proof), 0);
  const mustDeny = sum((proof) => proof.denied);
  const failures = reports.reduce((total, report) => total + report.failures.length, 0);
  return `rehearsal: ${allowed.length} calls from ${functions} functions and ${services} service principals allowed; ${mustDeny} must-deny denied; ${sum((proof) => proof.rows.length)} matrix rows, ${sum((proof) => proof.principals)} principals, ${sum((proof) => proof.evaluated)} requests evaluated; ${failures} failures`;
}
