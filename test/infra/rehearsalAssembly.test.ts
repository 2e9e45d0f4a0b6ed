/**
 * How the deploy rehearsal reads a cloud assembly (scripts/rehearse/assembly.ts) and answers input it
 * cannot work with (scripts/rehearse/main.ts). A tiny CDK app, one stage of two stacks and one
 * environment-agnostic stack, is synthesized for what the CDK really writes; assemblies broken on
 * purpose are written by hand.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { App, Stack, Stage } from "aws-cdk-lib";
import { Code, Function as LambdaFunction, Runtime } from "aws-cdk-lib/aws-lambda";
import { Topic } from "aws-cdk-lib/aws-sns";
import { Manifest } from "aws-cdk-lib/cloud-assembly-schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AssemblyError, type AssemblyStack, readAssembly, resourcesOf } from "../../scripts/rehearse/assembly";
import { projectRoot } from "../support/processes";

const HANDLER_SOURCE = "exports.handler = async () => 'rehearsed';\n";

let workDirectory: string;
let synthesized: string;

beforeAll(() => {
  workDirectory = mkdtempSync(join(tmpdir(), "rehearsal-assembly-"));
  const handlerDirectory = join(workDirectory, "handler");
  mkdirSync(handlerDirectory);
  writeFileSync(join(handlerDirectory, "index.js"), HANDLER_SOURCE);

  synthesized = join(workDirectory, "cdk.out");
  const app = new App({ outdir: synthesized, context: {} });
  const staging = new Stage(app, "Staging", { env: { account: "111111111111", region: "eu-west-1" } });
  const data = new Stack(staging, "Data", { stackName: "Staging-Data" });
  new Topic(data, "Topic");
  const service = new Stack(staging, "Service", { stackName: "Staging-Service" });
  service.addDependency(data);
  new LambdaFunction(service, "Handler", {
    runtime: Runtime.NODEJS_22_X,
    handler: "index.handler",
    code: Code.fromAsset(handlerDirectory),
  });
  new Topic(new Stack(app, "Agnostic"), "Topic");
  app.synth();
});

afterAll(() => {
  rmSync(workDirectory, { recursive: true, force: true });
});

function stackNamed(stacks: AssemblyStack[], displayName: string): AssemblyStack {
  const stack = stacks.find((candidate) => candidate.displayName === displayName);
  if (!stack) throw new Error(`no ${displayName} among ${stacks.map((candidate) => candidate.displayName).join(", ")}`);
  return stack;
}

describe("readAssembly on a synthesized app", () => {
  it("reads the stage's stacks from its nested assembly, pinned to the stage's account and region", () => {
    const stacks = readAssembly(synthesized);
    expect(stacks.map((stack) => stack.displayName).sort()).toEqual(["Agnostic", "Staging/Data", "Staging/Service"]);
    const service = stackNamed(stacks, "Staging/Service");
    expect(service).toMatchObject({
      stackName: "Staging-Service",
      account: "111111111111",
      region: "eu-west-1",
      pinned: true,
    });
    expect(isAbsolute(service.templateFile)).toBe(true);
    expect(JSON.parse(readFileSync(service.templateFile, "utf8"))).toEqual(service.template);
  });

  it("gives each resource's construct path and the stacks the CLI deploys first", () => {
    const stacks = readAssembly(synthesized);
    const service = stackNamed(stacks, "Staging/Service");
    const [[functionId] = []] = resourcesOf(service.template, "AWS::Lambda::Function");
    expect(service.constructPaths.get(functionId as string)).toBe("/Staging/Service/Handler/Resource");
    expect(service.dependencies).toContain(stackNamed(stacks, "Staging/Data").artifactId);
  });

  it("finds a function's code in the assembly by the S3 key its template names", () => {
    const service = stackNamed(readAssembly(synthesized), "Staging/Service");
    const [[, handler] = []] = resourcesOf(service.template, "AWS::Lambda::Function");
    const code = handler?.Properties?.Code as { S3Key?: string } | undefined;
    const assetDirectory = service.assets.get(String(code?.S3Key));
    expect(assetDirectory?.startsWith(synthesized)).toBe(true);
    expect(readFileSync(join(assetDirectory as string, "index.js"), "utf8")).toBe(HANDLER_SOURCE);
  });

  it("reads an environment-agnostic stack as not pinned", () => {
    expect(stackNamed(readAssembly(synthesized), "Agnostic")).toMatchObject({
      account: "unknown-account",
      region: "unknown-region",
      pinned: false,
    });
  });
});

/** A hand-written assembly: `files` relative to a new directory, objects written as JSON. */
function handWritten(files: Record<string, unknown>): string {
  const directory = mkdtempSync(join(workDirectory, "hand-written-"));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(directory, path)), { recursive: true });
    writeFileSync(join(directory, path), typeof content === "string" ? content : JSON.stringify(content));
  }
  return directory;
}

const stackManifest = (templateFile: string) => ({
  version: Manifest.version(),
  artifacts: {
    Service: {
      type: "aws:cloudformation:stack",
      environment: "aws://111111111111/eu-west-1",
      properties: { templateFile },
    },
  },
});

/** The AssemblyError readAssembly throws on `directory`. */
function assemblyError(directory: string): AssemblyError {
  try {
    readAssembly(directory);
  } catch (error) {
    if (error instanceof AssemblyError) return error;
    throw error;
  }
  throw new Error(`${directory} was read without an error`);
}

describe("readAssembly on what is not a readable cloud assembly", () => {
  it("names a directory without manifest.json and says how to synthesize one", () => {
    const directory = handWritten({ "README.md": "not an assembly" });
    expect(assemblyError(directory).message).toBe(
      `${directory} is not a cloud assembly (no manifest.json); synthesize one with npx cdk synth -o ${directory}`,
    );
  });

  it("names a malformed manifest.json in one line, without the file's contents", () => {
    const directory = handWritten({ "manifest.json": '{\n  "version": "55.0.0",\n  "artifacts": {\n' });
    const { message } = assemblyError(directory);
    expect(message).toMatch(new RegExp(`^cannot read ${directory}/manifest\\.json: .*JSON`));
    expect(message).toContain(`(npx cdk synth -o ${directory})`);
    expect(message).not.toContain("\n");
    expect(message).not.toContain("artifacts");
  });

  it("names a malformed manifest of a nested stage assembly by its own path", () => {
    const directory = handWritten({
      "manifest.json": {
        version: Manifest.version(),
        artifacts: {
          "assembly-Staging": { type: "cdk:cloud-assembly", properties: { directoryName: "assembly-Staging" } },
        },
      },
      "assembly-Staging/manifest.json": "{",
    });
    expect(assemblyError(directory).message).toMatch(
      new RegExp(`^cannot read ${directory}/assembly-Staging/manifest\\.json: `),
    );
  });

  it("refuses a manifest of a newer schema than this project's CDK reads", () => {
    const directory = handWritten({ "manifest.json": { version: "999.0.0", artifacts: {} } });
    expect(assemblyError(directory).message).toMatch(
      new RegExp(`^${directory}/manifest\\.json was written by a newer CDK than this project's aws-cdk-lib reads`),
    );
  });

  it("names a stack's template that is missing", () => {
    const directory = handWritten({ "manifest.json": stackManifest("Service.template.json") });
    expect(assemblyError(directory).message).toBe(
      `${directory}/Service.template.json does not exist: synthesize the assembly again (npx cdk synth -o ${directory})`,
    );
  });

  it("names a stack's template that has no Resources", () => {
    const directory = handWritten({
      "manifest.json": stackManifest("Service.template.json"),
      "Service.template.json": { Description: "no resources" },
    });
    expect(assemblyError(directory).message).toMatch(
      new RegExp(`^${directory}/Service\\.template\\.json is not a CloudFormation template`),
    );
  });
});

/** `npm run rehearse -- <args>`, as tsx runs it. */
function rehearse(...args: string[]) {
  const result = spawnSync(`${projectRoot}node_modules/.bin/tsx`, ["scripts/rehearse/main.ts", ...args], {
    cwd: projectRoot,
    encoding: "utf8",
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
  });
  return { status: result.status, stdout: result.stdout, stderrLines: result.stderr.trim().split("\n") };
}

const USAGE = "Usage: npm run rehearse [-- --assembly DIR]";

describe("npm run rehearse, given what it cannot work with", () => {
  it("answers an unknown option with one line and the usage, exit 2", () => {
    const { status, stdout, stderrLines } = rehearse("--bogus");
    expect({ status, stdout, stderrLines }).toEqual({
      status: 2,
      stdout: "",
      stderrLines: [`rehearse: Unknown option '--bogus'. ${USAGE}`],
    });
  });

  it("answers --assembly without a directory with one line, exit 2", () => {
    const { status, stderrLines } = rehearse("--assembly");
    expect({ status, stderrLines }).toEqual({
      status: 2,
      stderrLines: [`rehearse: --assembly needs a directory. ${USAGE}`],
    });
  });

  it("prints the usage for --help, exit 0", () => {
    const { status, stdout } = rehearse("--help");
    expect(status).toBe(0);
    expect(stdout.startsWith(`${USAGE}\n`)).toBe(true);
  });

  it("answers an assembly with a malformed manifest with one line naming it, exit 2", () => {
    const directory = handWritten({ "manifest.json": "{ not json" });
    const { status, stderrLines } = rehearse("--assembly", directory);
    expect(status).toBe(2);
    expect(stderrLines).toEqual([
      expect.stringMatching(new RegExp(`^rehearse: cannot read ${directory}/manifest\\.json: `)),
    ]);
  });
});
