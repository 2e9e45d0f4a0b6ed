/**
 * cfn-lint on the synthesized templates (scripts/cfnLint.ts): the app's templates, in both rehearsal
 * configurations, have no error; a template broken by hand fails naming what broke; the allowances
 * cover exactly the findings they name and fail once stale; no cfn-lint on PATH is one line.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  allowanceMatches,
  applyAllowances,
  assemblyTemplates,
  CFN_LINT_VERSION,
  type CfnLintFinding,
} from "../../scripts/cfnLint";
import { type CfnLintAllowance, cfnLintAllowances } from "../../scripts/cfnLintAllowances";
import { rehearsalConfigurations } from "../../scripts/rehearse/configurations";
import { synthesizeAll } from "../../scripts/rehearse/synth";
import { projectRoot, runToEnd } from "../support/processes";

const SCRIPT = "scripts/cfnLint.ts";
const SUMMARY = /^cfn-lint: (\d+) templates, (\d+) errors, \d+ warnings, \d+ informational, (\d+) allowed \(cfn-lint /m;

let assemblies = new Map<string, string>();
/** Every directory the file made, removed at the end. */
const made: string[] = [];

beforeAll(() => {
  assemblies = synthesizeAll(rehearsalConfigurations);
  made.push(...assemblies.values());
});

afterAll(() => {
  for (const directory of made) rmSync(directory, { recursive: true, force: true });
});

const lint = (assembly: string) => runToEnd(SCRIPT, ["--assembly", assembly], { cwd: projectRoot });

/**
 * A copy of the two-accounts assembly's staging stage, for a test to break. A stage's nested
 * assembly is a cloud assembly of its own (its data and service stacks): linting two templates
 * rather than six keeps each test short.
 */
function copiedStage(): string {
  const copy = mkdtempSync(join(tmpdir(), "cfn-lint-test-"));
  made.push(copy);
  cpSync(join(assemblies.get("two-accounts") as string, "assembly-Staging"), copy, { recursive: true });
  return copy;
}

type Template = { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };

/** Rewrites every template of `assembly`, found through its manifests. */
function editTemplates(assembly: string, edit: (template: Template) => void): void {
  for (const { file } of assemblyTemplates(assembly)) {
    const template = JSON.parse(readFileSync(file, "utf8")) as Template;
    edit(template);
    writeFileSync(file, JSON.stringify(template, null, 1));
  }
}

type Manifest = {
  artifacts: Record<string, { type: string; environment?: string; properties?: { directoryName?: string } }>;
};

/** The manifest files of `directory` and of the nested assemblies it names. */
function manifestFiles(directory: string): string[] {
  const file = join(directory, "manifest.json");
  const manifest = JSON.parse(readFileSync(file, "utf8")) as Manifest;
  return [
    file,
    ...Object.values(manifest.artifacts)
      .filter((artifact) => artifact.type === "cdk:cloud-assembly")
      .flatMap((artifact) => manifestFiles(join(directory, String(artifact.properties?.directoryName)))),
  ];
}

/** The CloudFormation stacks the manifests name. (The directory may hold other templates: synthesizeAll
 * reuses one output directory, so a configuration's copy keeps files of the one before.) */
const stackCount = (directory: string): number =>
  manifestFiles(directory).flatMap((file) =>
    Object.values((JSON.parse(readFileSync(file, "utf8")) as Manifest).artifacts).filter(
      (artifact) => artifact.type === "aws:cloudformation:stack",
    ),
  ).length;

// Each lint is a child process of its own on a copy of its own: they run side by side.
describe.concurrent("the app's templates", () => {
  it.each(rehearsalConfigurations.map((configuration) => configuration.name))(
    "have no cfn-lint error in the %s deployment, every stack's template linted, nested stages included",
    async (name) => {
      const assembly = assemblies.get(name) as string;

      const { code, output } = await lint(assembly);

      const [, templates, errors, allowed] = SUMMARY.exec(output) ?? [];
      expect(output).not.toMatch(/matched no finding/);
      expect({ code, templates: Number(templates), errors: Number(errors) }).toEqual({
        code: 0,
        // The account stacks and each stage's data and service stacks, in nested assemblies.
        templates: stackCount(assembly),
        errors: 0,
      });
      expect(stackCount(assembly)).toBeGreaterThanOrEqual(5);
      // The synthetic check's alarm in each stage; the dashboards' tags are known in eu-west-1.
      expect(Number(allowed)).toBe(2);
    },
  );
});

describe.concurrent("a cloud assembly broken by hand", () => {
  it("fails with exit 1 on a Lambda runtime that does not exist, naming the template, rule, path and value", async () => {
    const assembly = copiedStage();
    let broken = "";
    editTemplates(assembly, (template) => {
      const [id, fn] =
        Object.entries(template.Resources).find(([, resource]) => resource.Type === "AWS::Lambda::Function") ?? [];
      if (broken || !id || !fn) return;
      fn.Properties.Runtime = "nodejs99.x";
      broken = id;
    });

    const { code, output } = await lint(assembly);

    expect(broken).not.toBe("");
    expect(code).toBe(1);
    expect(output).toMatch(
      new RegExp(
        `^\\S+\\.template\\.json E3030 Resources/${broken}/Properties/Runtime 'nodejs99\\.x' is not one of`,
        "m",
      ),
    );
    expect(SUMMARY.exec(output)?.[2]).toBe("1");
  });

  it("fails with exit 1 when an allowance matches nothing, naming the allowance", async () => {
    const assembly = copiedStage();
    editTemplates(assembly, (template) => {
      for (const resource of Object.values(template.Resources)) {
        if (resource.Type === "AWS::CloudWatch::Alarm") delete resource.Properties.WarmUpConfiguration;
      }
    });

    const { code, output } = await lint(assembly);

    expect(code).toBe(1);
    expect(output).toContain(
      "cfn-lint: allowance E3002 AWS::CloudWatch::Alarm WarmUpConfiguration matched no finding; " +
        "if cfn-lint now knows the property, remove the allowance from scripts/cfnLintAllowances.ts",
    );
    expect(SUMMARY.exec(output)?.[2]).toBe("0");
  });

  it("allows the dashboards' tags for a stack deployed to us-east-1, whose cfn-lint schema lacks them", async () => {
    const assembly = copiedStage();
    for (const file of manifestFiles(assembly)) {
      const manifest = JSON.parse(readFileSync(file, "utf8")) as Manifest;
      for (const artifact of Object.values(manifest.artifacts)) {
        if (artifact.environment) artifact.environment = artifact.environment.replace(/\/[^/]+$/, "/us-east-1");
      }
      writeFileSync(file, JSON.stringify(manifest));
    }

    const { code, output } = await lint(assembly);

    expect(code).toBe(0);
    // The stage's alarm warm-up and dashboard tags.
    expect(SUMMARY.exec(output)?.[3]).toBe("2");
  });
});

describe("an allowance", () => {
  const warmUp = cfnLintAllowances.find(
    (allowance) => allowance.property === "WarmUpConfiguration",
  ) as CfnLintAllowance;
  const finding: CfnLintFinding = {
    template: "assembly-Staging/Stage.template.json",
    rule: "E3002",
    level: "Error",
    path: ["Resources", "SyntheticCheckAlarm", "Properties", "WarmUpConfiguration"],
    message: "Additional properties are not allowed ('WarmUpConfiguration' was unexpected)",
    region: "eu-west-1",
    resourceType: "AWS::CloudWatch::Alarm",
  };

  it("covers its property of its resource type, and nothing beside it", () => {
    expect(allowanceMatches(warmUp, finding)).toBe(true);
    expect(allowanceMatches(warmUp, { ...finding, resourceType: "AWS::CloudWatch::CompositeAlarm" })).toBe(false);
    expect(allowanceMatches(warmUp, { ...finding, rule: "E3012" })).toBe(false);
    expect(allowanceMatches(warmUp, { ...finding, path: [...finding.path, "WarmUpPeriodDurationInMinutes"] })).toBe(
      false,
    );
    expect(
      allowanceMatches(warmUp, {
        ...finding,
        path: ["Resources", "SyntheticCheckAlarm", "Properties", "Tags"],
        message: "Additional properties are not allowed ('Tags' was unexpected)",
      }),
    ).toBe(false);
  });

  it("with regions covers findings in those regions only, and is stale only where it applies", () => {
    const dashboardTags: CfnLintAllowance = { ...warmUp, property: "Tags", regions: ["us-east-1"] };
    const tagsFinding: CfnLintFinding = {
      ...finding,
      path: ["Resources", "SyntheticCheckAlarm", "Properties", "Tags"],
      message: "Additional properties are not allowed ('Tags' was unexpected)",
    };

    expect(allowanceMatches(dashboardTags, { ...tagsFinding, region: "us-east-1" })).toBe(true);
    expect(allowanceMatches(dashboardTags, tagsFinding)).toBe(false);
    expect(applyAllowances([], ["eu-west-1"], [dashboardTags]).unused).toEqual([]);
    expect(applyAllowances([], ["eu-west-1", "us-east-1"], [dashboardTags]).unused).toEqual([dashboardTags]);
  });

  it("each gives a reason and an AWS source for the property", () => {
    for (const allowance of cfnLintAllowances) {
      expect(allowance.reason.length, allowance.property).toBeGreaterThan(40);
      expect(allowance.sources.some((source) => source.startsWith("https://docs.aws.amazon.com/"))).toBe(true);
    }
  });
});

describe("the command", () => {
  /** The command on a machine whose PATH has Node and no cfn-lint, CI set to `ci` (unset if undefined). */
  function withoutCfnLint(ci: string | undefined) {
    const nodeOnly = dirname(process.execPath);
    expect(existsSync(join(nodeOnly, "cfn-lint"))).toBe(false);
    const { CI: _, ...env } = process.env;
    return spawnSync(join(projectRoot, "node_modules", ".bin", "tsx"), [SCRIPT], {
      cwd: projectRoot,
      encoding: "utf8",
      env: { ...env, PATH: nodeOnly, ...(ci === undefined ? {} : { CI: ci }) },
    });
  }

  it.each([undefined, "false", ""])(
    "outside CI (CI=%s), without cfn-lint: one line saying what was not linted and how to add it, exit 0",
    (ci) => {
      const result = withoutCfnLint(ci);

      expect(result.status).toBe(0);
      expect(result.stderr).toBe("");
      expect(result.stdout).toBe(
        `cfn-lint: not installed, so the CloudFormation templates were not linted (CI lints them); to lint them here: pip install cfn-lint==${CFN_LINT_VERSION}\n`,
      );
    },
  );

  it("in CI, names how to install cfn-lint, in one line and exit 2, on a machine without it", () => {
    const result = withoutCfnLint("true");

    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toEqual([
      `cfn-lint: not found on PATH; install AWS's CloudFormation linter with pip install cfn-lint==${CFN_LINT_VERSION} (https://github.com/aws-cloudformation/cfn-lint)`,
    ]);
  });

  it("refuses an unknown argument in one line, with its usage, and exit 2", () => {
    const result = spawnSync(join(projectRoot, "node_modules", ".bin", "tsx"), [SCRIPT, "--template", "x"], {
      cwd: projectRoot,
      encoding: "utf8",
    });

    expect(result.status).toBe(2);
    expect(result.stderr.trimEnd().split("\n")).toEqual([
      "cfn-lint: Unknown option '--template'. Usage: npm run lint:cfn [-- --assembly DIR]",
    ]);
  });

  it("is installed by the CI and deploy workflows, and the README tells a newcomer, at the version the allowances were reviewed against", () => {
    for (const file of [".github/workflows/ci.yml", ".github/workflows/deploy.yml", "README.md"]) {
      const text = readFileSync(join(projectRoot, file), "utf8");
      const pins = [...text.matchAll(/pip install cfn-lint==(\d+(?:\.\d+)*)/g)].map((match) => match[1]);
      expect(pins, file).toEqual([CFN_LINT_VERSION]);
    }
  });
});
