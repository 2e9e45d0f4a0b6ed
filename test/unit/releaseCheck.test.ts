/**
 * The release check's parts that need no synthesis (scripts/releaseCheck/): what counts as stateful,
 * the acknowledgements file, the arguments, the lines it prints, how the pipeline finds the commit
 * production runs, and what docs/deploy.md says about it and about stack policies.
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
import {
  INSTALL_COMMAND,
  materialize,
  ReleaseCheckInputError,
  UnbuildableBaseError,
} from "../../scripts/releaseCheck/synthesize";
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

  it("acknowledges a base commit that cannot be built by naming the commit, and only that one", () => {
    const commit = "0123456789abcdef0123456789abcdef01234567";
    const [acknowledgement] = parseAcknowledgements(
      file([
        { change: "unbuildable-base", base: "0123456789AB", reason: "Its lock names a package since unpublished." },
      ]),
    );
    const unbuildable = finding({ stack: "", logicalId: commit, resourceType: "", change: "unbuildable-base" });

    expect(acknowledgement).toMatchObject({ change: "unbuildable-base", base: "0123456789ab" });
    expect(acknowledges(acknowledgement as Acknowledgement, unbuildable)).toBe(true);
    expect(acknowledges(acknowledgement as Acknowledgement, { ...unbuildable, logicalId: "f".repeat(40) })).toBe(false);
    expect(acknowledges(acknowledgement as Acknowledgement, finding())).toBe(false);
    expect(() => parseAcknowledgements(file([{ change: "unbuildable-base", base: "main", reason: "x" }]))).toThrow(
      new AcknowledgementsError(
        'release-acknowledgements.json, acknowledgement 1 needs "base" to be the commit (7 to 40 hex digits), not "main".',
      ),
    );
    expect(() => parseAcknowledgements(file([{ ...entry, change: "unbuildable-base", base: commit }]))).toThrow(
      /has unknown keys stack, logicalId; expected change, base, reason\.$/,
    );
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
      `release-check: FAILED: 2 changes would replace, remove, move or weaken stateful resources or widen access (0 stacks of ${context.head} against ${context.base}). Keep the logical ids and settings (docs/deploy.md, "Stateful resources"), or acknowledge each in release-acknowledgements.json with a reason.`,
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
      `release-check: passed: 2 stacks of ${context.head} against ${context.base}; every finding is acknowledged (1 new stack, nothing to compare with, 1 acknowledged, 1 stale acknowledgement).`,
      "acknowledged Production-PetStoreData TableCD117FA1 (AWS::DynamoDB::GlobalTable) replace: would be replaced (KeySchema changes): … (reason: Exported first.)",
      "stale acknowledgement: Production-PetStoreData Gone replace matches no change; remove it from release-acknowledgements.json",
    ]);
  });
});

describe("its arguments", () => {
  it("take a base ref, or --first-release, and a summary file that defaults to the job's", () => {
    expect(parseReleaseCheckArguments(["--base", "origin/main"], {})).toMatchObject({
      base: "origin/main",
      baseAssembly: undefined,
      summary: undefined,
    });
    expect(parseReleaseCheckArguments(["--first-release"], { GITHUB_STEP_SUMMARY: "/tmp/s" })).toMatchObject({
      base: undefined,
      baseAssembly: undefined,
      summary: "/tmp/s",
    });
    expect(
      parseReleaseCheckArguments(["--base", "HEAD", "--summary", "out.md"], { GITHUB_STEP_SUMMARY: "x" }),
    ).toMatchObject({ base: "HEAD", summary: "out.md" });
    expect(parseReleaseCheckArguments(["--base-assembly", "recorded/cdk.out"], {})).toMatchObject({
      base: undefined,
      baseAssembly: "recorded/cdk.out",
    });
  });

  it.each([
    [[], /^give one of --base <git ref>, --base-assembly <dir> or --first-release\. Usage: /],
    [
      ["--base", "HEAD", "--first-release"],
      /^give one of --base <git ref>, --base-assembly <dir> or --first-release\. /,
    ],
    [["--base", "HEAD", "--base-assembly", "cdk.out"], /^give one of --base <git ref>, --base-assembly <dir> /],
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

/** The release check's temporary base checkouts now. */
const readdirTemp = () => readdirSync(tmpdir()).filter((name) => name.startsWith("release-check-base-"));

describe("a base is built with its own locked dependencies", () => {
  const repository = mkdtempSync(join(tmpdir(), "release-check-lock-"));
  const git = gitIn(() => repository);
  const made: string[] = [];
  afterAll(() => {
    for (const directory of [repository, ...made]) rmSync(directory, { recursive: true, force: true });
  });
  /** A lock of one small package (from the project's own lock, so npm's cache has it). */
  const projectLock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { version: string }> };
  const ms = projectLock.packages["node_modules/ms"] as { version: string; integrity: string };
  const lockWith = (packages: Record<string, unknown>) =>
    `${JSON.stringify({ name: "app", version: "1.0.0", lockfileVersion: 3, requires: true, packages: { "": { name: "app", version: "1.0.0", dependencies: { ms: ms.version } }, ...packages } })}\n`;
  /** The working tree's lock, which has no ms at all: a base with ms installed has its own. */
  const workingLock = lockWith({});
  const baseLock = lockWith({ "node_modules/ms": { version: ms.version, integrity: ms.integrity, license: "MIT" } });
  /** A commit of an app whose package-lock.json is `lockText`; the working tree's lock is `workingLock`. */
  function commitWithLock(lockText: string) {
    writeFileSync(join(repository, "package-lock.json"), lockText);
    git("add", "-A");
    git("commit", "-q", "-m", "A base");
    writeFileSync(join(repository, "package-lock.json"), workingLock);
    const commit = git("rev-parse", "HEAD").trim();
    return { commit, label: `base (commit ${commit.slice(0, 12)})` };
  }

  it("links the working tree's node_modules when its package-lock.json is the same", async () => {
    git("init", "-q", "-b", "main");
    mkdirSync(join(repository, "infra"));
    writeFileSync(join(repository, "infra", "app.ts"), "");
    writeFileSync(
      join(repository, "package.json"),
      JSON.stringify({ name: "app", version: "1.0.0", dependencies: { ms: ms.version } }),
    );
    const base = commitWithLock(workingLock);

    const materialized = await materialize(repository, base);
    made.push(materialized.root);

    expect(materialized.dependencies).toBe("linked");
    expect(lstatSync(join(materialized.app, "node_modules")).isSymbolicLink()).toBe(true);
  });

  it(`installs the base's own lock with npm ${INSTALL_COMMAND.join(" ")} when it differs`, async () => {
    const base = commitWithLock(baseLock);

    const materialized = await materialize(repository, base);
    made.push(materialized.root);

    expect(materialized.dependencies).toBe("installed");
    expect(lstatSync(join(materialized.app, "node_modules")).isSymbolicLink()).toBe(false);
    expect(
      JSON.parse(readFileSync(join(materialized.app, "node_modules", "ms", "package.json"), "utf8")),
    ).toMatchObject({
      name: "ms",
      version: ms.version,
    });
  }, 60_000);

  it("says in one line why a base whose lock npm refuses cannot be built, and leaves no directory behind", async () => {
    const base = commitWithLock('{ "lockfileVersion": 3, "packages": ');
    const before = new Set(readdirTemp());

    await expect(materialize(repository, base)).rejects.toThrow(UnbuildableBaseError);
    await expect(materialize(repository, base)).rejects.toThrow(
      /^cannot build base \(commit \w{12}\): npm ci --ignore-scripts --no-audit --no-fund --prefer-offline of its package-lock\.json failed: [^\n]+$/,
    );
    expect(readdirTemp().filter((name) => !before.has(name))).toEqual([]);
  }, 60_000);
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
