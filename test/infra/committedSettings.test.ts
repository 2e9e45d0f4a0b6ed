/**
 * Configuring the deploy keeps CI green: a copy of the project with docs/delivery.md's settings
 * block committed to cdk.json (and pushed: origin/main at that commit) passes the infrastructure
 * tests that read settings, `npm run synth` (the full synthesis, cdk-nag and the Control Tower
 * rules included) and the pipeline's readiness check for every stage. The other infrastructure tests
 * cannot see committed settings at all: they synthesize from cdk.json's feature flags only
 * (test/infra/app.ts), which the last test here holds.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { documentedSettings } from "../support/documentedSettings";
import { copyProject, gitIn } from "../support/git";
import { projectRoot } from "../support/processes";

const settings = documentedSettings("docs/delivery.md");
/** The infrastructure tests that read deployment settings or the committed cdk.json. */
const settingsTests = [
  "test/infra/settingsSource.test.ts",
  "test/infra/accountStacks.test.ts",
  "test/infra/deploySafety.test.ts",
  "test/infra/stageIsolation.test.ts",
];

let copy: string;
const git = gitIn(() => copy);
const run = (command: string, args: string[]) =>
  spawnSync(command, args, {
    cwd: copy,
    encoding: "utf8",
    env: { ...process.env, CI: "true", GITHUB_ACTIONS: "", GITHUB_STEP_SUMMARY: "", NO_COLOR: "1" },
    timeout: 240_000,
  });

beforeAll(() => {
  copy = copyProject("petstore-configured-");
  const cdkJson = JSON.parse(readFileSync(join(copy, "cdk.json"), "utf8")) as { context: Record<string, unknown> };
  writeFileSync(
    join(copy, "cdk.json"),
    `${JSON.stringify({ ...cdkJson, context: { ...cdkJson.context, ...settings } }, null, 2)}\n`,
  );
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "-m", "Configure the deploy");
  git("update-ref", "refs/remotes/origin/main", "HEAD");
}, 120_000);

afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
});

describe("a project whose deployment settings are committed as docs/delivery.md says", () => {
  it("commits settings for both stages (what the docs show is what is tested here)", () => {
    expect(Object.keys(settings).sort()).toEqual(
      ["prod:account", "prod:alarmEmails", "prod:region", "staging:account", "staging:region"].sort(),
    );
  });

  it("passes the infrastructure tests that read settings", () => {
    const result = run(process.execPath, [
      join(projectRoot, "node_modules/vitest/vitest.mjs"),
      "run",
      "--project",
      "infra",
      ...settingsTests,
    ]);

    expect(result.status, `${result.stdout}\n${result.stderr}`.slice(-4000)).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: vitest colours its summary
    expect(result.stdout.replace(/\u001b\[[0-9;]*m/g, "")).toMatch(
      new RegExp(`Test Files\\s+${settingsTests.length} passed`),
    );
  });

  it("synthesizes with npm run synth, checks included, with no warning for a pinned production", () => {
    const result = run("npm", ["run", "--silent", "synth"]);

    expect(result.status, `${result.stdout}\n${result.stderr}`.slice(-4000)).toBe(0);
    expect(result.stderr).not.toMatch(/has no alarm destination|Warning|Error/);
    const stacks = readdirSync(join(copy, "cdk.out")).filter((name) => name.endsWith(".assets.json"));
    expect(stacks.length).toBeGreaterThan(0);
  });

  it.each(Object.keys(deployedStages))("passes the pipeline's readiness check for %s", (stage) => {
    const result = run("npm", ["run", "--silent", "readiness", "--", "--stage", stage]);

    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout.trim()).toMatch(
      new RegExp(`^readiness: the pipeline may deploy ${stage}: pinned to \\d{12}/eu-west-1`),
    );
  });
});

describe("a committed ignoreRollbackAlarms for production", () => {
  it("is a warning in every synthesis and in the pipeline's job summary, not a failure", () => {
    const cdkJsonFile = join(copy, "cdk.json");
    const cdkJson = JSON.parse(readFileSync(cdkJsonFile, "utf8")) as { context: Record<string, unknown> };
    writeFileSync(
      cdkJsonFile,
      JSON.stringify({ ...cdkJson, context: { ...cdkJson.context, "prod:ignoreRollbackAlarms": true } }),
    );
    git("commit", "-q", "-am", "Ignore production's rollback alarms");
    git("update-ref", "refs/remotes/origin/main", "HEAD");
    const summary = join(copy, "summary.md");
    writeFileSync(summary, "");

    // The app as `cdk synth` runs it (no bundling: only the first lines matter here).
    const synth = spawnSync(process.execPath, ["--import", "tsx", "infra/app.ts"], {
      cwd: copy,
      encoding: "utf8",
      env: {
        ...process.env,
        CDK_OUTDIR: join(copy, "cdk.out.warning"),
        CDK_CONTEXT_JSON: JSON.stringify({
          ...cdkJson.context,
          "prod:ignoreRollbackAlarms": true,
          "aws:cdk:bundling-stacks": [],
        }),
      },
      timeout: 120_000,
    });
    const readinessRun = spawnSync("npm", ["run", "--silent", "readiness", "--", "--stage", "prod"], {
      cwd: copy,
      encoding: "utf8",
      env: { ...process.env, GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary },
    });

    expect(synth.status, synth.stderr).toBe(0);
    expect(synth.stderr).toMatch(
      /^Warning: cdk\.json commits prod:ignoreRollbackAlarms: every deploy of prod shifts traffic without watching its rollback alarms\./m,
    );
    expect(readinessRun.status, readinessRun.stderr).toBe(0);
    expect(readinessRun.stderr).toMatch(/^::warning::cdk\.json commits prod:ignoreRollbackAlarms/m);
    expect(readFileSync(summary, "utf8")).toContain("> cdk.json commits prod:ignoreRollbackAlarms");
  });
});

describe("infrastructure tests and the rehearsal", () => {
  it("read cdk.json only through its feature flags, so committed settings cannot change what they synthesize", () => {
    const readers = readdirSync(join(projectRoot, "test/infra"))
      .map((name) => `test/infra/${name}`)
      // This file edits the copy's cdk.json; it synthesizes nothing itself.
      .filter((file) => file !== "test/infra/committedSettings.test.ts")
      .concat(["scripts/rehearse/synth.ts"])
      .filter((file) => /(readFileSync|new URL)\([^)]*cdk\.json/.test(readFileSync(join(projectRoot, file), "utf8")));

    expect(readers).toEqual([]);
  });
});
