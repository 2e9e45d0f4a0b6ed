/**
 * `npm run lint:cfn [-- --assembly DIR]`: AWS's CloudFormation linter (cfn-lint) on every
 * CloudFormation template of a cloud assembly, nested stage assemblies included. It checks each
 * resource's properties against CloudFormation's resource schemas (names, types, allowed values such
 * as a Lambda runtime), references and functions, the way CloudFormation itself would refuse them at
 * deploy time, and more (https://github.com/aws-cloudformation/cfn-lint).
 *
 * Without --assembly it synthesizes the app itself, once per rehearsal configuration
 * (scripts/rehearse/configurations.ts: both stages pinned to example accounts and a region), into
 * directories outside the repository, and lints them all. Errors fail (exit 1) unless
 * scripts/cfnLintAllowances.ts allows that exact finding; warnings and informational findings are
 * printed only. An allowance that matches no finding fails too. Exit 2: a wrong argument, no
 * cfn-lint on PATH in CI, no cloud assembly, or cfn-lint could not run. Outside CI, no cfn-lint on
 * PATH prints one line saying the templates were not linted and how to add it, and exits 0: cfn-lint
 * is Python, and `npm test` on a machine with only Node must pass; CI installs it, so CI still lints.
 */
import { spawnSync } from "node:child_process";
import { relative } from "node:path";
import { UNKNOWN_REGION } from "aws-cdk-lib/cx-api";
import { runsInCi } from "../infra/app";
import { type CfnLintAllowance, cfnLintAllowances } from "./cfnLintAllowances";
import { firstLine, runAsScript } from "./entryPoint";
import {
  AssemblyArgumentError,
  AssemblyError,
  type AssemblyStack,
  assemblyArguments,
  readAssembly,
} from "./rehearse/assembly";

/** The cfn-lint release the allowances were reviewed against; the workflows install exactly this one. */
export const CFN_LINT_VERSION = "1.51.0";
/**
 * What a template whose stack is not pinned to a region (CDK's environment-agnostic stack) is linted
 * for: cfn-lint's own default region, named so that the findings know their region.
 */
export const DEFAULT_REGION = "us-east-1";

const USAGE = "Usage: npm run lint:cfn [-- --assembly DIR]";
export const NOT_FOUND =
  `cfn-lint: not found on PATH; install AWS's CloudFormation linter with pip install cfn-lint==${CFN_LINT_VERSION} ` +
  "(https://github.com/aws-cloudformation/cfn-lint)";

/** Outside CI, instead of NOT_FOUND (exit 0): what was not checked, and how to check it here. */
export const NOT_LINTED =
  "cfn-lint: not installed, so the CloudFormation templates were not linted (CI lints them); " +
  `to lint them here: pip install cfn-lint==${CFN_LINT_VERSION}`;

/** A failure to lint at all (exit 2), as opposed to findings (exit 1). */
export class CfnLintRunError extends Error {
  override readonly name = "CfnLintRunError";
}

/** One template to lint. */
export interface LintTemplate {
  /** How the output names it: its path in the assembly, after the configuration's name if any. */
  readonly name: string;
  /** Absolute path of the template file. */
  readonly file: string;
  /** The region it is linted for: its stack's, or DEFAULT_REGION for a stack not pinned to one. */
  readonly region: string;
  /** Logical id → resource type. */
  readonly resourceTypes: ReadonlyMap<string, string>;
}

export type FindingLevel = "Error" | "Warning" | "Informational";

export interface CfnLintFinding {
  /** The template's name (LintTemplate.name), or "cfn-lint" for a finding about no template. */
  readonly template: string;
  readonly rule: string;
  readonly level: FindingLevel;
  /** Where in the template, as cfn-lint gives it (`Resources`, logical id, `Properties`, ...). */
  readonly path: readonly (string | number)[];
  readonly message: string;
  /** The region the template was linted for. */
  readonly region: string;
  /** The resource type at `Resources/<logical id>`, when the finding is inside a resource. */
  readonly resourceType: string | undefined;
}

/** Every CloudFormation stack's template in the cloud assembly at `directory`, nested assemblies included. */
export function assemblyTemplates(directory: string, prefix = ""): LintTemplate[] {
  let stacks: AssemblyStack[];
  try {
    // Read as the rehearsal reads it (aws-cdk-lib/cx-api, nested stage assemblies included).
    stacks = readAssembly(directory);
  } catch (error) {
    if (error instanceof AssemblyError) throw new CfnLintRunError(`cfn-lint: ${error.message}`);
    throw error;
  }
  return stacks.map((stack) => ({
    name: `${prefix}${relative(directory, stack.templateFile)}`,
    file: stack.templateFile,
    region: stack.region === UNKNOWN_REGION ? DEFAULT_REGION : stack.region,
    resourceTypes: new Map(
      Object.entries(stack.template.Resources).map(([id, resource]) => [id, String(resource.Type)]),
    ),
  }));
}

/** `cfn-lint --version` → "1.51.0". */
export function cfnLintVersion(): string {
  const result = spawnSync("cfn-lint", ["--version"], { encoding: "utf8" });
  // A pyenv shim stands on PATH for every version's scripts and answers 127 where the active Python
  // has no cfn-lint: that is "not installed" too.
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT" || result.status === 127) {
    throw new CfnLintRunError(NOT_FOUND);
  }
  const version = /cfn-lint (\S+)/.exec(result.stdout ?? "")?.[1];
  if (result.status !== 0 || !version) {
    throw new CfnLintRunError(`cfn-lint: cfn-lint --version failed: ${lastLine(result.stderr || result.error)}`);
  }
  return version;
}

interface RawFinding {
  Filename: string | null;
  Level: string;
  Location: { Path: (string | number)[] | null };
  Message: string;
  Rule: { Id: string };
}

/**
 * Lints the templates, one cfn-lint process per region they deploy to: some checks depend on the
 * region (which resource types, properties and Lambda runtimes it has), and `--regions` applies to
 * every template of a process.
 */
export function lintTemplates(templates: readonly LintTemplate[]): CfnLintFinding[] {
  const byRegion = new Map<string, LintTemplate[]>();
  for (const template of templates) byRegion.set(template.region, [...(byRegion.get(template.region) ?? []), template]);
  const byFile = new Map(templates.map((template) => [template.file, template]));
  const findings: CfnLintFinding[] = [];
  for (const [region, group] of byRegion) {
    // `--regions` takes several values: `--` ends them before the template paths.
    const result = spawnSync(
      "cfn-lint",
      ["--format", "json", "--regions", region, "--", ...group.map((template) => template.file)],
      { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
    );
    if ((result.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT") throw new CfnLintRunError(NOT_FOUND);
    let raw: RawFinding[];
    try {
      raw = JSON.parse(result.stdout) as RawFinding[];
      if (!Array.isArray(raw)) throw new Error("not a list of findings");
    } catch {
      throw new CfnLintRunError(
        `cfn-lint: cfn-lint exited ${result.status} without findings in JSON: ${lastLine(result.stderr || result.error)}`,
      );
    }
    for (const finding of raw) {
      const template = finding.Filename ? byFile.get(finding.Filename) : undefined;
      const path = finding.Location.Path ?? [];
      const logicalId = path[0] === "Resources" && typeof path[1] === "string" ? path[1] : undefined;
      findings.push({
        template: template?.name ?? finding.Filename ?? "cfn-lint",
        rule: finding.Rule.Id,
        level: finding.Level as FindingLevel,
        path,
        message: finding.Message,
        region,
        resourceType: logicalId === undefined ? undefined : template?.resourceTypes.get(logicalId),
      });
    }
  }
  return findings;
}

/**
 * Whether `allowance` covers `finding`: the same rule, about the allowed property itself, directly
 * under the Properties of a resource of the allowed type, cfn-lint saying that property was
 * unexpected, in one of the allowance's regions. Anything else about the same resource, a nested
 * property, or the same property of another resource type still counts.
 */
export function allowanceMatches(allowance: CfnLintAllowance, finding: CfnLintFinding): boolean {
  const [section, , properties, property, ...deeper] = finding.path;
  return (
    appliesTo(allowance, finding.region) &&
    finding.rule === allowance.rule &&
    finding.resourceType === allowance.resourceType &&
    section === "Resources" &&
    properties === "Properties" &&
    property === allowance.property &&
    deeper.length === 0 &&
    finding.message.includes(`'${allowance.property}' was unexpected`)
  );
}

const appliesTo = (allowance: CfnLintAllowance, region: string): boolean =>
  allowance.regions === undefined || allowance.regions.includes(region);

export interface AllowanceResult {
  /** The findings no allowance covers. */
  readonly findings: CfnLintFinding[];
  readonly allowed: CfnLintFinding[];
  /** Allowances that covered nothing although a template was linted for one of their regions: stale, a failure. */
  readonly unused: CfnLintAllowance[];
}

/** `lintedRegions`: the regions templates were linted for, whether or not they had findings. */
export function applyAllowances(
  findings: readonly CfnLintFinding[],
  lintedRegions: readonly string[],
  allowances: readonly CfnLintAllowance[] = cfnLintAllowances,
): AllowanceResult {
  const used = new Set<CfnLintAllowance>();
  const kept: CfnLintFinding[] = [];
  const allowed: CfnLintFinding[] = [];
  for (const finding of findings) {
    const allowance = allowances.find((candidate) => allowanceMatches(candidate, finding));
    if (allowance) {
      used.add(allowance);
      allowed.push(finding);
    } else {
      kept.push(finding);
    }
  }
  const unused = allowances.filter(
    (allowance) => !used.has(allowance) && lintedRegions.some((region) => appliesTo(allowance, region)),
  );
  return { findings: kept, allowed, unused };
}

export const allowanceName = (allowance: CfnLintAllowance): string =>
  `${allowance.rule} ${allowance.resourceType} ${allowance.property}`;

export const formatFinding = (finding: CfnLintFinding): string =>
  `${finding.template} ${finding.rule} ${finding.path.length > 0 ? finding.path.join("/") : "-"} ${finding.message.replace(/\s+/g, " ")}`;

export const formatUnusedAllowance = (allowance: CfnLintAllowance): string =>
  `cfn-lint: allowance ${allowanceName(allowance)} matched no finding; if cfn-lint now knows the property, ` +
  "remove the allowance from scripts/cfnLintAllowances.ts";

export function summaryLine(templateCount: number, result: AllowanceResult, version: string): string {
  const count = (level: FindingLevel) => result.findings.filter((finding) => finding.level === level).length;
  return (
    `cfn-lint: ${templateCount} templates, ${count("Error")} errors, ${count("Warning")} warnings, ` +
    `${count("Informational")} informational, ${result.allowed.length} allowed (cfn-lint ${version})`
  );
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error ?? ""));

/** The last line of cfn-lint's stderr: a Python traceback ends with the exception and its message. */
function lastLine(error: unknown): string {
  return messageOf(error).trim().split("\n").at(-1) || "no message";
}

async function main(argv: readonly string[]): Promise<number> {
  const { assembly, help } = assemblyArguments(argv);
  if (help) {
    console.log(USAGE);
    return 0;
  }
  // Before any synthesis: a machine without cfn-lint learns it at once.
  let version: string;
  try {
    version = cfnLintVersion();
  } catch (error) {
    if (!(error instanceof CfnLintRunError && error.message === NOT_FOUND) || runsInCi(process.env)) throw error;
    console.log(NOT_LINTED);
    return 0;
  }
  const lint = (templates: readonly LintTemplate[]): number => {
    const result = applyAllowances(
      lintTemplates(templates),
      templates.map((template) => template.region),
    );
    for (const finding of result.findings) console.log(formatFinding(finding));
    for (const allowance of result.unused) console.log(formatUnusedAllowance(allowance));
    console.log(summaryLine(templates.length, result, version));
    const errors = result.findings.filter((finding) => finding.level === "Error").length;
    return errors > 0 || result.unused.length > 0 ? 1 : 0;
  };
  if (assembly !== undefined) return lint(assemblyTemplates(assembly));
  // Imported here: synthesizing loads the whole app, which a run on a given assembly never needs.
  const { withRehearsalAssemblies } = await import("./rehearse/synth");
  return withRehearsalAssemblies((assemblies) =>
    lint(assemblies.flatMap(({ configuration, directory }) => assemblyTemplates(directory, `${configuration.name}/`))),
  );
}

await runAsScript(
  import.meta.url,
  main,
  (error) => {
    if (error instanceof CfnLintRunError) return error.message;
    return `cfn-lint: ${firstLine(error) || "no message"}${error instanceof AssemblyArgumentError ? `. ${USAGE}` : ""}`;
  },
  2,
);
