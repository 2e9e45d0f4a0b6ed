/**
 * The rehearsal's stand-ins for Lambda's Node 24 runtime and for API Gateway hold a function to what
 * AWS holds it to: the function's timeout (Sandbox.Timedout, then a fresh execution environment), the
 * 10-second Init phase, Node 24's refusal of callback handlers, and the shape of the REST proxy
 * event, checked against AWS Powertools' schema. Tiny handlers in a temporary directory, no cloud
 * assembly.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiGatewayRequestTime, toProxyEvent } from "../../local/proxyEvent";
import { type InvokeAlias, LocalRestApi, proxyEventProblems } from "../../scripts/rehearse/apiGateway";
import type { AssemblyStack, CfnResource } from "../../scripts/rehearse/assembly";
import {
  type InvokeOutcome,
  type LambdaFunctionSpec,
  RunningFunction,
  type RuntimeLimits,
} from "../../scripts/rehearse/lambdaRuntime";
import { Resolver } from "../../scripts/rehearse/resolve";

const CALLBACK_HANDLER_DEPRECATED =
  "ERROR: AWS Lambda has removed support for callback-based function handlers starting with Node.js 24. You need to modify this function to use a supported handler signature to use Node.js 24 or later. For more information see https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html.";

const scratch = mkdtempSync(join(tmpdir(), "rehearsal-stand-ins-"));
const running: RunningFunction[] = [];

afterEach(() => {
  for (const fn of running.splice(0)) fn.stop();
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let assets = 0;

/** A function whose asset holds one file, `fileName`, exporting `handler`. */
async function functionWith(
  fileName: string,
  source: string,
  timeoutSeconds: number,
  limits?: RuntimeLimits,
): Promise<RunningFunction> {
  assets += 1;
  const assetDir = join(scratch, `asset-${assets}`);
  mkdirSync(assetDir);
  writeFileSync(join(assetDir, fileName), source);
  const spec: LambdaFunctionSpec = {
    label: `stand-in test ${assets}`,
    functionName: `standin-${assets}`,
    functionArn: `arn:aws:lambda:eu-west-1:111111111111:function:standin-${assets}`,
    runtime: "nodejs24.x",
    handler: `${fileName.replace(/\.[^.]+$/, "")}.handler`,
    assetDir,
    memoryMb: 128,
    timeoutSeconds,
    logGroupName: `/aws/lambda/standin-${assets}`,
    region: "eu-west-1",
    environment: {},
    accessKeyId: "ASIASTANDINTEST",
  };
  const fn = await RunningFunction.start(spec, {}, limits);
  running.push(fn);
  return fn;
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
    const patient = await functionWith("index.mjs", slowInit, 5, { initSeconds: 1 });
    const initError = await patient.initialized;
    expect(initError?.errorType).toBe("Sandbox.Timedout");
    expect(initError?.errorMessage).toMatch(/^INIT_REPORT Init Duration: 1000\.00 ms Phase: init Status: timeout/);
    // The retried init (2 s) and the handler fit in the 5-second function timeout.
    expect(await patient.invoke({})).toEqual({ result: "loaded at last" });

    // With a 1-second function timeout the retried init cannot finish either.
    const hasty = await functionWith("index.mjs", slowInit, 1, { initSeconds: 1 });
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
