/**
 * The rehearsal's stand-ins for Lambda's Node 24 runtime and for API Gateway hold a function to what
 * AWS holds it to: the function's timeout (Sandbox.Timedout, then a fresh execution environment), its
 * memory (Runtime.OutOfMemory, likewise), its architecture (native code built for another is refused),
 * the 10-second Init phase, Node 24's refusal of callback handlers, and the shape of the REST proxy
 * event, checked against AWS Powertools' schema. Tiny handlers in a temporary directory, no cloud
 * assembly.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiGatewayRequestTime, toProxyEvent } from "../../local/proxyEvent";
import { type InvokeAlias, LocalRestApi, proxyEventProblems } from "../../scripts/rehearse/apiGateway";
import type { AssemblyStack, CfnResource } from "../../scripts/rehearse/assembly";
import type { AwsStandIn } from "../../scripts/rehearse/awsStandIn";
import {
  type Architecture,
  type InvokeOutcome,
  type LambdaFunctionSpec,
  RunningFunction,
  type RuntimeLimits,
} from "../../scripts/rehearse/lambdaRuntime";
import { Resolver } from "../../scripts/rehearse/resolve";
import { StageRehearsal } from "../../scripts/rehearse/stage";

const CALLBACK_HANDLER_DEPRECATED =
  "ERROR: AWS Lambda has removed support for callback-based function handlers starting with Node.js 24. You need to modify this function to use a supported handler signature to use Node.js 24 or later. For more information see https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html.";

const scratch = mkdtempSync(join(tmpdir(), "rehearsal-stand-ins-"));
const running: RunningFunction[] = [];

afterEach(() => {
  for (const fn of running.splice(0)) fn.stop();
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let assets = 0;

interface FunctionOptions {
  readonly limits?: RuntimeLimits;
  readonly memoryMb?: number;
  readonly architecture?: Architecture;
  /** More files in the asset, by path. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
}

/** A function whose asset holds `fileName`, exporting `handler`, and any other `files`. */
async function functionWith(
  fileName: string,
  source: string,
  timeoutSeconds: number,
  { limits, memoryMb = 128, architecture = "x86_64", files = {} }: FunctionOptions = {},
): Promise<RunningFunction> {
  assets += 1;
  const assetDir = join(scratch, `asset-${assets}`);
  mkdirSync(assetDir);
  writeFileSync(join(assetDir, fileName), source);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(assetDir, path)), { recursive: true });
    writeFileSync(join(assetDir, path), content);
  }
  const spec: LambdaFunctionSpec = {
    label: `stand-in test ${assets}`,
    functionName: `standin-${assets}`,
    functionArn: `arn:aws:lambda:eu-west-1:111111111111:function:standin-${assets}`,
    runtime: "nodejs24.x",
    handler: `${fileName.replace(/\.[^.]+$/, "")}.handler`,
    assetDir,
    memoryMb,
    timeoutSeconds,
    architecture,
    logGroupName: `/aws/lambda/standin-${assets}`,
    region: "eu-west-1",
    environment: {},
    accessKeyId: "ASIASTANDINTEST",
  };
  const fn = await RunningFunction.start(spec, {}, limits);
  running.push(fn);
  return fn;
}

/** The 64-byte header of a little-endian 64-bit ELF shared object (as a `.node` addon is) for `machine`. */
function elfHeader(machine: number): Uint8Array {
  const header = Buffer.alloc(64);
  header.write("\x7fELF", 0, "latin1");
  header.set([2, 1, 1], 4); // 64-bit, little-endian, ELF version 1
  header.writeUInt16LE(3, 16); // e_type ET_DYN
  header.writeUInt16LE(machine, 18); // e_machine
  return header;
}

/** The function's answer, which must not be an error. */
function resultOf(outcome: InvokeOutcome): unknown {
  expect(outcome.error).toBeUndefined();
  return "result" in outcome ? outcome.result : undefined;
}

describe("the Lambda runtime stand-in", () => {
  it("answers Sandbox.Timedout after the function's timeout and serves the next invocation from a fresh environment", async () => {
    const fn = await functionWith(
      "index.js",
      `let calls = 0;
       exports.handler = async (event) => {
         calls += 1;
         if (event.hang) await new Promise((resolve) => setTimeout(resolve, 30_000));
         return { pid: process.pid, calls };
       };`,
      1,
    );
    expect(await fn.initialized).toBeUndefined();
    const before = resultOf(await fn.invoke({ hang: false })) as { pid: number; calls: number };
    expect(before.calls).toBe(1);

    const started = Date.now();
    const hung = await fn.invoke({ hang: true });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(hung.error?.errorType).toBe("Sandbox.Timedout");
    expect(hung.error?.errorMessage).toMatch(/^RequestId: [0-9a-f-]{36} Error: Task timed out after 1\.00 seconds$/);

    // A new process, whose module state starts over: the timed-out environment is gone.
    const after = resultOf(await fn.invoke({ hang: false })) as { pid: number; calls: number };
    expect(after.calls).toBe(1);
    expect(after.pid).not.toBe(before.pid);
    expect(fn.invocations).toBe(3);
    expect(fn.timeouts).toBe(1);
  });

  it("answers Runtime.OutOfMemory when the handler outgrows the function's memory, and serves the next invocation from a fresh environment", async () => {
    const hoarder = `let calls = 0;
      exports.handler = async (event) => {
        calls += 1;
        const hoard = [];
        for (let i = 0; i < event.megabytes / 8; i++) hoard.push(new Array(1_000_000).fill(i + 0.5));
        return { pid: process.pid, calls, kept: hoard.length };
      };`;
    // 200 MB of doubles: past the heap of a 128 MB function, within that of a 512 MB one.
    const small = await functionWith("index.js", hoarder, 10, { memoryMb: 128 });
    const before = resultOf(await small.invoke({ megabytes: 16 })) as { pid: number; calls: number };
    expect(before.calls).toBe(1);

    const outgrown = await small.invoke({ megabytes: 200 });
    expect(outgrown.error?.errorType).toBe("Runtime.OutOfMemory");
    expect(outgrown.error?.errorMessage).toMatch(
      /^RequestId: [0-9a-f-]{36} Error: Runtime exited with error: signal: aborted$/,
    );

    const after = resultOf(await small.invoke({ megabytes: 16 })) as { pid: number; calls: number };
    expect(after.calls).toBe(1);
    expect(after.pid).not.toBe(before.pid);
    expect(small.timeouts).toBe(0);

    const large = await functionWith("index.js", hoarder, 10, { memoryMb: 512 });
    expect(resultOf(await large.invoke({ megabytes: 200 }))).toMatchObject({ kept: 25 });
  });

  it("refuses at init a bundle with an ELF binary built for another architecture than the function's, naming the file", async () => {
    const handler = `exports.handler = async () => "ran";`;
    const arm64Tool = { "bin/tool": elfHeader(0xb7) };
    const refused = await functionWith("index.js", handler, 3, { files: arm64Tool });
    const expected = {
      errorType: "Runtime.InvalidArchitecture",
      errorMessage: "bin/tool is built for arm64, but the function's architecture is x86_64",
    };
    expect(await refused.initialized).toEqual(expected);
    expect(await refused.invoke({})).toEqual({ error: expected });

    // An x86_64 addon in an arm64 function likewise; the same addon in an x86_64 function loads.
    const addon = { "node_modules/native/build/Release/native.node": elfHeader(0x3e) };
    const arm64 = await functionWith("index.js", handler, 3, { architecture: "arm64", files: addon });
    expect(await arm64.initialized).toEqual({
      errorType: "Runtime.InvalidArchitecture",
      errorMessage:
        "node_modules/native/build/Release/native.node is built for x86_64, but the function's architecture is arm64",
    });
    const x86 = await functionWith("index.js", handler, 3, { files: addon });
    expect(await x86.invoke({})).toEqual({ result: "ran" });
  });

  it("takes MemorySize and Architectures from the template, and runs an arm64 bundle of plain JavaScript", async () => {
    const assetDir = join(scratch, "arm64-asset");
    mkdirSync(assetDir);
    writeFileSync(
      join(assetDir, "index.js"),
      "exports.handler = async (event, context) => ({ memory: context.memoryLimitInMB });",
    );
    const lambdaFunction = (extra: Record<string, unknown>): CfnResource => ({
      Type: "AWS::Lambda::Function",
      Properties: {
        Runtime: "nodejs24.x",
        Handler: "index.handler",
        Code: { S3Bucket: "assets", S3Key: "arm64.zip" },
        ...extra,
      },
    });
    const stack: AssemblyStack = {
      artifactId: "Test",
      displayName: "Test/Functions",
      stackName: "Test-Functions",
      account: "111111111111",
      region: "eu-west-1",
      pinned: true,
      templateFile: "",
      assets: new Map([["arm64.zip", assetDir]]),
      constructPaths: new Map(),
      dependencies: [],
      template: {
        Resources: {
          Graviton: lambdaFunction({ MemorySize: 256, Architectures: ["arm64"] }),
          Unstated: lambdaFunction({}),
        },
      },
    };
    const stage = new StageRehearsal(stack, [stack], {} as AwsStandIn, 1);
    const spec = stage.byLogicalId("Graviton")?.spec;
    expect(spec).toMatchObject({ memoryMb: 256, architecture: "arm64" });
    expect(stage.byLogicalId("Unstated")?.spec).toMatchObject({ memoryMb: 128, architecture: "x86_64" });

    const fn = await RunningFunction.start(spec as LambdaFunctionSpec, {});
    running.push(fn);
    expect(await fn.initialized).toBeUndefined();
    expect(await fn.invoke({})).toEqual({ result: { memory: "256" } });
  });

  it("gives the handler the time left before its deadline", async () => {
    const fn = await functionWith(
      "index.js",
      "exports.handler = async (event, context) => context.getRemainingTimeInMillis();",
      3,
    );
    const result = resultOf(await fn.invoke({}));
    expect(result).toBeGreaterThan(2_000);
    expect(result).toBeLessThanOrEqual(3_000);
  });

  it("reports an init past its limit as timed out, and runs init again within the first invocation", async () => {
    const slowInit = `await new Promise((resolve) => setTimeout(resolve, 2_000));
      export const handler = async () => "loaded at last";`;
    const patient = await functionWith("index.mjs", slowInit, 5, { limits: { initSeconds: 1 } });
    const initError = await patient.initialized;
    expect(initError?.errorType).toBe("Sandbox.Timedout");
    expect(initError?.errorMessage).toMatch(/^INIT_REPORT Init Duration: 1000\.00 ms Phase: init Status: timeout/);
    // The retried init (2 s) and the handler fit in the 5-second function timeout.
    expect(await patient.invoke({})).toEqual({ result: "loaded at last" });

    // With a 1-second function timeout the retried init cannot finish either.
    const hasty = await functionWith("index.mjs", slowInit, 1, { limits: { initSeconds: 1 } });
    const outcome = await hasty.invoke({});
    expect(outcome.error?.errorMessage).toMatch(/Task timed out after 1\.00 seconds$/);
    expect(hasty.timeouts).toBe(1);
  });

  it("refuses a callback handler at init on Node 24, as the runtime interface client does", async () => {
    const fn = await functionWith("index.js", "exports.handler = (event, context, callback) => callback(null, 1);", 3);
    const expected = { errorType: "Runtime.CallbackHandlerDeprecated", errorMessage: CALLBACK_HANDLER_DEPRECATED };
    expect(await fn.initialized).toEqual(expected);
    expect(await fn.invoke({})).toEqual({ error: expected });
  });

  it("runs an async (event, context) handler, and passes no callback to a handler that looks for one", async () => {
    const fn = await functionWith(
      "index.js",
      `exports.handler = async (event, context, ...rest) => ({
         echoed: event.value,
         requestId: context.awsRequestId,
         callbackPassed: rest.length > 0,
       });`,
      3,
    );
    expect(await fn.initialized).toBeUndefined();
    const result = resultOf(await fn.invoke({ value: 7 })) as { echoed: number; requestId: string };
    expect(result).toMatchObject({ echoed: 7, callbackPassed: false });
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

function request(overrides: Partial<Parameters<typeof toProxyEvent>[0]>): APIGatewayProxyEvent {
  return toProxyEvent({
    method: "GET",
    path: "/pets",
    search: new URLSearchParams(),
    headers: { host: "abc123.execute-api.eu-west-1.amazonaws.com", "user-agent": "test" },
    body: "",
    resource: "/pets",
    pathParameters: null,
    sourceIp: "203.0.113.10",
    ...overrides,
  });
}

describe("the REST proxy events", () => {
  it("pass AWS Powertools' APIGatewayProxyEventSchema: a GET with a query, a POST with a body, path parameters", () => {
    const events = [
      request({ search: new URLSearchParams("limit=5&status=available&status=sold") }),
      request({
        method: "POST",
        headers: { host: "localhost:3000", "content-type": "application/json" },
        body: '{"name":"Rex"}',
        sourceIp: "::1",
      }),
      request({ path: "/pets/7", resource: "/pets/{petId}", pathParameters: { petId: "7" } }),
      request({ method: "POST", body: new Uint8Array([0xff, 0xfe]) }),
    ];
    for (const event of events) expect(proxyEventProblems(event)).toEqual([]);
  });

  it("carry requestTime in API Gateway's format, the time of requestTimeEpoch", () => {
    expect(apiGatewayRequestTime(new Date(Date.UTC(2015, 3, 9, 12, 34, 56)))).toBe("09/Apr/2015:12:34:56 +0000");
    const event = request({});
    expect(event.requestContext.requestTime).toBe(
      apiGatewayRequestTime(new Date(event.requestContext.requestTimeEpoch)),
    );
  });

  it("are refused when requestTime is missing, naming the field", () => {
    const event = request({});
    const { requestTime: _dropped, ...requestContext } = event.requestContext;
    const problems = proxyEventProblems({ ...event, requestContext });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^requestContext\.requestTime: /);
  });
});

describe("the REST API stand-in", () => {
  const proxy = (resourceId: string, httpMethod: string): CfnResource => ({
    Type: "AWS::ApiGateway::Method",
    Properties: {
      HttpMethod: httpMethod,
      ResourceId: { Ref: resourceId },
      RestApiId: { Ref: "Api" },
      Integration: {
        Type: "AWS_PROXY",
        Uri: "arn:aws:apigateway:eu-west-1:lambda:path/2015-03-31/functions/arn:aws:lambda:eu-west-1:111111111111:function:pets:live/invocations",
      },
    },
  });
  const stack: AssemblyStack = {
    artifactId: "Test",
    displayName: "Test/Api",
    stackName: "Test-Api",
    account: "111111111111",
    region: "eu-west-1",
    pinned: true,
    templateFile: "",
    assets: new Map(),
    constructPaths: new Map(),
    dependencies: [],
    template: {
      Resources: {
        Api: { Type: "AWS::ApiGateway::RestApi" },
        Pets: {
          Type: "AWS::ApiGateway::Resource",
          Properties: { ParentId: { "Fn::GetAtt": ["Api", "RootResourceId"] }, PathPart: "pets" },
        },
        Pet: { Type: "AWS::ApiGateway::Resource", Properties: { ParentId: { Ref: "Pets" }, PathPart: "{petId}" } },
        ListPets: proxy("Pets", "GET"),
        GetPet: proxy("Pet", "GET"),
        AnyPet: proxy("Pet", "ANY"),
        PetsOptions: {
          Type: "AWS::ApiGateway::Method",
          Properties: {
            HttpMethod: "OPTIONS",
            ResourceId: { Ref: "Pets" },
            RestApiId: { Ref: "Api" },
            Integration: { Type: "MOCK", IntegrationResponses: [{ StatusCode: "204" }] },
          },
        },
      },
    },
  };

  async function withApi(run: (api: LocalRestApi, events: unknown[]) => Promise<void>): Promise<void> {
    const events: unknown[] = [];
    const invoke: InvokeAlias = async (_aliasArn, event) => {
      events.push(event);
      return { result: { statusCode: 200, body: "{}" } };
    };
    const api = new LocalRestApi(new Resolver(stack), "v1", invoke);
    await api.start();
    try {
      await run(api, events);
    } finally {
      await api.stop();
    }
  }

  it("lists every method of the API and records those a request reached", async () => {
    await withApi(async (api, events) => {
      expect(api.methods().sort()).toEqual(["ANY /pets/{petId}", "GET /pets", "GET /pets/{petId}", "OPTIONS /pets"]);
      expect((await fetch(`${api.baseUrl}/pets/7`)).status).toBe(200);
      expect((await fetch(`${api.baseUrl}/pets`, { method: "OPTIONS" })).status).toBe(204);
      expect([...api.called].sort()).toEqual(["GET /pets/{petId}", "OPTIONS /pets"]);
      expect(events).toHaveLength(1);
      expect(proxyEventProblems(events[0])).toEqual([]);
      expect(events[0]).toMatchObject({
        requestContext: { stage: "v1", path: "/v1/pets/7", domainPrefix: expect.any(String) },
      });
      expect(api.eventProblems).toEqual([]);
    });
  });

  it("answers 502 and records the problem when the event would not be one API Gateway sends", async () => {
    await withApi(async (api, events) => {
      // An ANY method takes only the seven methods API Gateway knows; the stand-in would build an
      // event with any other, which the schema refuses before the function sees it.
      const answer = await fetch(`${api.baseUrl}/pets/7`, { method: "PROPFIND" });
      expect(answer.status).toBe(502);
      expect(events).toEqual([]);
      expect(api.eventProblems).toHaveLength(1);
      expect(api.eventProblems[0]).toMatch(/^ANY \/pets\/\{petId\} \(\/pets\/7\): httpMethod: /);
    });
  });
});
