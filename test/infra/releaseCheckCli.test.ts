/**
 * `npm run release-check -- --base <ref>` as a developer and the pipeline run it, in a git copy of the
 * project whose production stage is pinned to an account and region: a commit that renames the
 * table's construct fails with one line per stage's table saying why, and writes the run's summary;
 * the commit compared with itself passes; point-in-time recovery switched off and an index deleted
 * fail; production moved to another region fails once per stateful resource, without IAM noise; a
 * base whose locked dependencies cannot be installed fails in one line until acknowledged, and then
 * passes compared with nothing, saying so; input it cannot work with is one line and exit 2, never a
 * stack trace. Further commits are made in worktrees of the same repository, one per case.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { copyProject, gitIn } from "../support/git";
import { projectRoot, runToEnd } from "../support/processes";

let copy: string;
/** Worktrees of the copy's repository, one per further case. */
let trees: string;
let deployed: string;
const git = gitIn(() => copy);

/** `npm run release-check -- <args>` in the copy, as CI runs it (no job summary unless asked). */
function releaseCheck(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return releaseCheckIn(copy, ...args);
}

function releaseCheckIn(
  directory: string,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "release-check", "--", ...args], {
      cwd: directory,
      env: { ...process.env, GITHUB_STEP_SUMMARY: "", NO_COLOR: "1" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Production's account and region in cdk.json's context, as a team commits them. */
function pinProduction(directory: string, region: string, account = "111111111111") {
  const file = join(directory, "cdk.json");
  const cdkJson = JSON.parse(readFileSync(file, "utf8")) as { context: Record<string, unknown> };
  cdkJson.context["prod:account"] = account;
  cdkJson.context["prod:region"] = region;
  writeFileSync(file, `${JSON.stringify(cdkJson, null, 2)}\n`);
}

/** A worktree of the copy's repository at the deployed commit, with the project's dependencies linked in. */
function worktree(name: string): { directory: string; git: (...args: string[]) => string } {
  const directory = join(trees, name);
  git("worktree", "add", "-q", "-b", name, directory, deployed);
  // The copy's node_modules link is committed with it (.gitignore's `node_modules/` matches directories only).
  if (!existsSync(join(directory, "node_modules"))) {
    symlinkSync(join(projectRoot, "node_modules"), join(directory, "node_modules"));
  }
  return { directory, git: gitIn(() => directory) };
}

/** Edits a file of a worktree, failing loudly when the code no longer reads as the test expects. */
function edit(directory: string, path: string, from: string | RegExp, to: string) {
  const file = join(directory, path);
  const source = readFileSync(file, "utf8");
  if (typeof from === "string" ? !source.includes(from) : !from.test(source)) {
    throw new Error(`${path} no longer contains ${from}`);
  }
  writeFileSync(file, source.replace(from, to));
}

beforeAll(() => {
  copy = copyProject("petstore-release-check-");
  trees = mkdtempSync(join(tmpdir(), "petstore-release-check-trees-"));
  git("init", "-q", "-b", "main");
  pinProduction(copy, "eu-west-1");
  git("add", "-A");
  git("commit", "-q", "-m", "Deployed");
  deployed = git("rev-parse", "HEAD").trim();
  const dataStack = join(copy, "infra/stacks/dataStack.ts");
  const source = readFileSync(dataStack, "utf8");
  const renamed = source.replace('new dynamodb.TableV2(this, "Table",', 'new dynamodb.TableV2(this, "PetTable",');
  if (renamed === source) throw new Error("dataStack.ts no longer defines the table as the test expects");
  writeFileSync(dataStack, renamed);
  git("commit", "-q", "-am", "Rename the table's construct");
}, 120_000);

afterAll(() => {
  for (const directory of [copy, trees]) if (directory) rmSync(directory, { recursive: true, force: true });
});

describe("npm run release-check", () => {
  it("fails a commit that renames the table's construct, saying why in one line per table, and passes it against itself", async () => {
    const summary = join(copy, "summary.md");
    writeFileSync(summary, "# Earlier steps\n");

    const [renamed, itself] = await Promise.all([
      releaseCheck("--base", "HEAD~1", "--summary", summary),
      releaseCheck("--base", "HEAD"),
    ]);

    expect(renamed.code, renamed.stderr).toBe(1);
    const lines = renamed.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^release-check: FAILED: 2 changes would replace, remove, move or weaken stateful resources or widen access \(\d+ stacks of the working tree \(commit \w{12}\) against HEAD~1 \(commit \w{12}\)\)\./,
    );
    expect(lines.slice(1)).toEqual(
      [deployedStages.prod, deployedStages.staging].map((stage) =>
        expect.stringMatching(
          new RegExp(
            `^FAIL ${stage.dataStackName} TableCD117FA1 \\(AWS::DynamoDB::GlobalTable\\) remove: removed from the template: .*; PetTable\\w+ of the same type is added instead: a renamed or moved construct gets a new logical id, which CloudFormation creates as a new, empty resource$`,
          ),
        ),
      ),
    );
    const markdown = readFileSync(summary, "utf8");
    expect(markdown).toMatch(/^# Earlier steps\n### Release check: /);
    expect(markdown).toContain("[-] AWS::DynamoDB::GlobalTable PetStoreData/Table TableCD117FA1 orphan");

    expect(itself.code, itself.stderr).toBe(0);
    expect(itself.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^release-check: passed: \d+ stacks of the working tree \(commit \w{12}\) against HEAD \(commit \w{12}\); nothing stateful replaced, removed, moved or weakened, no access widened\.$/,
      ),
    ]);
  });

  it("fails a commit that switches point-in-time recovery off and deletes the index, once per stage's table and change", async () => {
    const data = worktree("data");
    edit(
      data.directory,
      "infra/stacks/dataStack.ts",
      // CloudFormation takes no recovery period without point-in-time recovery: both go.
      /pointInTimeRecoveryEnabled: true,\s*recoveryPeriodInDays: [^,]+,/,
      "pointInTimeRecoveryEnabled: false,",
    );
    edit(
      data.directory,
      "infra/stacks/dataStack.ts",
      "globalSecondaryIndexes: petTable.globalSecondaryIndexes.map(",
      "globalSecondaryIndexes: petTable.globalSecondaryIndexes.slice(1).map(",
    );
    data.git("commit", "-q", "-am", "No point-in-time recovery, no index by status");

    const result = await releaseCheckIn(data.directory, "--base", deployed);

    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout.trim().split("\n").slice(1)).toEqual(
      [deployedStages.prod, deployedStages.staging].flatMap((stage) => [
        `FAIL ${stage.dataStackName} TableCD117FA1 (AWS::DynamoDB::GlobalTable) backup-weakened: point-in-time recovery is switched off: its 35 days of continuous backups are deleted, and nothing is left to restore from`,
        `FAIL ${stage.dataStackName} TableCD117FA1 (AWS::DynamoDB::GlobalTable) index-removed: global secondary index byStatus is deleted: queries on it fail at once, and adding it back builds it again from the whole table`,
      ]),
    );
  });

  it("fails a commit that shortens production's recovery period, drops its deletion protection and renames the TTL attribute", async () => {
    const settings = worktree("settings");
    edit(
      settings.directory,
      "infra/config.ts",
      /deletionProtection: true,\s*pointInTimeRecoveryDays: 35,/,
      "deletionProtection: false, pointInTimeRecoveryDays: 1,",
    );
    edit(settings.directory, "lib/db/table.ts", 'timeToLiveAttribute: "expiresAt"', 'timeToLiveAttribute: "expiresOn"');
    settings.git("commit", "-q", "-am", "A day of backups, no deletion protection, another TTL attribute");

    const result = await releaseCheckIn(settings.directory, "--base", deployed);

    expect(result.code, result.stderr).toBe(1);
    const kinds = result.stdout
      .trim()
      .split("\n")
      .slice(1)
      .map(
        (line) =>
          /^FAIL (\S+) TableCD117FA1 \(AWS::DynamoDB::GlobalTable\) ([\w-]+): /.exec(line)?.slice(1).join(" ") ?? line,
      );
    expect(kinds.sort()).toEqual(
      [
        `${deployedStages.prod.dataStackName} backup-weakened`,
        `${deployedStages.prod.dataStackName} protection-weakened`,
        `${deployedStages.prod.dataStackName} ttl-changed`,
        `${deployedStages.staging.dataStackName} ttl-changed`,
      ].sort(),
    );
  });

  it("fails a commit that moves production to another account once per stateful resource, with no IAM widening", async () => {
    const moved = worktree("account");
    pinProduction(moved.directory, "eu-west-1", "222222222222");
    moved.git("commit", "-q", "-am", "Production in another account");

    const result = await releaseCheckIn(moved.directory, "--base", deployed);

    expect(result.code, result.stderr).toBe(1);
    const findings = result.stdout.trim().split("\n").slice(1);
    expect(findings).toContain(
      `FAIL ${deployedStages.prod.dataStackName} TableCD117FA1 (AWS::DynamoDB::GlobalTable) moved: the stack moves from aws://111111111111/eu-west-1 to aws://222222222222/eu-west-1: the release creates a new, empty AWS::DynamoDB::GlobalTable in account 222222222222, and the deployed one stays in aws://111111111111/eu-west-1 with its data`,
    );
    expect(
      findings.filter((line) => !/^FAIL (Production-|PetStore-Account)\S* \S+ \(AWS::[\w:]+\) moved: /.test(line)),
    ).toEqual([]);
  });

  it("fails a commit that moves production to another region once per stateful resource, with no IAM widening", async () => {
    const moved = worktree("moved");
    pinProduction(moved.directory, "us-east-1");
    moved.git("commit", "-q", "-am", "Production in us-east-1");

    const result = await releaseCheckIn(moved.directory, "--base", deployed);

    expect(result.code, result.stderr).toBe(1);
    const findings = result.stdout.trim().split("\n").slice(1);
    expect(findings).toContain(
      `FAIL ${deployedStages.prod.dataStackName} TableCD117FA1 (AWS::DynamoDB::GlobalTable) moved: the stack moves from aws://111111111111/eu-west-1 to aws://111111111111/us-east-1: the release creates a new, empty AWS::DynamoDB::GlobalTable in region us-east-1, and the deployed one stays in aws://111111111111/eu-west-1 with its data`,
    );
    expect(findings.length).toBeGreaterThan(1);
    expect(
      findings.filter((line) => !/^FAIL (Production-|PetStore-Account)\S* \S+ \(AWS::[\w:]+\) moved: /.test(line)),
    ).toEqual([]);
  });

  it("builds a base whose locked dependencies differ with its own, installed from its lock, and says so", async () => {
    const locked = worktree("locked");
    // Any change to the lock makes the deployed commit's dependencies another set than the working tree's.
    // The project's own version: once in package.json, twice at the top of the lock.
    for (const path of ["package.json", "package-lock.json", "package-lock.json"]) {
      edit(locked.directory, path, '"version": "1.0.0"', '"version": "1.0.1"');
    }
    locked.git("commit", "-q", "-am", "Version 1.0.1");
    const summary = join(trees, "locked-summary.md");

    const result = await releaseCheckIn(locked.directory, "--base", deployed, "--summary", summary);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^release-check: passed: /);
    expect(readFileSync(summary, "utf8")).toContain("the base was built with its own locked dependencies (npm ci)");
  });

  it("fails on a base whose locked dependencies cannot be installed in one line, and passes it once acknowledged, compared with nothing", async () => {
    const deps = worktree("deps");
    writeFileSync(join(deps.directory, "package-lock.json"), '{ "lockfileVersion": 3, "packages": ');
    deps.git("commit", "-q", "-am", "A lock cut short by a bad merge");
    const unbuildable = deps.git("rev-parse", "HEAD").trim();
    deps.git("checkout", "-q", deployed, "--", "package-lock.json");
    deps.git("commit", "-q", "-m", "The lock again");

    const refused = await releaseCheckIn(deps.directory, "--base", "HEAD~1");
    writeFileSync(
      join(deps.directory, "release-acknowledgements.json"),
      JSON.stringify({
        acknowledgements: [
          { change: "unbuildable-base", base: unbuildable.slice(0, 12), reason: "Its lock was cut short." },
        ],
      }),
    );
    const acknowledged = await releaseCheckIn(deps.directory, "--base", "HEAD~1");

    expect(refused.code, refused.stderr).toBe(1);
    const [summary, ...findings] = refused.stdout.trim().split("\n");
    expect(summary).toMatch(
      /^release-check: FAILED: 1 change would .* against NOTHING, because HEAD~1 \(commit \w{12}\) cannot be built: every resource counts as new and nothing was compared\)\./,
    );
    expect(findings).toEqual([
      `FAIL ${unbuildable} unbuildable-base: cannot build HEAD~1 (commit ${unbuildable.slice(0, 12)}): npm ci --ignore-scripts --no-audit --no-fund --prefer-offline of its package-lock.json failed: The \`npm ci\` command can only install with an existing package-lock.json or; to release anyway, comparing with nothing, acknowledge it in release-acknowledgements.json: {"change":"unbuildable-base","base":"${unbuildable}","reason":"<why>"} (docs/deploy.md, "A base that cannot be built")`,
    ]);

    expect(acknowledged.code, acknowledged.stderr).toBe(0);
    expect(acknowledged.stdout.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^release-check: passed: (\d+) stacks of the working tree \(commit \w{12} with uncommitted changes\) against NOTHING, because HEAD~1 \(commit \w{12}\) cannot be built: every resource counts as new and nothing was compared; every finding is acknowledged \(\1 new stacks, nothing to compare with, 1 acknowledged\)\.$/,
      ),
      expect.stringMatching(
        new RegExp(
          `^acknowledged ${unbuildable} unbuildable-base: cannot build .* \\(reason: Its lock was cut short\\.\\)$`,
        ),
      ),
    ]);
  });

  it("refuses a --base-assembly that is not a cloud assembly, in one line, exit 2", async () => {
    const result = await releaseCheck("--base-assembly", "infra");

    expect([result.code, result.stdout]).toEqual([2, ""]);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(new RegExp(`^release-check: ${copy}/infra is not a cloud assembly \\(cdk\\.out\\): `)),
    ]);
  });

  it.each([
    ["an unknown ref", ["--base", "no-such-ref"], /^release-check: no commit no-such-ref in this repository/],
    ["a ref git would take for an option", ["--base=--output=x"], /^release-check: --base must be a git ref/],
    [
      "no base at all",
      [],
      /^release-check: give one of --base <git ref>, --base-assembly <dir> or --first-release\. Usage: /,
    ],
    ["an unknown option", ["--bogus"], /^release-check: Unknown option '--bogus'\. Usage: /],
  ])("refuses %s in one line, exit 2", async (_, args, message) => {
    const result = await releaseCheck(...args);

    expect([result.code, result.stdout]).toEqual([2, ""]);
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(message)]);
  });

  it("refuses a base that is not a commit of this app, in one line, exit 2", async () => {
    const emptyTree = git("hash-object", "-t", "tree", "/dev/null").trim();
    const unrelated = git("commit-tree", emptyTree, "-m", "Before the app").trim();

    const result = await releaseCheck("--base", unrelated);

    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `release-check: ${unrelated} (commit ${unrelated.slice(0, 12)}) has no infra/app.ts: it is not a commit of this app.`,
    );
  });

  it("refuses to run outside a git checkout, in one line, exit 2", async () => {
    const notACheckout = mkdtempSync(join(tmpdir(), "release-check-no-git-"));
    mkdirSync(join(notACheckout, "infra"));
    writeFileSync(join(notACheckout, "infra", "app.ts"), "");
    try {
      const result = await runToEnd("scripts/releaseCheck/main.ts", ["--base", "main"], { cwd: notACheckout });

      expect(result.code).toBe(2);
      expect(result.output.trim()).toBe(
        `release-check: ${notACheckout} is not a git checkout: the base is read from git.`,
      );
    } finally {
      rmSync(notACheckout, { recursive: true, force: true });
    }
  });
});
