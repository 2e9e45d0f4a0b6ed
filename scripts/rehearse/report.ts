/**
 * The rehearsal's report: one table per stage (caller, action, resource, decision), then the
 * failures, one block per root cause, written for the engineer paged for an AccessDenied: the
 * principal, the effect and AWS's own error message, the statement and the condition that decided,
 * the scenario steps that made the call and what their client saw.
 */
import type { Decision } from "./iam";
import type { OverGrant } from "./leastPrivilege";
import type { RehearsalReport, StageReport } from "./rehearse";

/** An over-grant, named by role, statement and resource pattern. */
export function overGrantText(grant: OverGrant & { rolePath: string }, why = "no rehearsed call used them"): string {
  const shown = grant.unused.slice(0, 8).join(", ");
  const more = grant.unused.length > 8 ? ` and ${grant.unused.length - 8} more` : "";
  return `over-grant: role ${grant.role} (${grant.rolePath}) is granted ${shown}${more} on ${grant.resource} by ${grant.statement.policy} statement ${grant.statement.index + 1}, and ${why}. Remove the grant, or list it with its reason in scripts/rehearse/allowances.ts`;
}

/** The condition keys that decide, short: `LeadingKeys=APIKEY`, `SourceArn=…:alarm:X`. */
const contextText = (decision: Decision) =>
  Object.entries(decision.request.context)
    .filter(([key]) => !/SecureTransport|CallerAccount/.test(key))
    .map(
      ([key, value]) =>
        `${key
          .split(":")
          .slice(key.startsWith("kms:EncryptionContext") ? 2 : 1)
          .join(":")}=${[value].flat().join("|")}`,
    )
    .join(" ");

const table = (rows: string[][]): string => {
  const widths =
    rows[0]?.map((_, column) => Math.min(70, Math.max(...rows.map((row) => (row[column] ?? "").length)))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
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

/** The explanation without the request's own values, so that calls failing for one reason group together. */
const reasonKey = (decision: Decision) => decision.explanation.replace(/does not hold for .*$/gm, "does not hold");

function stageFailures(stage: StageReport): string[] {
  const where = `${stage.stack} (${stage.account}, ${stage.region})`;
  const blocks: string[] = [];
  const denied = stage.calls.filter((decision) => !decision.allowed);
  const deniedSteps = new Set(denied.map((decision) => decision.request.step).filter((step) => step !== undefined));
  const failedChecks = stage.scenario.filter((check) => !check.ok);

  for (const group of groupBy(denied, (d) =>
    [d.request.caller, d.request.action, d.request.resource, reasonKey(d)].join("|"),
  )) {
    const [first] = group as [Decision, ...Decision[]];
    const { request } = first;
    const steps = [
      ...new Set(group.map((decision) => decision.request.step).filter((step): step is string => step !== undefined)),
    ];
    const seen = failedChecks.filter((check) => check.steps?.some((step) => steps.includes(step)));
    const contexts = [...new Set(group.map((decision) => JSON.stringify(decision.request.context)))];
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
        ...seen
          .slice(0, 6)
          .map((check) => `what its caller saw: ${check.caller}: ${check.name} failed: ${firstLine(check.detail)}`),
        ...(seen.length > 6 ? [`and ${seen.length - 6} more checks failed the same way`] : []),
      ].join("\n    "),
    );
  }
  for (const check of failedChecks) {
    if (check.steps?.some((step) => deniedSteps.has(step))) continue;
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
  // A must-deny call allowed: one block per statement that allows it.
  const allowedMustDeny = stage.mustDeny.filter((decision) => decision.allowed);
  for (const group of groupBy(
    allowedMustDeny,
    (d) => `${d.principal}|${d.allowedBy.map((ref) => `${ref.policy}#${ref.index}`).join(",")}`,
  )) {
    const [first] = group as [Decision, ...Decision[]];
    const actions = [...new Set(group.map((decision) => `${decision.request.action} on ${decision.request.resource}`))];
    blocks.push(
      [
        `${where}: ${first.request.caller} is allowed ${actions.slice(0, 6).join(", ")}${actions.length > 6 ? ` and ${actions.length - 6} more` : ""}, which it must never be (${first.request.because})`,
        `principal: ${first.principal}`,
        `effect: Allow, by ${first.allowedBy.map((ref) => `${ref.policy} statement ${ref.index + 1}: ${JSON.stringify({ Effect: ref.statement.Effect, Principal: ref.statement.Principal, Action: ref.statement.Action, Resource: ref.statement.Resource, Condition: ref.statement.Condition })}`).join("; ") || "a statement the evaluator did not name"}`,
      ].join("\n    "),
    );
  }
  // A service's call the scenario made and was refused is reported above, with what its caller saw.
  const refusedAtRuntime = new Set(denied.map((d) => `${d.request.caller}|${d.request.action}|${d.request.resource}`));
  for (const group of groupBy(
    stage.services.filter(
      ({ decision, expected }) =>
        decision.allowed !== (expected === "allow") &&
        !(
          expected === "allow" &&
          refusedAtRuntime.has(`${decision.request.caller}|${decision.request.action}|${decision.request.resource}`)
        ),
    ),
    ({ decision, expected }) =>
      `${decision.request.caller}|${decision.request.action}|${expected}|${reasonKey(decision)}`,
  )) {
    const [{ decision, expected }] = group as [StageReport["services"][number]];
    const { request } = decision;
    blocks.push(
      `${where}: ${request.caller} ${expected === "allow" ? "is denied" : "is allowed"} ${request.action} on ${request.resource} with ${JSON.stringify(request.context)} (${request.because})${group.length > 1 ? ` and ${group.length - 1} more alike` : ""}\n    principal: ${decision.principal}${decision.explanation ? `\n    why: ${indent(decision.explanation)}` : ""}${decision.allowedBy.length ? `\n    allowed by: ${decision.allowedBy.map((ref) => `${ref.policy} statement ${ref.index + 1}`).join("; ")}` : ""}`,
    );
  }
  for (const error of stage.functionErrors) {
    blocks.push(
      `${where}: ${error.caller} failed with ${error.errorType}: ${error.errorMessage}${error.steps.length ? `\n    scenario steps: ${error.steps.slice(0, 6).join("; ")}${error.steps.length > 6 ? ` and ${error.steps.length - 6} more` : ""}` : ""}`,
    );
  }
  for (const grant of stage.overGrants) blocks.push(`${where}: ${overGrantText(grant)}`);
  for (const problem of [...new Set(stage.policyProblems)]) blocks.push(`${where}: ${problem}`);
  for (const problem of stage.eventProblems) blocks.push(`${where}: ${problem}`);
  for (const part of stage.undriven) blocks.push(`${where}: not rehearsed: ${part}`);
  return blocks;
}

export function failureBlocks(stages: readonly StageReport[], assemblyProblems: readonly string[]): string[] {
  return [...assemblyProblems, ...stages.flatMap(stageFailures)];
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
    const generated = stage.mustDeny.length;
    lines.push(
      `least privilege: ${stage.overGrants.length} over-grants; ${generated} must-deny calls, ${stage.mustDeny.filter((d) => !d.allowed).length} denied`,
    );
    if (stage.notAssessed.length) {
      lines.push(
        `unused grants not judged for ${stage.notAssessed.join(", ")}: a call was refused or the function failed, so the scenario did not exercise them (see the failures)`,
      );
    }
    lines.push("");
    const rows = [["caller", "action", "resource", "context", "decision"]];
    const row = (decision: Decision, outcome: string) =>
      rows.push([
        decision.request.caller,
        decision.request.action,
        decision.request.resource,
        contextText(decision),
        outcome,
      ]);
    for (const decision of stage.calls) row(decision, decision.allowed ? "allowed" : `DENIED (${decision.result})`);
    for (const decision of stage.mustDeny.filter((d) => d.allowed)) row(decision, "ALLOWED, must be denied");
    for (const { decision, expected } of stage.services) {
      const ok = decision.allowed === (expected === "allow");
      row(decision, `${decision.allowed ? "allowed" : "denied"}${ok ? "" : `, EXPECTED ${expected.toUpperCase()}`}`);
    }
    lines.push(table(rows));
  }
  if (report.failures.length)
    lines.push("", "FAILURES (one per root cause):", ...report.failures.map((failure) => `- ${failure}`));
  return lines.join("\n");
}

export function summaryLine(reports: readonly RehearsalReport[]): string {
  const stages = reports.flatMap((report) => report.stages);
  const calls = stages.reduce((sum, stage) => sum + stage.calls.filter((d) => d.allowed).length, 0);
  const functions = stages.reduce((sum, stage) => sum + stage.functions.length, 0);
  // A service principal counts once per stage of each assembly rehearsed.
  const services = stages.reduce(
    (sum, stage) =>
      sum +
      new Set(
        stage.services
          .filter((s) => s.expected === "allow" && s.decision.allowed)
          .map((s) => s.decision.request.caller.replace(/^logs\..*/, "logs")),
      ).size,
    0,
  );
  const mustDeny = stages.reduce((sum, stage) => sum + stage.mustDeny.filter((d) => !d.allowed).length, 0);
  const failures = reports.reduce((sum, report) => sum + report.failures.length, 0);
  return `rehearsal: ${calls} calls from ${functions} functions and ${services} service principals allowed; ${mustDeny} must-deny denied; ${failures} failures`;
}
