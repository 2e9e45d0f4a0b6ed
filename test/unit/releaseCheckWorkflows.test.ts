/**
 * Where the release gate runs (docs/delivery.md, docs/deploy.md "Stateful resources"): on every pull
 * request against the commit it merges into, and in the deploy pipeline against the commit production
 * runs, before production's approval is requested, with no AWS credentials and a token that reads
 * deployments only.
 */
import { describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { NODE_VERSIONS } from "../../scripts/nodeVersions";
import { jobOf, readWorkflow, type Step } from "../support/workflows";
import { mappingAt } from "../support/yamlMapping";

const checksOutHistory = (step: Step) =>
  step.uses?.startsWith("actions/checkout@") === true &&
  step.with["fetch-depth"] === "0" &&
  step.with["persist-credentials"] === "false";
const installs = (step: Step) => step.run === "npm ci --no-audit --no-fund";
const setsUpLambdaNode = (step: Step) =>
  step.uses?.startsWith("actions/setup-node@") === true && step.with["node-version"] === NODE_VERSIONS.lambda;

describe("the release check of a pull request (ci.yml)", () => {
  const check = jobOf("ci.yml", "release-check");
  const run = check.steps.find((step) => step.run.includes("npm run release-check")) as Step;

  it("runs for pull requests only: the deploy pipeline, which calls CI too, runs its own against production", () => {
    expect(check.if).toBe("github.event_name == 'pull_request'");
  });

  it("compares with the commit the pull request merges into, from the whole history, on the Lambda Node.js", () => {
    expect(run.run).toBe('npm run release-check -- --base "$BASE"');
    expect(run.env).toEqual({ BASE: `\${{ github.event.pull_request.base.sha }}` });
    const checkout = check.steps.findIndex(checksOutHistory);
    expect(checkout).toBe(0);
    expect(check.steps.findIndex(setsUpLambdaNode)).toBeGreaterThan(checkout);
    expect(check.steps.findIndex(installs)).toBeLessThan(check.steps.indexOf(run));
  });

  it("asks for no permission beyond the workflow's read-only one", () => {
    expect(check.keys).not.toContain("permissions");
    expect(mappingAt(readWorkflow("ci.yml"), ["permissions"]).get("contents")?.value).toBe("read");
  });
});

describe("the release check of the deploy pipeline (deploy.yml)", () => {
  const check = jobOf("deploy.yml", "release-check");
  const production = jobOf("deploy.yml", "production");
  const find = check.steps.find((step) => step.run.includes("scripts/releaseCheck/deployedCommit.ts")) as Step;
  const compare = check.steps.find((step) => step.run.includes("npm run release-check")) as Step;

  it("must pass before production's approval is requested, and runs only after CI and the assembly", () => {
    expect(production.needs).toContain("release-check");
    expect(check.needs).toEqual(["assembly"]);
  });

  it("reads the repository and its deployments, and nothing else: no AWS credentials, no environment", () => {
    expect(check.permissions).toEqual({ contents: "read", deployments: "read" });
    expect(check.keys).not.toContain("environment");
    expect(check.steps.filter((step) => step.uses?.startsWith("aws-actions/"))).toEqual([]);
  });

  it("compares with the commit last deployed to production, from the whole history", () => {
    expect(check.env.ENVIRONMENT).toBe(deployedStages.prod.githubEnvironment);
    expect(find.run).toBe('npx tsx scripts/releaseCheck/deployedCommit.ts "$ENVIRONMENT" >> "$GITHUB_OUTPUT"');
    expect(find.env).toEqual({ GITHUB_TOKEN: `\${{ github.token }}` });
    expect(compare.env).toEqual({ BASE: `\${{ steps.deployed.outputs.commit }}` });
    expect(check.steps.findIndex(checksOutHistory)).toBe(0);
    expect(check.steps.findIndex(setsUpLambdaNode)).toBeGreaterThan(0);
    expect(check.steps.indexOf(find)).toBeLessThan(check.steps.indexOf(compare));
  });

  it("compares with nothing only when production has never been deployed", () => {
    expect(compare.run.split("\n")).toEqual([
      'if [ -n "$BASE" ]; then',
      'npm run release-check -- --base "$BASE"',
      "else",
      'echo "::notice::$ENVIRONMENT has no successful deployment yet: every resource is new."',
      "npm run release-check -- --first-release",
      "fi",
    ]);
  });
});
