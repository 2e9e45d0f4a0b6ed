/**
 * `npm run release-check -- --base <ref>` as a developer and the pipeline run it, in a git copy of the
 * project: a commit that renames the table's construct fails with one line per stage's table saying
 * why, and writes the run's summary; the commit compared with itself passes; input it cannot work
 * with is one line and exit 2, never a stack trace.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { copyProject, gitIn } from "../support/git";
import { runToEnd } from "../support/processes";

let copy: string;
const git = gitIn(() => copy);

/** `npm run release-check -- <args>` in the copy, as CI runs it (no job summary unless asked). */
function releaseCheck(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "release-check", "--", ...args], {
      cwd: copy,
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

beforeAll(() => {
  copy = copyProject("petstore-release-check-");
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "-m", "Deployed");
  const dataStack = join(copy, "infra/stacks/dataStack.ts");
  const source = readFileSync(dataStack, "utf8");
  const renamed = source.replace('new dynamodb.TableV2(this, "Table",', 'new dynamodb.TableV2(this, "PetTable",');
  if (renamed === source) throw new Error("dataStack.ts no longer defines the table as the test expects");
  writeFileSync(dataStack, renamed);
  git("commit", "-q", "-am", "Rename the table's construct");
}, 120_000);

afterAll(() => {
  if (copy) rmSync(copy, { recursive: true, force: true });
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
      /^release-check: FAILED: 2 changes would replace or remove stateful resources or widen access \(\d+ stacks of the working tree \(commit \w{12}\) against HEAD~1 \(commit \w{12}\)\)\./,
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
        /^release-check: passed: \d+ stacks of the working tree \(commit \w{12}\) against HEAD \(commit \w{12}\); nothing stateful replaced or removed, no access widened\.$/,
      ),
    ]);
  });

  it.each([
    ["an unknown ref", ["--base", "no-such-ref"], /^release-check: no commit no-such-ref in this repository/],
    ["a ref git would take for an option", ["--base=--output=x"], /^release-check: --base must be a git ref/],
    ["no base at all", [], /^release-check: give either --base <git ref> or --first-release\. Usage: /],
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
