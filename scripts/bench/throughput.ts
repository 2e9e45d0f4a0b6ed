/**
 * Local throughput: autocannon against `npm start -- --in-memory` (its own process: server,
 * handlers and embedded dynalite on one event loop, as a developer runs it), then the same
 * requests straight to the handlers in this process, on their own in-memory dynalite, with the
 * same concurrency. The ratio is what the local HTTP stand-in for API Gateway costs.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { open, readFile } from "node:fs/promises";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import autocannon from "autocannon";
import type { Context } from "aws-lambda";
import { type CreatePetDependencies, createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { createDocumentClient } from "../../lib/db/client";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { DynamoPetRepository } from "../../lib/pets/repository";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { toProxyEvent } from "../../local/proxyEvent";
import { benchDir, projectRoot } from "./build";
import { discardedTelemetry } from "./middleware";
import { median, percentile, round } from "./stats";

export const CONNECTIONS = 10;
const SEEDED_PETS = 100;
const newPetBody = JSON.stringify({ name: "Rex", categoryId: 1, status: "available" });

interface Scenario {
  readonly name: string;
  readonly method: "GET" | "POST";
  /** Path below /v1, with its query. */
  readonly path: string;
  readonly resource: string;
  readonly pathParameters: Record<string, string> | null;
  readonly body: string;
}

export const scenarios: readonly Scenario[] = [
  {
    name: "GET /v1/pets?limit=20",
    method: "GET",
    path: "/pets?limit=20",
    resource: "/pets",
    pathParameters: null,
    body: "",
  },
  {
    name: "GET /v1/pets/{id}",
    method: "GET",
    path: "/pets/42",
    resource: "/pets/{petId}",
    pathParameters: { petId: "42" },
    body: "",
  },
  { name: "POST /v1/pets", method: "POST", path: "/pets", resource: "/pets", pathParameters: null, body: newPetBody },
];

export interface RunFigures {
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  /** Answers outside 2xx, plus errors and timeouts. */
  readonly non2xx: number;
}

export interface ThroughputResult {
  readonly durationSeconds: number;
  readonly connections: number;
  readonly scenarios: Record<string, { server: RunFigures; inProcess: RunFigures; serverToInProcess: number }>;
}

function headersFor(scenario: Scenario, key: string): Record<string, string> {
  return {
    authorization: `Bearer ${key}`,
    ...(scenario.body ? { "content-type": "application/json" } : {}),
  };
}

interface LocalServer {
  readonly baseUrl: string;
  readonly key: string;
  stop(): Promise<void>;
}

/** `npm start -- --in-memory` on free ports; resolves once it has printed its URL and key. */
async function startServer(): Promise<LocalServer> {
  // Its output goes to a file, not a pipe: a pipe this busy process drains late would block the
  // server's synchronous log writes and slow it down for reasons that are not the server's.
  const logFile = `${benchDir}/npm-start.log`;
  const log = await open(logFile, "w");
  const child: ChildProcess = spawn("npm", ["start", "--", "--in-memory"], {
    cwd: projectRoot,
    env: { ...process.env, PORT: "0", DYNAMODB_PORT: "0", PETS_TABLE_NAME: "petstore-bench", LOG_LEVEL: "INFO" },
    // Its own process group, so that stopping it stops npm, tsx and node together.
    detached: true,
    stdio: ["ignore", log.fd, log.fd],
  });
  await log.close();
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    const exited = once(child, "exit");
    process.kill(-child.pid, "SIGTERM");
    const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, "SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    const output = await readFile(logFile, "utf8");
    // The banner's paste-ready line (local/main.ts): `export BASE=<base URL> KEY=<key>`.
    const [, baseUrl, key] = /export BASE=(\S+) KEY=(petstore_local_\w+)/.exec(output) ?? [];
    if (baseUrl && key) return { baseUrl, key, stop };
    if (child.exitCode !== null || Date.now() > giveUpAt) {
      await stop();
      throw new Error(`npm start did not start (see ${logFile}):\n${output.slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function cannon(server: LocalServer, scenario: Scenario, seconds: number): Promise<RunFigures> {
  const result = await autocannon({
    url: `${server.baseUrl}${scenario.path}`,
    method: scenario.method,
    headers: headersFor(scenario, server.key),
    ...(scenario.body ? { body: scenario.body } : {}),
    connections: CONNECTIONS,
    duration: seconds,
  });
  return {
    requests: result.requests.total,
    requestsPerSecond: round(result.requests.total / result.duration, 0),
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts,
  };
}

async function measureServer(seconds: number, warmupSeconds: number): Promise<Record<string, RunFigures>> {
  const server = await startServer();
  try {
    const create = scenarios[2] as Scenario;
    for (let i = 0; i < SEEDED_PETS; i++) {
      const response = await fetch(`${server.baseUrl}/pets`, {
        method: "POST",
        headers: headersFor(create, server.key),
        body: newPetBody,
      });
      if (response.status !== 201) throw new Error(`seeding the local server: ${response.status}`);
    }
    const figures: Record<string, RunFigures> = {};
    for (const scenario of scenarios) {
      await cannon(server, scenario, warmupSeconds);
      figures[scenario.name] = await cannon(server, scenario, seconds);
    }
    return figures;
  } finally {
    await server.stop();
  }
}

const context = {
  awsRequestId: "bench",
  functionName: "bench",
  getRemainingTimeInMillis: () => 10_000,
} as unknown as Context;

/** CONNECTIONS callers, each sending its next request as soon as the last is answered. */
async function pool(handler: ProxyHandler, scenario: Scenario, key: string, seconds: number): Promise<RunFigures> {
  const url = new URL(scenario.path, "http://localhost");
  const latencies: number[] = [];
  let non2xx = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  const caller = async () => {
    while (performance.now() < deadline) {
      const begun = performance.now();
      const event = toProxyEvent({
        method: scenario.method,
        path: url.pathname,
        search: url.searchParams,
        headers: { ...headersFor(scenario, key), "user-agent": "bench" },
        body: scenario.body,
        resource: scenario.resource,
        pathParameters: scenario.pathParameters,
        sourceIp: "127.0.0.1",
      });
      const result = await handler(event, context);
      latencies.push(performance.now() - begun);
      if (result.statusCode < 200 || result.statusCode >= 300) non2xx += 1;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, caller));
  const elapsed = (performance.now() - started) / 1000;
  return {
    requests: latencies.length,
    requestsPerSecond: round(latencies.length / elapsed, 0),
    latencyP50Ms: round(median(latencies), 2),
    latencyP99Ms: round(percentile(latencies, 99), 2),
    non2xx,
  };
}

async function measureInProcess(seconds: number, warmupSeconds: number): Promise<Record<string, RunFigures>> {
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  try {
    const table = "petstore-bench-throughput";
    const credentials = { accessKeyId: "local", secretAccessKey: "local" };
    await ensureTable(new DynamoDBClient({ region: "us-east-1", endpoint: dynamo.endpoint, credentials }), table);
    // As lib/runtime.ts builds them, against this dynalite; log lines are built but not written.
    const client = createDocumentClient({ region: "us-east-1", endpoint: dynamo.endpoint });
    const keyStore = new DynamoApiKeyStore(client, table);
    const { key } = await issueApiKey(keyStore, "local", "bench");
    const deps: CreatePetDependencies = {
      pets: new DynamoPetRepository(client, table),
      idempotency: new DynamoIdempotencyStore(client, table),
      keys: createApiKeyVerifier(keyStore, "local"),
      clock: () => new Date(),
      telemetry: discardedTelemetry(),
    };
    const handlers: Record<string, ProxyHandler> = {
      "GET /v1/pets?limit=20": createListPets(deps),
      "GET /v1/pets/{id}": createGetPet(deps),
      "POST /v1/pets": createCreatePet(deps),
    };
    const create = scenarios[2] as Scenario;
    const createHandler = handlers[create.name] as ProxyHandler;
    for (let i = 0; i < SEEDED_PETS; i++) {
      const url = new URL(create.path, "http://localhost");
      const result = await createHandler(
        toProxyEvent({
          method: "POST",
          path: url.pathname,
          search: url.searchParams,
          headers: headersFor(create, key),
          body: create.body,
          resource: create.resource,
          pathParameters: null,
          sourceIp: "127.0.0.1",
        }),
        context,
      );
      if (result.statusCode !== 201) throw new Error(`seeding in-process: ${result.statusCode} ${result.body}`);
    }
    const figures: Record<string, RunFigures> = {};
    for (const scenario of scenarios) {
      const handler = handlers[scenario.name] as ProxyHandler;
      await pool(handler, scenario, key, warmupSeconds);
      figures[scenario.name] = await pool(handler, scenario, key, seconds);
    }
    return figures;
  } finally {
    await dynamo.close();
  }
}

export async function measureThroughput(seconds: number): Promise<ThroughputResult> {
  const warmupSeconds = Math.min(2, Math.max(0.5, seconds / 5));
  const server = await measureServer(seconds, warmupSeconds);
  const inProcess = await measureInProcess(seconds, warmupSeconds);
  const result: ThroughputResult = { durationSeconds: seconds, connections: CONNECTIONS, scenarios: {} };
  for (const scenario of scenarios) {
    const viaServer = server[scenario.name] as RunFigures;
    const direct = inProcess[scenario.name] as RunFigures;
    result.scenarios[scenario.name] = {
      server: viaServer,
      inProcess: direct,
      serverToInProcess: round(viaServer.requestsPerSecond / direct.requestsPerSecond, 2),
    };
  }
  return result;
}
