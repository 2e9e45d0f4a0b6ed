/**
 * On a Node.js below package.json `engines`, every npm script stops at once with one line naming
 * the supported range and the running version (scripts/requireNode.mjs), instead of failing later
 * in ways that do not name the cause. `npm install` and `npm ci` stop there too, in seconds and
 * before downloading anything (.npmrc's engine-strict), except where .ci/run turns that off to
 * install with the machine's Node.
 */
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
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

  it("is not an install step (npm runs the project's preinstall only after installing its dependencies)", () => {
    const installScripts = ["preinstall", "install", "postinstall", "prepare", "preprepare", "postprepare"];

    expect(Object.keys(packageJson.scripts).filter((name) => installScripts.includes(name))).toEqual([]);
  });
});

/** npm's own script (npm-cli.js): the npm on PATH, whichever Node it ships with. */
function npmCli(): string {
  if (process.env.npm_execpath?.endsWith("npm-cli.js")) return process.env.npm_execpath;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (existsSync(join(dir, "npm"))) return realpathSync(join(dir, "npm"));
  }
  throw new Error("no npm on PATH");
}

/**
 * `npm install` in a project with this one's engines and .npmrc but no dependencies, run by `node`
 * (this Node, told it is `version` when given: npm 11 reads process.version for its engines check).
 */
async function install(options: { version?: string; node?: string; flags?: string[] }) {
  const dir = mkdtempSync(join(tmpdir(), "engine-strict-"));
  installDirs.push(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "engines-only", engines: packageJson.engines }));
  copyFileSync(join(projectRoot, ".npmrc"), join(dir, ".npmrc"));
  const fake =
    options.version === undefined
      ? []
      : [
          "--import",
          `data:text/javascript,${encodeURIComponent(
            `Object.defineProperty(process, "version", { value: "v${options.version}" });` +
              `Object.defineProperty(process.versions, "node", { value: "${options.version}" });`,
          )}`,
        ];
  // The npm running this test exports its settings as npm_config_*; local_prefix among them would
  // point the inner npm at this checkout.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_config_/i.test(name)));
  const args = [...fake, npmCli(), "install", "--no-audit", "--no-fund", "--logs-max=0", ...(options.flags ?? [])];
  const started = Date.now();
  try {
    await promisify(execFile)(options.node ?? process.execPath, args, { cwd: dir, env });
    return { code: 0, stderr: "", seconds: (Date.now() - started) / 1000 };
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr, seconds: (Date.now() - started) / 1000 };
  }
}
const installDirs: string[] = [];
afterAll(() => {
  for (const dir of installDirs) rmSync(dir, { recursive: true, force: true });
});

/** A real Node below the range, where the machine has one (/usr/bin/node is 20 on the project's box). */
const oldNode = ["/usr/bin/node"].find(
  (node) =>
    existsSync(node) && Number(/^v(\d+)\./.exec(execFileSync(node, ["--version"], { encoding: "utf8" }))?.[1]) < major,
);

describe("npm install on a Node.js below package.json engines", { timeout: 60_000 }, () => {
  it(`${justBelow}: stops at once with EBADENGINE naming the range`, async () => {
    const result = await install({ version: justBelow });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain("EBADENGINE");
    expect(result.stderr).toContain(`Required: {"node":"${range}"}`);
    expect(result.seconds).toBeLessThan(30);
  });

  it.runIf(oldNode)(`${oldNode}, a real older Node, is stopped the same way`, async () => {
    const result = await install({ node: oldNode });

    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`Required: {"node":"${range}"}`);
  });

  it(`${range.replace(/^>=/, "")}: installs`, async () => {
    expect((await install({ version: range.replace(/^>=/, "") })).code).toBe(0);
  });

  it("installs with --engine-strict=false, which .ci/run's npm ci passes to install with the machine's Node", async () => {
    const ciInstall = readFileSync(join(projectRoot, ".ci/run"), "utf8")
      .split("\n")
      .filter((line) => /^\s*npm ci\b/.test(line));

    expect((await install({ version: justBelow, flags: ["--engine-strict=false"] })).code).toBe(0);
    expect(ciInstall).toHaveLength(1);
    expect(ciInstall[0]).toContain("--engine-strict=false");
  });
});
