/**
 * Just enough of a GitHub Actions workflow's structure for the tests that read the workflows: jobs,
 * their steps (a YAML sequence, which ./yamlMapping.ts leaves as raw lines) and the keys the tests
 * look at.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { projectRoot } from "./processes";
import { mappingAt, mappingOf, type YamlEntry } from "./yamlMapping";

/** The text of .github/workflows/`name`. */
export const readWorkflow = (name: string): string =>
  readFileSync(join(projectRoot, ".github", "workflows", name), "utf8");

const indentOf = (line: string): number => line.length - line.trimStart().length;
const isSkippable = (line: string): boolean => line.trim() === "" || line.trimStart().startsWith("#");
const unquoted = (value: string): string => value.replace(/^"(.*)"$/, "$1").replace(/^'(.*)'$/, "$1");

/** The items of the block sequence made of `lines`, each as the lines of a block mapping. */
function sequenceItems(lines: readonly string[]): string[][] {
  const items: string[][] = [];
  const first = lines.find((line) => !isSkippable(line));
  if (first === undefined) return items;
  const indent = indentOf(first);
  for (const line of lines) {
    const current = items.at(-1);
    if (isSkippable(line)) {
      current?.push(line);
    } else if (indentOf(line) === indent && line.trimStart().startsWith("- ")) {
      items.push([`${" ".repeat(indent + 2)}${line.trimStart().slice(2)}`]);
    } else if (indentOf(line) > indent && current) {
      current.push(line);
    } else {
      throw new Error(`not a block sequence item: ${JSON.stringify(line)}`);
    }
  }
  return items;
}

/** A block mapping's entries as unquoted strings (a `with:`, `env:`, `permissions:` …). */
export const valuesOf = (entry: YamlEntry | undefined): Record<string, string> =>
  Object.fromEntries([...mappingOf(entry?.block ?? [])].map(([key, value]) => [key, unquoted(value.value)]));

export interface Step {
  /** The step's keys, in order. */
  readonly keys: string[];
  readonly uses: string | undefined;
  readonly name: string | undefined;
  /** The script of a `run` step (a block scalar's lines trimmed and joined), "" for an action. */
  readonly run: string;
  readonly with: Record<string, string>;
  readonly env: Record<string, string>;
}

/**
 * The text of a block scalar (`run: |`) made of `block`, its lines trimmed: up to a less indented
 * comment (the next step's or job's), without trailing blank lines.
 */
function blockScalar(block: readonly string[]): string {
  const first = block.find((line) => line.trim() !== "");
  if (first === undefined) return "";
  const lines: string[] = [];
  for (const line of block) {
    if (line.trim() !== "" && indentOf(line) < indentOf(first)) break;
    lines.push(line.trim());
  }
  while (lines.at(-1) === "") lines.pop();
  return lines.join("\n");
}

function stepOf(lines: readonly string[]): Step {
  const step = mappingOf(lines);
  const run = step.get("run");
  return {
    keys: [...step.keys()],
    uses: step.get("uses")?.value,
    name: step.get("name")?.value,
    run: run === undefined ? "" : run.value === "|" ? blockScalar(run.block) : run.value,
    with: valuesOf(step.get("with")),
    env: valuesOf(step.get("env")),
  };
}

export interface Job {
  readonly workflow: string;
  readonly name: string;
  /** The job's keys, in order. */
  readonly keys: string[];
  readonly if: string | undefined;
  readonly uses: string | undefined;
  readonly needs: string[];
  readonly environment: string | undefined;
  readonly secrets: string | undefined;
  readonly with: Record<string, string>;
  readonly env: Record<string, string>;
  readonly permissions: Record<string, string>;
  readonly outputs: Record<string, string>;
  readonly timeoutMinutes: string | undefined;
  readonly steps: Step[];
  /** The job's own lines, for what the tests only search. */
  readonly text: string;
}

/** The jobs of .github/workflows/`workflow`, in order. */
export function jobsOf(workflow: string): Job[] {
  return [...mappingAt(readWorkflow(workflow), ["jobs"])].map(([name, entry]) => {
    const job = mappingOf(entry.block);
    const needs = job.get("needs")?.value ?? "";
    const environment = job.get("environment");
    return {
      workflow,
      name,
      keys: [...job.keys()],
      if: job.get("if")?.value,
      uses: job.get("uses")?.value,
      needs: needs.startsWith("[")
        ? needs
            .slice(1, -1)
            .split(",")
            .map((need) => need.trim())
        : needs === ""
          ? []
          : [needs],
      environment: environment?.value || mappingOf(environment?.block ?? []).get("name")?.value,
      secrets: job.get("secrets")?.value,
      with: valuesOf(job.get("with")),
      env: valuesOf(job.get("env")),
      permissions: valuesOf(job.get("permissions")),
      outputs: valuesOf(job.get("outputs")),
      timeoutMinutes: job.get("timeout-minutes")?.value,
      steps: sequenceItems(job.get("steps")?.block ?? []).map(stepOf),
      text: entry.block.join("\n"),
    };
  });
}

/** The job `name` of .github/workflows/`workflow`. */
export function jobOf(workflow: string, name: string): Job {
  const job = jobsOf(workflow).find((candidate) => candidate.name === name);
  if (!job) throw new Error(`${workflow} has no job ${name}`);
  return job;
}
