/**
 * The release check's parts that need no synthesis (scripts/releaseCheck/): what counts as stateful,
 * the acknowledgements file, the arguments, the lines it prints, how the pipeline finds the commit
 * production runs, and what docs/deploy.md says about it and about stack policies.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  ACKNOWLEDGEMENTS_FILE,
  type Acknowledgement,
  AcknowledgementsError,
  acknowledges,
  judge,
  parseAcknowledgements,
  readAcknowledgements,
} from "../../scripts/releaseCheck/acknowledgements";
import { CHANGE_KINDS, type Finding, type StackComparison } from "../../scripts/releaseCheck/compare";
import {
  DeployedCommitError,
  deployedCommitLine,
  type GitHubGet,
  lastSuccessfulDeployment,
} from "../../scripts/releaseCheck/deployedCommit";
import { parseReleaseCheckArguments } from "../../scripts/releaseCheck/main";
import { findingLines, summaryLine } from "../../scripts/releaseCheck/report";
import { isStateful, STATEFUL_TYPES, statefulResources } from "../../scripts/releaseCheck/stateful";
import { dependencyNote, ReleaseCheckInputError } from "../../scripts/releaseCheck/synthesize";
import { gitIn } from "../support/git";
import { projectRoot } from "../support/processes";

const read = (path: string) => readFileSync(join(projectRoot, path), "utf8");
const deployDoc = read("docs/deploy.md");
/** The subsection of docs/deploy.md about the release gate. */
const gateSection = deployDoc.slice(
  deployDoc.indexOf("### The release gate"),
  deployDoc.indexOf("\n## ", deployDoc.indexOf("### The release gate")),
);

const finding = (overrides: Partial<Finding> = {}): Finding => ({
  stack: "Production-PetStoreData",
  logicalId: "TableCD117FA1",
  resourceType: "AWS::DynamoDB::GlobalTable",
  change: "replace",
  detail: "would be replaced (KeySchema changes): …",
  ...overrides,
});

describe("what counts as stateful", () => {
  it("is what holds data by its type, or what the template retains, whatever its type", () => {
    expect(isStateful({ Type: "AWS::S3::Bucket" })).toBe(true);
    expect(isStateful({ Type: "AWS::Logs::LogGroup", DeletionPolicy: "Delete" })).toBe(true);
    expect(isStateful({ Type: "AWS::IAM::Role", DeletionPolicy: "RetainExceptOnCreate" })).toBe(true);
    expect(isStateful({ Type: "AWS::Lambda::Function" })).toBe(false);
    expect(isStateful({ Type: "AWS::IAM::Role", DeletionPolicy: "Delete" })).toBe(false);
  });

  it("is never what is replaced by design: a retained Lambda version, an API Gateway deployment", () => {
    expect(isStateful({ Type: "AWS::Lambda::Version", DeletionPolicy: "Retain" })).toBe(false);
    expect(isStateful({ Type: "AWS::ApiGateway::Deployment", DeletionPolicy: "Retain" })).toBe(false);
  });

  it("lists a template's stateful resources by logical id, with CloudFormation's default deletion policy", () => {
    expect(
      statefulResources({
        Resources: {
          Queue: { Type: "AWS::SQS::Queue" },
          Function: { Type: "AWS::Lambda::Function" },
          Key: { Type: "AWS::KMS::Key", DeletionPolicy: "Retain" },
        },
      }),
    ).toEqual([
      { logicalId: "Key", type: "AWS::KMS::Key", deletionPolicy: "Retain" },
      { logicalId: "Queue", type: "AWS::SQS::Queue", deletionPolicy: "Delete" },
    ]);
  });

  it("covers the types docs/deploy.md names", () => {
    for (const type of [
      "AWS::DynamoDB::GlobalTable",
      "AWS::KMS::Key",
      "AWS::SecretsManager::Secret",
      "AWS::Logs::LogGroup",
      "AWS::S3::Bucket",
    ]) {
      expect(STATEFUL_TYPES.has(type), type).toBe(true);
    }
  });
});

describe("release-acknowledgements.json", () => {
  const entry = {
    stack: "*-PetStoreData",
    logicalId: "TableCD117FA1",
    change: "replace",
    reason: "Exported to S3 first.",
  };
  const file = (acknowledgements: unknown[]) => JSON.stringify({ acknowledgements });

  it("is committed, and valid", () => {
    expect(() => readAcknowledgements(join(projectRoot, ACKNOWLEDGEMENTS_FILE))).not.toThrow();
  });

  it("reads the example docs/deploy.md gives", () => {
    const example = /```json\n([\s\S]*?)```/.exec(gateSection)?.[1] ?? "";

    expect(parseAcknowledgements(example)).toEqual([{ ...entry, reason: expect.any(String) }]);
  });

  it.each([
    ["not JSON", "{", "release-acknowledgements.json is not valid JSON."],
    ["without the list", "{}", 'release-acknowledgements.json must be an object with an "acknowledgements" list.'],
    [
      "an entry without a reason",
      file([{ ...entry, reason: undefined }]),
      'release-acknowledgements.json, acknowledgement 1 needs a non-empty "reason".',
    ],
    [
      "an empty reason",
      file([entry, { ...entry, reason: "  " }]),
      'release-acknowledgements.json, acknowledgement 2 needs a non-empty "reason".',
    ],
    [
      "an unknown kind of change",
      file([{ ...entry, change: "rename" }]),
      `release-acknowledgements.json, acknowledgement 1 has change "rename"; expected one of ${CHANGE_KINDS.join(", ")}.`,
    ],
    [
      "an unknown key",
      file([{ ...entry, until: "2026-01-01" }]),
      "release-acknowledgements.json, acknowledgement 1 has unknown keys until; expected stack, logicalId, change, reason.",
    ],
  ])("refuses %s, in one line", (_, text, message) => {
    expect(() => parseAcknowledgements(text)).toThrow(new AcknowledgementsError(message));
  });

  it("matches a finding by stack (with * for any characters), logical id and kind of change", () => {
    const acknowledgement = parseAcknowledgements(file([entry]))[0] as Acknowledgement;

    expect(acknowledges(acknowledgement, finding())).toBe(true);
    expect(acknowledges(acknowledgement, finding({ stack: "Staging-PetStoreData" }))).toBe(true);
    expect(acknowledges(acknowledgement, finding({ stack: "Production-PetStore" }))).toBe(false);
    expect(acknowledges(acknowledgement, finding({ logicalId: "TableCD117FA2" }))).toBe(false);
    expect(acknowledges(acknowledgement, finding({ change: "remove" }))).toBe(false);
  });

  it("names the kinds of change docs/deploy.md lists", () => {
    const documented = [...gateSection.matchAll(/^\| `([a-z-]+)` \|/gm)].map((match) => match[1]);

    expect(documented).toEqual([...CHANGE_KINDS]);
  });
});

describe("what the check prints", () => {
  const context = { head: "the working tree (commit 1a2b3c4d5e6f)", base: "origin/main (commit 0f1e2d3c4b5a)" };

  it("fails with one summary line, then one line per finding", () => {
    const verdict = judge([finding(), finding({ stack: "Staging-PetStoreData" })], []);

    expect([summaryLine([], verdict, context), ...findingLines(verdict)]).toEqual([
      `release-check: FAILED: 2 changes would replace or remove stateful resources or widen access (0 stacks of ${context.head} against ${context.base}). Keep the logical ids (docs/deploy.md, "Stateful resources"), or acknowledge each in release-acknowledgements.json with a reason.`,
      "FAIL Production-PetStoreData TableCD117FA1 (AWS::DynamoDB::GlobalTable) replace: would be replaced (KeySchema changes): …",
      "FAIL Staging-PetStoreData TableCD117FA1 (AWS::DynamoDB::GlobalTable) replace: would be replaced (KeySchema changes): …",
    ]);
  });

  it("fails as docs/deploy.md shows it", () => {
    const example = /```\n(release-check: FAILED: .*)\n/.exec(gateSection)?.[1];
    const comparisons = Array.from({ length: 5 }, () => ({ status: "changed" })) as StackComparison[];
    const verdict = judge([finding(), finding({ stack: "Staging-PetStoreData" })], []);

    expect(summaryLine(comparisons, verdict, context)).toBe(example);
  });

  it("passes with what it acknowledged, with the reason, new stacks, and stale acknowledgements", () => {
    const acknowledgement: Acknowledgement = {
      stack: "Production-PetStoreData",
      logicalId: "TableCD117FA1",
      change: "replace",
      reason: "Exported first.",
    };
    const stale: Acknowledgement = { ...acknowledgement, logicalId: "Gone" };
    const verdict = judge([finding()], [acknowledgement, stale]);
    const comparisons = [
      { stackName: "Production-PetStoreData", status: "changed" },
      { stackName: "PetStore-DeliveryAccess", status: "added" },
    ] as StackComparison[];

    expect(verdict.failing).toEqual([]);
    expect([summaryLine(comparisons, verdict, context), ...findingLines(verdict)]).toEqual([
      `release-check: passed: 2 stacks of ${context.head} against ${context.base}; every replacement, removal or widening is acknowledged (1 new stack, nothing to compare with, 1 acknowledged, 1 stale acknowledgement).`,
      "acknowledged Production-PetStoreData TableCD117FA1 (AWS::DynamoDB::GlobalTable) replace: would be replaced (KeySchema changes): … (reason: Exported first.)",
      "stale acknowledgement: Production-PetStoreData Gone replace matches no change; remove it from release-acknowledgements.json",
    ]);
  });
});

describe("its arguments", () => {
  it("take a base ref, or --first-release, and a summary file that defaults to the job's", () => {
    expect(parseReleaseCheckArguments(["--base", "origin/main"], {})).toEqual({
      base: "origin/main",
      summary: undefined,
    });
    expect(parseReleaseCheckArguments(["--first-release"], { GITHUB_STEP_SUMMARY: "/tmp/s" })).toEqual({
      base: undefined,
      summary: "/tmp/s",
    });
    expect(parseReleaseCheckArguments(["--base", "HEAD", "--summary", "out.md"], { GITHUB_STEP_SUMMARY: "x" })).toEqual(
      { base: "HEAD", summary: "out.md" },
    );
  });

  it.each([
    [[], /^give either --base <git ref> or --first-release\. Usage: /],
    [["--base", "HEAD", "--first-release"], /^give either --base <git ref> or --first-release\. Usage: /],
    [["--base"], /^Option '--base <value>' argument missing\. Usage: /],
    [["--summary=", "--first-release"], /^--summary needs a file\. Usage: /],
    [["main"], /^Unexpected argument 'main'\. Usage: /],
  ])("refuse %j in one line", (argv, message) => {
    expect(() => parseReleaseCheckArguments(argv, {})).toThrow(ReleaseCheckInputError);
    expect(() => parseReleaseCheckArguments(argv, {})).toThrow(message);
  });
});

describe("the commit production runs (scripts/releaseCheck/deployedCommit.ts)", () => {
  const sha = (digit: string) => digit.repeat(40);
  /** A fake of GitHub's API: deployments newest first, in pages of `pageSize`, each with its latest status. */
  function github(deployments: { id: number; sha: string; state?: string }[], pageSize = 100): GitHubGet {
    return async (path) => {
      const list = /^\/repos\/octo\/pets\/deployments\?environment=production&per_page=100&page=(\d+)$/.exec(path);
      if (list) {
        const page = Number(list[1]);
        return deployments.slice((page - 1) * pageSize, page * pageSize).map(({ id, sha }) => ({ id, sha }));
      }
      const statuses = /^\/repos\/octo\/pets\/deployments\/(\d+)\/statuses\?per_page=1$/.exec(path);
      const deployment = deployments.find((candidate) => candidate.id === Number(statuses?.[1]));
      if (!statuses || !deployment) throw new Error(`unexpected ${path}`);
      return deployment.state ? [{ state: deployment.state }] : [];
    };
  }

  it("is the newest deployment whose latest status is success, past failed, waiting and rejected ones", async () => {
    const commit = await lastSuccessfulDeployment(
      "octo/pets",
      "production",
      github([
        { id: 9, sha: sha("9"), state: "waiting" },
        { id: 8, sha: sha("8"), state: "failure" },
        { id: 7, sha: sha("7") },
        { id: 6, sha: sha("6"), state: "success" },
        { id: 5, sha: sha("5"), state: "success" },
      ]),
    );

    expect(commit).toBe(sha("6"));
  });

  it("looks through later pages, and is none when production never had a successful deployment", async () => {
    const failed = Array.from({ length: 3 }, (_, index) => ({ id: 10 - index, sha: sha("a"), state: "failure" }));

    expect(await lastSuccessfulDeployment("octo/pets", "production", github(failed, 2))).toBeUndefined();
    expect(
      await lastSuccessfulDeployment(
        "octo/pets",
        "production",
        github([...failed, { id: 1, sha: sha("b"), state: "success" }], 2),
      ),
    ).toBe(sha("b"));
    expect(await lastSuccessfulDeployment("octo/pets", "production", github([]))).toBeUndefined();
  });

  it("prints commit=<sha> or commit= for $GITHUB_OUTPUT, asking GitHub with the job's token", async () => {
    const requests: { url: string; authorization: string | null }[] = [];
    const fakeFetch = (async (url: string, init?: RequestInit) => {
      requests.push({ url, authorization: new Headers(init?.headers).get("authorization") });
      const body = url.includes("/statuses") ? [{ state: "success" }] : [{ id: 3, sha: sha("c") }];
      return new Response(JSON.stringify(body), { status: 200 });
    }) as typeof fetch;
    const env = { GITHUB_REPOSITORY: "octo/pets", GITHUB_TOKEN: "t0ken", GITHUB_API_URL: "https://api.example" };

    expect(await deployedCommitLine(["production"], env, fakeFetch)).toBe(`commit=${sha("c")}`);
    expect(requests).toEqual([
      {
        url: "https://api.example/repos/octo/pets/deployments?environment=production&per_page=100&page=1",
        authorization: "Bearer t0ken",
      },
      { url: "https://api.example/repos/octo/pets/deployments/3/statuses?per_page=1", authorization: "Bearer t0ken" },
    ]);
  });

  it("fails, never answers 'nothing deployed', when GitHub cannot be asked", async () => {
    const forbidden = (async () => new Response("{}", { status: 403 })) as unknown as typeof fetch;
    const env = { GITHUB_REPOSITORY: "octo/pets", GITHUB_TOKEN: "t0ken" };

    await expect(deployedCommitLine(["production"], env, forbidden)).rejects.toThrow(
      new DeployedCommitError(
        "GitHub answered 403 to GET /repos/octo/pets/deployments (does the job have deployments: read?).",
      ),
    );
    await expect(deployedCommitLine(["production"], { GITHUB_REPOSITORY: "octo/pets" }, forbidden)).rejects.toThrow(
      /^GITHUB_TOKEN is not set/,
    );
    await expect(deployedCommitLine([], env, forbidden)).rejects.toThrow(/^Usage: /);
  });
});

describe("a base whose dependencies differ", () => {
  const repository = mkdtempSync(join(tmpdir(), "release-check-lock-"));
  const git = gitIn(() => repository);
  afterAll(() => rmSync(repository, { recursive: true, force: true }));

  it("gets a note that both sides are synthesized with the working tree's dependencies", () => {
    git("init", "-q", "-b", "main");
    writeFileSync(join(repository, "package-lock.json"), '{"lockfileVersion":3}\n');
    git("add", "-A");
    git("commit", "-q", "-m", "Deployed");
    const base = { commit: git("rev-parse", "HEAD").trim(), label: "main" };

    expect(dependencyNote(repository, base)).toBeUndefined();
    writeFileSync(join(repository, "package-lock.json"), '{"lockfileVersion":3,"packages":{}}\n');
    expect(dependencyNote(repository, base)).toMatch(
      /^package-lock\.json differs from the base's: both were synthesized/,
    );
  });
});

describe("docs/deploy.md on stack policies, against the installed CDK CLI", () => {
  it("cdk deploy has no stack-policy option", () => {
    const registry = JSON.parse(read("node_modules/aws-cdk/lib/cli/cli-type-registry.json")) as {
      commands: { deploy: { options: Record<string, unknown> } };
    };
    const options = Object.keys(registry.commands.deploy.options);

    expect(options).toContain("require-approval");
    expect(options.filter((option) => /polic/i.test(option))).toEqual([]);
    expect(deployDoc).toContain("`cdk deploy` has no stack-policy option");
  });

  it("the bootstrap deploy role may not set one", () => {
    const template = read("node_modules/aws-cdk/lib/api/bootstrap/bootstrap-template.yaml");

    expect(template).toContain("cloudformation:ExecuteChangeSet");
    expect(template).not.toContain("SetStackPolicy");
    expect(template).not.toMatch(/cloudformation:\*/);
  });
});
