/**
 * On a Node.js below package.json `engines`, every npm script stops at once with one line naming
 * the supported range and the running version (scripts/requireNode.mjs), instead of failing later
 * in ways that do not name the cause; `npm ci` itself keeps working there (.ci/run installs with
 * the machine's Node).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../support/processes";

const packageJson = JSON.parse(readFileSync(join(projectRoot, "package.json"), "utf8")) as {
  engines: { node: string };
  scripts: Record<string, string>;
};
const GUARD = "node scripts/requireNode.mjs && ";
const range = packageJson.engines.node;
const [major = 0, minor = 0] = range.replace(/^>=/, "").split(".").map(Number);
/** The last release before the range: the newest version the guard must refuse. */
const justBelow = minor > 0 ? `${major}.${minor - 1}.99` : `${major - 1}.99.99`;

/** The guard run by this (supported) Node, told it is `version` when given. */
async function guard(version?: string) {
  const fake = `Object.defineProperty(process.versions, "node", { value: ${JSON.stringify(version)} });`;
  const args = version === undefined ? [] : ["--import", `data:text/javascript,${encodeURIComponent(fake)}`];
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...args, "scripts/requireNode.mjs"], {
      cwd: projectRoot,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

describe("a Node.js below package.json engines", () => {
  it.each(["20.20.0", "18.20.4", justBelow])(
    "%s: one line naming the range and this version, exit 1",
    async (version) => {
      const result = await guard(version);

      expect(result).toEqual({
        code: 1,
        stdout: "",
        stderr: `Pet Store needs Node.js ${range} (this is ${version}). Install it (e.g. nvm install) and run npm install again.\n`,
      });
    },
  );

  it.each([range.replace(/^>=/, ""), `${major}.${minor}.10`, `${major + 2}.0.0`])(
    "%s: nothing printed, exit 0",
    async (version) => {
      expect(await guard(version)).toEqual({ code: 0, stdout: "", stderr: "" });
    },
  );

  it("lets the Node running the tests through, silently", async () => {
    expect(await guard()).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("is the first step of every npm script", () => {
    const unguarded = Object.entries(packageJson.scripts).filter(([, command]) => !command.startsWith(GUARD));

    expect(unguarded).toEqual([]);
  });

  it("is the first step of the CDK app, so a direct npx cdk is refused too", () => {
    const cdkJson = JSON.parse(readFileSync(join(projectRoot, "cdk.json"), "utf8")) as { app: string };

    expect(cdkJson.app.startsWith(GUARD)).toBe(true);
  });

  it("is not an install step: npm ci on an older Node only warns, as .ci/run needs", () => {
    const installScripts = ["preinstall", "install", "postinstall", "prepare", "preprepare", "postprepare"];

    expect(Object.keys(packageJson.scripts).filter((name) => installScripts.includes(name))).toEqual([]);
  });
});
