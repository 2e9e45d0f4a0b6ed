/**
 * The deployed synthetic check, run against the local server: it runs the smoke checks with the
 * key it reads, says in one metric line whether they passed, and never lets the key out.
 */
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { createJsonLogger } from "../../lib/observability/logger";
import { METRICS_NAMESPACE } from "../../lib/observability/metrics";
import { syntheticMetricNames } from "../../lib/observability/syntheticMetrics";
import { runSyntheticCheck, type SyntheticCheckDependencies } from "../../lib/synthetic/check";
import { issueTestKey, startTestApi } from "../support/api";
import { freePort } from "../support/processes";

let api: Awaited<ReturnType<typeof startTestApi>>;
let key: string;

beforeAll(async () => {
  // The server's own request lines and metrics are not what these tests look at: keep the output short.
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  ({ key } = await issueTestKey("synthetic", { synthetic: true }));
});

afterAll(async () => {
  await api.close();
});

interface Captured {
  readonly lines: string[];
  readonly logs: () => Record<string, unknown>[];
  readonly metrics: () => Record<string, unknown>[];
}

function capture(): Captured {
  const lines: string[] = [];
  const parsed = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  return {
    lines,
    logs: () => parsed().filter((line) => !("_aws" in line)),
    metrics: () => parsed().filter((line) => "_aws" in line),
  };
}

function dependencies(output: Captured, overrides: Partial<SyntheticCheckDependencies> = {}) {
  const write = (line: string) => {
    output.lines.push(line);
  };
  return {
    baseUrl: api.baseUrl,
    stage: "local" as const,
    readApiKey: async () => key,
    log: createJsonLogger({ level: "INFO", write }),
    writeMetric: write,
    ...overrides,
  };
}

describe("the synthetic check", () => {
  it("passes against a healthy stage and publishes one metric line saying so", async () => {
    const output = capture();

    const run = await runSyntheticCheck(dependencies(output));

    expect(run).toEqual({ passed: true, checks: expect.any(Number), failedChecks: 0 });
    expect(run.checks).toBeGreaterThanOrEqual(14);
    const [metric, ...others] = output.metrics();
    expect(others).toEqual([]);
    expect(metric).toMatchObject({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [["Stage"]],
            Metrics: [
              { Name: syntheticMetricNames.passed, Unit: "Count" },
              { Name: syntheticMetricNames.failedChecks, Unit: "Count" },
            ],
          },
        ],
      },
      Stage: "local",
      [syntheticMetricNames.passed]: 1,
      [syntheticMetricNames.failedChecks]: 0,
    });
    expect(output.logs()).toEqual([
      expect.objectContaining({ level: "INFO", message: "synthetic check run", passed: true, failedChecks: 0 }),
    ]);
  });

  it("fails in one log line saying why it cannot reach the stage, when the stage does not answer", async () => {
    const output = capture();
    const nobodyListens = `http://127.0.0.1:${await freePort()}/v1`;

    const run = await runSyntheticCheck(dependencies(output, { baseUrl: nobodyListens }));

    expect(run).toEqual({ passed: false, checks: 0, failedChecks: 1 });
    expect(output.metrics()).toEqual([
      expect.objectContaining({ [syntheticMetricNames.passed]: 0, [syntheticMetricNames.failedChecks]: 1 }),
    ]);
    expect(output.logs()).toEqual([
      expect.objectContaining({
        level: "ERROR",
        message: "synthetic check could not run",
        error: expect.objectContaining({ message: `cannot reach ${nobodyListens}: connection refused` }),
      }),
    ]);
  });

  it("fails without running when the secret does not hold a key of the stage, and does not show what it holds", async () => {
    const output = capture();
    const notAKey = "x7-generated-by-secrets-manager-before-provisioning";

    const run = await runSyntheticCheck(dependencies(output, { readApiKey: async () => notAKey }));

    expect(run).toEqual({ passed: false, checks: 0, failedChecks: 1 });
    expect(output.metrics()).toEqual([expect.objectContaining({ [syntheticMetricNames.passed]: 0 })]);
    expect(output.logs()).toEqual([
      expect.objectContaining({
        level: "ERROR",
        message: "synthetic check could not run",
        error: expect.objectContaining({ message: expect.stringContaining("does not hold a local key") }),
      }),
    ]);
    expect(output.lines.join("\n")).not.toContain(notAKey);
  });

  it("fails without running when the secret cannot be read", async () => {
    const output = capture();
    const denied = Object.assign(new Error("User is not authorized to perform secretsmanager:GetSecretValue"), {
      name: "AccessDeniedException",
    });

    const run = await runSyntheticCheck(
      dependencies(output, {
        readApiKey: async () => {
          throw denied;
        },
      }),
    );

    expect(run.passed).toBe(false);
    expect(output.logs()[0]).toMatchObject({ error: { name: "AccessDeniedException" } });
    expect(output.metrics()).toEqual([expect.objectContaining({ [syntheticMetricNames.passed]: 0 })]);
  });

  it("fails when the key is not accepted, as with a revoked key", async () => {
    const output = capture();

    const run = await runSyntheticCheck(
      dependencies(output, { readApiKey: async () => generateApiKey("local", { synthetic: true }) }),
    );

    expect(run.passed).toBe(false);
    expect(output.logs().map((line) => line.check)).toContain("create: 201 with Location and the default status");
  });

  it("refuses, before any request, a secret holding an ordinary key: its pets would reach clients", async () => {
    const output = capture();
    const requests: string[] = [];

    const run = await runSyntheticCheck(
      dependencies(output, {
        readApiKey: async () => generateApiKey("local"),
        fetch: async (input) => {
          requests.push(String(input));
          return new Response("{}");
        },
      }),
    );

    expect(run).toEqual({ passed: false, checks: 0, failedChecks: 1 });
    expect(requests).toEqual([]);
    expect(output.logs()[0]).toMatchObject({
      error: { message: "The API key secret holds an ordinary local key, not a synthetic one." },
    });
  });
});

describe("the synthetic check function", () => {
  const secrets = mockClient(SecretsManagerClient);
  const secretArn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:petstore-synthetic-AbCdEf";

  afterEach(() => {
    secrets.reset();
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
    vi.resetModules();
  });

  it("reads its key from the configured secret, runs the checks and writes logs and metrics, never the key, to stdout", async () => {
    vi.stubEnv("PETSTORE_BASE_URL", api.baseUrl);
    vi.stubEnv("PETSTORE_API_KEY_SECRET_ARN", secretArn);
    vi.stubEnv("PETSTORE_STAGE", "local");
    secrets.on(GetSecretValueCommand, { SecretId: secretArn }).resolves({ SecretString: key });
    const stdout: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      stdout.push(String(chunk));
      return true;
    });

    const { handler } = await import("../../functions/syntheticCheck");
    const run = await handler();

    vi.restoreAllMocks();
    expect(run).toMatchObject({ passed: true, failedChecks: 0 });
    expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    const lines = stdout.join("").trim().split("\n");
    expect(lines.some((line) => line.includes(`"${syntheticMetricNames.passed}":1`))).toBe(true);
    expect(lines.some((line) => line.includes('"synthetic check run"'))).toBe(true);
    expect(stdout.join("")).not.toContain(key);
  });

  it("refuses to start without its configuration, naming what is missing", async () => {
    vi.stubEnv("PETSTORE_BASE_URL", "");
    vi.stubEnv("PETSTORE_API_KEY_SECRET_ARN", "my-secret");
    vi.stubEnv("PETSTORE_STAGE", "local");

    await expect(import("../../functions/syntheticCheck")).rejects.toThrow(
      "Invalid configuration: PETSTORE_BASE_URL is not an http(s) URL; PETSTORE_API_KEY_SECRET_ARN is not a Secrets Manager ARN.",
    );
  });
});
