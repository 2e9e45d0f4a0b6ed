/** The rehearsal's report: one table per stage (caller, action, resource, decision), then the failures. */
import type { Decision } from "./iam";
import type { RehearsalReport } from "./rehearse";

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

export function formatReport(title: string, report: RehearsalReport): string {
  const lines = [`== ${title}`];
  for (const stage of report.stages) {
    lines.push("", `-- ${stage.stack} (account ${stage.account}, ${stage.region})`);
    lines.push(`functions run from their artifacts: ${stage.functions.join(", ")}`);
    for (const skipped of stage.skipped) lines.push(`skipped ${skipped.logicalId}: ${skipped.reason}`);
    for (const redirected of stage.redirected) lines.push(`pointed at the local API: ${redirected}`);
    const passed = stage.scenario.filter((check) => check.ok).length;
    lines.push(`scenario: ${passed} of ${stage.scenario.length} checks passed`, "");
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
    for (const decision of stage.mustDeny)
      row(decision, decision.allowed ? "ALLOWED, must be denied" : "denied (must-deny)");
    for (const { decision, expected } of stage.services) {
      const ok = decision.allowed === (expected === "allow");
      row(decision, `${decision.allowed ? "allowed" : "denied"}${ok ? "" : `, EXPECTED ${expected.toUpperCase()}`}`);
    }
    lines.push(table(rows));
  }
  if (report.failures.length) lines.push("", "FAILURES:", ...report.failures.map((failure) => `- ${failure}`));
  return lines.join("\n");
}

export function summaryLine(reports: readonly RehearsalReport[]): string {
  const stages = reports.flatMap((report) => report.stages);
  const calls = stages.reduce((sum, stage) => sum + stage.calls.filter((d) => d.allowed).length, 0);
  const functions = stages.reduce((sum, stage) => sum + stage.functions.length, 0);
  // A service principal counts once per stage of each assembly rehearsed.
  const services = reports
    .flatMap((report) => report.stages)
    .reduce(
      (sum, stage) =>
        sum +
        new Set(
          stage.services
            .filter((s) => s.expected === "allow" && s.decision.allowed)
            .map((s) => s.decision.request.caller),
        ).size,
      0,
    );
  const mustDeny = stages.reduce((sum, stage) => sum + stage.mustDeny.filter((d) => !d.allowed).length, 0);
  const failures = reports.reduce((sum, report) => sum + report.failures.length, 0);
  return `rehearsal: ${calls} calls from ${functions} functions and ${services} service principals allowed; ${mustDeny} must-deny denied; ${failures} failures`;
}
