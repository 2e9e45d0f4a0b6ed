/**
 * The supported Node versions are written once (package.json `engines`), follow the locked
 * dependencies' own `engines`, and are the versions CI tests on (scripts/nodeVersions.ts pins them;
 * .ci/run and the GitHub workflow use them, the README names them).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { NODE_VERSIONS } from "../../scripts/nodeVersions";
import { projectRoot } from "../support/processes";
import { mappingAt } from "../support/yamlMapping";

const read = (path: string) => readFileSync(join(projectRoot, path), "utf8");
const packageJson = JSON.parse(read("package.json")) as { engines: { node: string } };
const lockfile = JSON.parse(read("package-lock.json")) as {
  packages: Record<string, { engines?: { node?: string } | string[] }>;
};

/** Every locked package's `engines.node` range, by package path. */
const dependencyRanges = Object.entries(lockfile.packages)
  .filter(([path]) => path !== "")
  .flatMap(([path, entry]) => {
    const range = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
    return range === undefined ? [] : [{ path, range }];
  });

describe("supported Node versions", () => {
  it("package.json engines starts at the lowest tested version", () => {
    expect(packageJson.engines.node).toBe(`>=${NODE_VERSIONS.lowest}`);
  });

  it("the lowest supported version satisfies every locked dependency's engines, and the release before it does not", () => {
    const refusing = (version: string) =>
      dependencyRanges.filter(({ range }) => !semver.satisfies(version, range)).map(({ path }) => path);

    expect(refusing(NODE_VERSIONS.lowest)).toEqual([]);
    expect(refusing(NODE_VERSIONS.lambda)).toEqual([]);
    // One minor version lower already breaks a dependency: the floor is no higher than it must be.
    const below = `${semver.major(NODE_VERSIONS.lowest)}.${semver.minor(NODE_VERSIONS.lowest) - 1}.0`;
    expect(refusing(below)).not.toEqual([]);
  });

  it(".nvmrc (what nvm install reads) is the lowest supported version, where engines starts", () => {
    expect(read(".nvmrc").trim()).toBe(NODE_VERSIONS.lowest);
    expect(packageJson.engines.node).toBe(`>=${read(".nvmrc").trim()}`);
  });

  it("the Lambda version is a 24.x release, the runtime's major version", () => {
    expect(semver.major(NODE_VERSIONS.lambda)).toBe(24);
  });

  it("the README names the supported range and both tested versions", () => {
    const readme = read("README.md");
    expect(readme).toContain(`${NODE_VERSIONS.lowest} or newer`);
    expect(readme).toMatch(new RegExp(`tests run on ${NODE_VERSIONS.lowest.replaceAll(".", "\\.")} and on 24`));
  });

  it(".ci/run tests on both pinned versions and not on the machine's own Node", () => {
    const script = read(".ci/run");
    const runs = [...script.matchAll(/^PATH="\$(\w+)_dir:\$PATH" run_tests/gm)].map((match) => match[1]);
    expect(runs).toEqual(["lowest", "lambda"]);
    for (const name of ["lowest", "lambda"]) {
      expect(script).toContain(`${name}_dir="$(npx --no-install tsx scripts/nodeVersions.ts ${name})"`);
    }
    // Every npm test run has a pinned Node first on PATH.
    expect(script.match(/run_tests "/g)).toHaveLength(2);
    // And the slow files npm test leaves out run once, on Node 24.
    expect(script).toMatch(/^if PATH="\$lambda_dir:\$PATH" npm run test:slow; then$/m);
  });

  it("the CI workflow's matrix is exactly the pinned versions", () => {
    const matrix = mappingAt(read(".github/workflows/ci.yml"), ["jobs", "test", "strategy", "matrix"]);
    const versions = JSON.parse(matrix.get("node-version")?.value ?? "null");
    expect(versions).toEqual([NODE_VERSIONS.lowest, NODE_VERSIONS.lambda]);
  });
});
