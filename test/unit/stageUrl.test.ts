/**
 * `npm run url -- --stage <stage>`: the deployed stage's BaseUrl alone on stdout, read from its
 * stack's outputs in the region cdk.json pins (CloudFormation mocked: one read-only call).
 */
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { main, usage } from "../../scripts/url";
import { captureOutput } from "../support/consoleOutput";
import { refusedStageArguments, runWithoutCredentials } from "../support/stageCommand";

const cloudFormation = mockClient(CloudFormationClient);
const PINNED = "eu-central-1";
const BASE_URL = `https://a1b2c3d4e5.execute-api.${PINNED}.amazonaws.com/v1`;

afterEach(() => {
  cloudFormation.reset();
  vi.restoreAllMocks();
});

/** The command with cdk.json's context holding `context`, recording the regions it asked clients for. */
async function run(argv: string[], env: NodeJS.ProcessEnv = {}, context: Record<string, unknown> = {}) {
  const regions: string[] = [];
  const code = await main(argv, {
    env,
    context: () => context,
    cloudFormation: (region) => {
      regions.push(region);
      return new CloudFormationClient({ region, credentials: { accessKeyId: "test", secretAccessKey: "test" } });
    },
  });
  return { code, regions };
}

function stack(outputs: { OutputKey: string; OutputValue: string }[], status = "UPDATE_COMPLETE" as const) {
  return { Stacks: [{ StackName: "any", StackStatus: status, CreationTime: new Date(0), Outputs: outputs }] };
}

describe("npm run url", () => {
  it("prints only the stage's BaseUrl, read from its stack in the region cdk.json pins", async () => {
    const { out, err } = captureOutput();
    cloudFormation.on(DescribeStacksCommand, { StackName: deployedStages.staging.stackName }).resolves(
      stack([
        { OutputKey: STACK_OUTPUTS.tableName, OutputValue: "petstore-staging" },
        { OutputKey: STACK_OUTPUTS.baseUrl, OutputValue: BASE_URL },
      ]),
    );

    const { code, regions } = await run(
      ["--stage", "staging"],
      { AWS_REGION: "us-west-2" },
      { "staging:region": PINNED },
    );

    expect(code).toBe(0);
    expect(out).toEqual([BASE_URL]);
    expect(err).toEqual([]);
    expect(regions).toEqual([PINNED]);
    expect(cloudFormation.calls()).toHaveLength(1);
  });

  it("reads production's stack for --stage prod, in AWS_REGION when cdk.json pins no region", async () => {
    const { out } = captureOutput();
    cloudFormation
      .on(DescribeStacksCommand, { StackName: deployedStages.prod.stackName })
      .resolves(stack([{ OutputKey: STACK_OUTPUTS.baseUrl, OutputValue: "https://api.example.com/v1" }]));

    const { code, regions } = await run(["--stage", "prod"], { AWS_REGION: "eu-west-1" });

    expect(code).toBe(0);
    expect(out).toEqual(["https://api.example.com/v1"]);
    expect(regions).toEqual(["eu-west-1"]);
  });

  it("says in one line that the stage has no stack in that region, and exits 1", async () => {
    const { out, err } = captureOutput();
    cloudFormation
      .on(DescribeStacksCommand)
      .rejects(Object.assign(new Error("Stack with id Staging-PetStore does not exist"), { name: "ValidationError" }));

    const { code } = await run(["--stage", "staging"], {}, { "staging:region": PINNED });

    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([
      `url: no stack Staging-PetStore in ${PINNED}: staging is not deployed there (npx cdk deploy 'Staging/*'), or its region is another.`,
    ]);
  });

  it("says in one line that the stack has no BaseUrl output yet, with its status, and exits 1", async () => {
    const { err } = captureOutput();
    cloudFormation.on(DescribeStacksCommand).resolves(stack([], "CREATE_IN_PROGRESS" as "UPDATE_COMPLETE"));

    const { code } = await run(["--stage", "staging"], {}, { "staging:region": PINNED });

    expect(code).toBe(1);
    expect(err).toEqual([
      `url: stack Staging-PetStore in ${PINNED} has no BaseUrl output (stack status CREATE_IN_PROGRESS): wait for its deploy to finish, or deploy it again.`,
    ]);
  });

  it.each([
    [
      "CredentialsProviderError",
      "url: No AWS credentials: sign in to prod's account first (for example aws sso login, or set AWS_PROFILE).",
    ],
    ["ExpiredTokenException", "url: Sign in to prod's account again: the credentials are expired or not valid."],
    ["AccessDenied", "url: the AWS credentials may not read stacks (cloudformation:DescribeStacks)"],
  ])("explains %s in one line, and exits 1", async (name, line) => {
    const { out, err } = captureOutput();
    cloudFormation.on(DescribeStacksCommand).rejects(Object.assign(new Error("denied"), { name }));

    const { code } = await run(["--stage", "prod"], { AWS_REGION: "eu-west-1" });

    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err).toEqual([expect.stringContaining(line)]);
  });

  it("asks for a region, before any call, when neither cdk.json nor the environment names one", async () => {
    const { err } = captureOutput();

    const { code } = await run(["--stage", "staging"]);

    expect(code).toBe(1);
    expect(err).toEqual([
      `url: No AWS region: pin staging:region in cdk.json's "context", or set AWS_REGION to the region staging is deployed to.`,
    ]);
    expect(cloudFormation.calls()).toEqual([]);
  });

  it.each(refusedStageArguments)("refuses %j with one usage line, exit 2", async (argv, problem) => {
    const { err } = captureOutput();

    const { code } = await run(argv);

    expect(code).toBe(2);
    expect(err).toEqual([`url: ${problem} ${usage}`]);
  });

  it("as a command without AWS credentials: one line on stderr, nothing on stdout, exit 1", async () => {
    const { code, stdout, stderr } = await runWithoutCredentials("scripts/url.ts", ["--stage", "staging"], {
      AWS_REGION: PINNED,
    });

    expect({ code, stdout }).toEqual({ code: 1, stdout: "" });
    expect(stderr).toMatch(/^url: No AWS credentials: sign in to staging's account first[^\n]+\n$/);
  }, 30_000);
});
