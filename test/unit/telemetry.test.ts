import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { ServiceUnavailableError } from "../../lib/errors";
import { isoTimestamp } from "../../lib/observability/logger";
import {
  embeddedMetricRecord,
  METRICS_NAMESPACE,
  metricNames,
  roundedMs,
  roundedMsText,
} from "../../lib/observability/metrics";
import type { RequestSummary } from "../../lib/observability/telemetry";
import { bearer, invoke, jsonContent } from "../support/api";
import { fakeDependencies, singleKeyVerifier } from "../support/fakes";
import { capturedTelemetry } from "../support/telemetry";

describe("request telemetry", () => {
  it("logs one JSON line per request with its facts and the key's id, never the key, and flags the cold start once", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry();
    const listPets = createListPets(
      fakeDependencies(key, { keys: singleKeyVerifier(key, { keyId: "key_visible", scope: "write" }), telemetry }),
    );

    const first = await invoke(listPets, { path: "/pets", headers: bearer(key) });
    await invoke(listPets, { path: "/pets?limit=0", headers: bearer(key) });

    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.message === "request");
    expect(requests).toHaveLength(2);
    expect(requests[0]).toMatchObject({
      level: "INFO",
      service: "petstore",
      stage: "test",
      operation: "listPets",
      method: "GET",
      route: "/pets",
      status: 200,
      coldStart: true,
      requestId: first.headers["x-request-id"],
      apiKeyId: "key_visible",
    });
    expect(requests[0].latencyMs).toBeGreaterThanOrEqual(0);
    expect(requests[1]).toMatchObject({ status: 400, coldStart: false });
    expect(lines.join("\n")).not.toContain(key);
  });

  it("takes the X-Ray trace from the header API Gateway passes on, before Lambda's environment", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry("json", {
      fallbackTraceHeader: () => "Root=1-00000000-000000000000000000000000;Sampled=0",
    });
    const listPets = createListPets(fakeDependencies(key, { telemetry }));

    await invoke(listPets, {
      path: "/pets",
      headers: {
        ...bearer(key),
        "X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
      },
    });

    const [request] = lines.map((line) => JSON.parse(line)).filter((entry) => entry.message === "request");
    expect(request.xrayTraceId).toBe("1-5759e988-bd862e3fe1be46a994272793");
  });

  it("writes a request's log line and metrics line in one write, as two lines", async () => {
    const key = generateApiKey("local");
    const { writes, telemetry } = capturedTelemetry();
    const listPets = createListPets(fakeDependencies(key, { telemetry }));

    await invoke(listPets, { path: "/pets", headers: bearer(key) });

    expect(writes).toHaveLength(1);
    const [requestLine, metricsLine, ...rest] = (writes[0] as string).split("\n");
    expect(rest).toEqual([]);
    expect(JSON.parse(requestLine as string)).toMatchObject({ message: "request", status: 200 });
    expect(JSON.parse(metricsLine as string)).toMatchObject({ Operation: "listPets", [metricNames.requests]: 1 });
  });

  it("writes the metrics line at every log level, and the request line only where the level lets it", async () => {
    const key = generateApiKey("local");
    for (const level of ["WARN", "ERROR", "SILENT"] as const) {
      const { lines, telemetry } = capturedTelemetry("json", { level });
      const deps = fakeDependencies(key, { telemetry });
      await invoke(createListPets(deps), { path: "/pets", headers: bearer(key) });
      deps.pets.page = async () => {
        throw new TypeError("boom");
      };
      await invoke(createListPets(deps), { path: "/pets", headers: bearer(key) });

      const entries = lines.map((line) => JSON.parse(line));
      expect(entries.filter((entry) => entry._aws)).toHaveLength(2);
      const requestLines = entries.filter((entry) => entry.message === "request");
      expect(requestLines.map((entry) => entry.status)).toEqual(level === "SILENT" ? [] : [500]);
    }
  });

  it("names the error's code and the invocation's X-Ray trace in the request line", async () => {
    const key = generateApiKey("local");
    let traceHeader: string | undefined = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    const { lines, telemetry } = capturedTelemetry("json", { fallbackTraceHeader: () => traceHeader });
    const listPets = createListPets(fakeDependencies(key, { telemetry }));

    await invoke(listPets, { path: "/pets", headers: bearer(key) });
    traceHeader = "Root=1-67891233-abcdef012345678912345678;Parent=1234567890abcdef;Sampled=0";
    await invoke(listPets, { path: "/pets", headers: bearer(generateApiKey("local")) });
    traceHeader = undefined;
    await invoke(listPets, { path: "/pets?limit=0", headers: bearer(key) });

    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.message === "request");
    expect(requests.map(({ status, errorCode, xrayTraceId }) => ({ status, errorCode, xrayTraceId }))).toEqual([
      { status: 200, errorCode: undefined, xrayTraceId: "1-5759e988-bd862e3fe1be46a994272793" },
      { status: 401, errorCode: "unauthorized", xrayTraceId: "1-67891233-abcdef012345678912345678" },
      { status: 400, errorCode: "invalid_request", xrayTraceId: undefined },
    ]);
  });

  it("logs the client's user agent in the request line as valid JSON, whatever characters it holds", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry();
    const listPets = createListPets(fakeDependencies(key, { telemetry }));
    const hostile = 'curl/8 "quoted" \\back\\slash\n{"braces":}\t\u0000 ünï';

    await invoke(listPets, { path: "/pets", headers: { ...bearer(key), "User-Agent": hostile } });

    const [request] = lines.map((line) => JSON.parse(line)).filter((entry) => entry.message === "request");
    expect(lines).toHaveLength(2);
    expect(request.userAgent).toBe(hostile);
  });

  it("publishes per-operation metrics in CloudWatch Embedded Metric Format", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry();
    const createPet = createCreatePet(fakeDependencies(key, { telemetry }));

    await invoke(createPet, {
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), ...jsonContent },
      body: '{"name":"Rex","categoryId":1}',
    });
    await invoke(createPet, { method: "POST", path: "/pets", headers: { ...jsonContent }, body: "{}" });

    const records = lines.map((line) => JSON.parse(line)).filter((entry) => entry._aws);
    expect(records).toHaveLength(2);
    expect(records[0]._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: METRICS_NAMESPACE,
      Dimensions: [["Stage", "Operation"]],
    });
    expect(records[0]).toMatchObject({
      Stage: "test",
      Operation: "createPet",
      [metricNames.requests]: 1,
      [metricNames.petsCreated]: 1,
      [metricNames.clientErrors]: 0,
      [metricNames.authFailures]: 0,
    });
    expect(records[1]).toMatchObject({
      [metricNames.clientErrors]: 1,
      [metricNames.authFailures]: 1,
      [metricNames.petsCreated]: 0,
    });
    const declared = records[0]._aws.CloudWatchMetrics[0].Metrics.map((metric: { Name: string }) => metric.Name);
    expect(declared.sort()).toEqual(Object.values(metricNames).sort());
  });

  it("logs a 5xx with its stack and the request id the client saw, while the client sees neither", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry();
    const deps = fakeDependencies(key, { telemetry });
    deps.pets.page = async () => {
      throw new TypeError("boom inside the repository");
    };

    const response = await invoke(createListPets(deps), { path: "/pets", headers: bearer(key) });

    const entries = lines.map((line) => JSON.parse(line));
    const failure = entries.find((entry) => entry.message === "request failed");
    expect(response.status).toBe(500);
    expect(failure).toMatchObject({ level: "ERROR", requestId: response.headers["x-request-id"], status: 500 });
    expect(failure.error.stack).toContain("boom inside the repository");
    expect(JSON.stringify(response.json)).not.toContain("boom");
    expect(entries.find((entry) => entry.message === "request")).toMatchObject({ level: "ERROR", status: 500 });
  });

  it("prints errors readably and leaves request lines to the local server in pretty mode", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry("pretty");
    const deps = fakeDependencies(key, { telemetry });
    deps.pets.page = async () => {
      throw new Error("store exploded");
    };
    const listPets = createListPets(deps);

    await invoke(listPets, { path: "/pets", headers: bearer(key) });

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ERROR request failed requestId=\S+ status=500\nError: store exploded/);
  });

  it("prints the cause of an error in pretty mode, so a 503 on a terminal shows what the store said", async () => {
    const key = generateApiKey("local");
    const { lines, telemetry } = capturedTelemetry("pretty");
    const deps = fakeDependencies(key, { telemetry });
    deps.pets.page = async () => {
      throw new ServiceUnavailableError(1, { cause: new Error("connect ECONNREFUSED 127.0.0.1:8000") });
    };
    const listPets = createListPets(deps);

    const response = await invoke(listPets, { path: "/pets", headers: bearer(key) });

    expect(response.status).toBe(503);
    expect(lines[0]).toContain("ServiceUnavailableError");
    expect(lines[0]).toContain("Caused by: Error: connect ECONNREFUSED 127.0.0.1:8000");
  });
});

describe("telemetry lines joined from parts", () => {
  const optionalText = fc.option(fc.string({ unit: "binary" }), { nil: undefined });
  const summaries: fc.Arbitrary<RequestSummary> = fc.record({
    operation: fc.constantFrom("listPets", "getPet", "createPet"),
    method: fc.constantFrom("GET", "POST"),
    route: fc.constantFrom("/pets", "/pets/{petId}"),
    path: fc.string({ unit: "binary" }),
    status: fc.integer({ min: 100, max: 599 }),
    latencyMs: fc.double({ min: 0, max: 1e6, noNaN: true }),
    coldStart: fc.boolean(),
    petCreated: fc.boolean(),
    requestId: optionalText,
    lambdaRequestId: optionalText,
    apiKeyId: optionalText,
    userAgent: optionalText,
    errorCode: fc.option(fc.constantFrom("not_found", "unauthorized", "internal_error"), { nil: undefined }),
  });
  const traceRoots = fc.option(fc.stringMatching(/^1-[0-9a-f]{8}-[0-9a-f]{24}$/), { nil: undefined });

  it("writes the request line the JSON logger would write for the same fields, whatever they hold", () => {
    fc.assert(
      fc.property(summaries, traceRoots, (summary, root) => {
        const { lines, telemetry } = capturedTelemetry("json", {
          fallbackTraceHeader: () =>
            root === undefined ? undefined : `Root=${root};Parent=53995c3f42cd8ad8;Sampled=1`,
        });
        telemetry.requestCompleted(summary);
        const [line] = lines;
        const { petCreated: _, ...fields } = summary;
        const expected = JSON.stringify({
          timestamp: JSON.parse(line as string).timestamp,
          level: summary.status >= 500 ? "ERROR" : "INFO",
          message: "request",
          service: "petstore",
          stage: "test",
          ...fields,
          latencyMs: Math.round(summary.latencyMs * 1000) / 1000,
          xrayTraceId: root,
        });
        expect(line).toBe(expected);
      }),
    );
  });

  it("writes the metric record JSON.stringify gives for the same object", () => {
    fc.assert(
      fc.property(summaries, fc.string(), fc.integer({ min: 0, max: 4e12 }), (summary, stage, timestamp) => {
        const { status } = summary;
        const values: Record<string, number> = {
          [metricNames.requests]: 1,
          [metricNames.clientErrors]: status >= 400 && status < 500 ? 1 : 0,
          [metricNames.serverErrors]: status >= 500 ? 1 : 0,
          [metricNames.latency]: Math.round(summary.latencyMs * 1000) / 1000,
          [metricNames.coldStarts]: summary.coldStart ? 1 : 0,
          [metricNames.petsCreated]: summary.petCreated ? 1 : 0,
          [metricNames.authFailures]: status === 401 ? 1 : 0,
        };
        const expected = JSON.stringify({
          _aws: {
            Timestamp: timestamp,
            CloudWatchMetrics: [
              {
                Namespace: METRICS_NAMESPACE,
                Dimensions: [["Stage", "Operation"]],
                Metrics: Object.keys(values).map((Name) => ({
                  Name,
                  Unit: Name === metricNames.latency ? "Milliseconds" : "Count",
                })),
              },
            ],
          },
          Stage: stage,
          Operation: summary.operation,
          ...values,
        });
        expect(embeddedMetricRecord(stage, summary, timestamp)).toBe(expected);
      }),
    );
  });

  it("writes latencies as JSON.stringify writes them rounded to the microsecond, for any number", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double(),
          fc.double({ min: 0, max: 10_000 }),
          fc.integer({ min: 0, max: 10_000_000 }).map((us) => us / 1000),
        ),
        (ms) => {
          expect(roundedMsText(ms)).toBe(JSON.stringify(roundedMs(ms)));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("stamps lines with what toISOString gives when a quiet container moves on by seconds, hours and days", () => {
    const start = fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 });
    const steps = fc.array(fc.integer({ min: 1, max: 30 * 60 * 60 * 1000 }), { minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(start, steps, (first, gaps) => {
        let instant = first;
        for (const gap of gaps) {
          instant += gap;
          expect(isoTimestamp(instant)).toBe(new Date(instant).toISOString());
        }
      }),
    );
  });

  it("stamps lines with what toISOString gives, in the same second, across seconds and at any instant", () => {
    const instants = fc.oneof(
      fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }),
      fc.integer({ min: 1_700_000_000_000, max: 1_700_000_003_000 }),
    );
    fc.assert(
      fc.property(fc.array(instants, { minLength: 1, maxLength: 20 }), (sequence) => {
        for (const instant of sequence) expect(isoTimestamp(instant)).toBe(new Date(instant).toISOString());
      }),
    );
  });
});

describe("the X-Ray trace id in the request line", () => {
  const traceIdFor = (header: string | undefined) => {
    const { lines, telemetry } = capturedTelemetry("json", { fallbackTraceHeader: () => header });
    telemetry.requestCompleted({
      operation: "getPet",
      method: "GET",
      route: "/pets/{petId}",
      path: "/pets/1",
      status: 200,
      latencyMs: 1,
      coldStart: false,
      petCreated: false,
      requestId: undefined,
      lambdaRequestId: undefined,
      apiKeyId: undefined,
      userAgent: undefined,
    });
    return JSON.parse(lines[0] as string).xrayTraceId;
  };

  it.each([
    [
      "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
      "1-5759e988-bd862e3fe1be46a994272793",
    ],
    ["Root=1-5759e988-bd862e3fe1be46a994272793", "1-5759e988-bd862e3fe1be46a994272793"],
    [
      "Parent=53995c3f42cd8ad8;Root=1-67891233-abcdef012345678912345678;Sampled=0",
      "1-67891233-abcdef012345678912345678",
    ],
    ["Parent=53995c3f42cd8ad8;Sampled=1", undefined],
    ["Root=;Sampled=1", undefined],
    ["", undefined],
  ])("reads %j as %j", (header, expected) => {
    expect(traceIdFor(header)).toBe(expected);
  });
});
