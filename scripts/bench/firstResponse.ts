/**
 * The whole cold request, as Lambda runs it: a fresh `node` imports a bundle and answers its first
 * request, against an https DynamoDB (./tls.ts) and with only the environment Lambda gives a
 * function (credentials included, DYNAMODB_ENDPOINT not). Rounds interleave every bundle, each
 * starting at a different one, so drift on a shared machine hits all alike.
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { APIGatewayProxyEvent } from "aws-lambda";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import type { StageName } from "../../lib/config";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository } from "../../lib/pets/repository";
import type { OperationId } from "../../lib/routes";
import { toProxyEvent } from "../../local/proxyEvent";
import type { Bundle } from "./build";
import { lambdaRuntimeVariables, lambdaTraceHeader } from "./lambdaEnvironment";
import { median, percentile, round } from "./stats";
import { startHttpsDynamo } from "./tls";

export const firstResponseTimer = fileURLToPath(new URL("./firstResponseTimer.mjs", import.meta.url));

const TABLE = "petstore-bench-first-response";
/** A deployed stage, so that the API key has the shape the functions accept there. */
const STAGE = "staging" satisfies StageName;
/** The pet getPet reads: stored before the first round, so every getPet is a full 200. */
const STORED_PET_ID = 1;
/**
 * Pets stored before the first round: one more than listPets' default page (20), so every
 * listing answers the same full page whatever createPet adds meanwhile (new pets sort after).
 */
const STORED_PETS = 21;

/** What one cold process reports (./firstResponseTimer.mjs). */
export interface FirstResponse {
  /** Process start to the timer's first line (process.uptime()): Node's own boot, before any bundle code. */
  readonly bootMs: number;
  readonly importMs: number;
  readonly firstRequestMs: number;
  /** importMs + firstRequestMs: the part of a cold start the bundle decides. */
  readonly firstResponseMs: number;
  readonly statusCode: number;
  /** The response body (its first 2,000 characters). */
  readonly body: string | null;
}

export interface FirstResponseFigures {
  readonly medianMs: number;
  readonly p90Ms: number;
  readonly importMedianMs: number;
  readonly firstRequestMedianMs: number;
  readonly bootMedianMs: number;
  readonly statusCode: number;
  /** Each round's figures in round order, for paired comparisons between bundles. */
  readonly perRound: {
    readonly firstResponseMs: number[];
    readonly importMs: number[];
    readonly firstRequestMs: number[];
    readonly bootMs: number[];
  };
}

export interface FirstResponseResult {
  readonly rounds: number;
  /** `node --version` of the binary measured with. */
  readonly nodeVersion: string;
  /** AWS_LAMBDA_FUNCTION_MEMORY_SIZE given to every process: the staging stack's. */
  readonly memoryMb: number;
  readonly bundles: Record<string, FirstResponseFigures>;
}

/** Median over rounds of a's firstResponseMs divided by b's in the same round. */
export function pairedRatio(result: FirstResponseResult, a: string, b: string): number {
  const first = result.bundles[a]?.perRound.firstResponseMs ?? [];
  const second = result.bundles[b]?.perRound.firstResponseMs ?? [];
  if (first.length === 0 || first.length !== second.length) throw new Error(`no paired rounds of ${a} and ${b}`);
  return round(median(first.map((ms, index) => ms / (second[index] as number))), 3);
}

/** Median over rounds of a's firstResponseMs minus b's in the same round. */
export function pairedDifferenceMs(result: FirstResponseResult, a: string, b: string): number {
  const first = result.bundles[a]?.perRound.firstResponseMs ?? [];
  const second = result.bundles[b]?.perRound.firstResponseMs ?? [];
  if (first.length === 0 || first.length !== second.length) throw new Error(`no paired rounds of ${a} and ${b}`);
  return round(median(first.map((ms, index) => ms - (second[index] as number))), 2);
}

/** What one cut of the ladder saved: the step before it minus the step with it. */
export interface CutSaving {
  readonly cut: string;
  /** The ladder steps compared (bundle names). */
  readonly without: string;
  readonly with: string;
  /** Paired median over rounds of firstResponseMs (without − with). */
  readonly savedMs: number;
  readonly savedBytes: number;
  readonly savedModules: number;
}

/** `ladder`: the steps in order, from no cut to every cut (cutLadder in ./build.ts), all measured in `result`. */
export function cutSavings(result: FirstResponseResult, ladder: readonly Bundle[]): CutSaving[] {
  return ladder.slice(1).map((step, index) => {
    const previous = ladder[index] as Bundle;
    const cut = step.cuts?.at(-1);
    if (!cut || step.cuts?.length !== (previous.cuts?.length ?? 0) + 1) {
      throw new Error(`${previous.name} → ${step.name} is not one cut apart`);
    }
    return {
      cut,
      without: previous.name,
      with: step.name,
      savedMs: pairedDifferenceMs(result, previous.name, step.name),
      savedBytes: previous.bytes - step.bytes,
      savedModules: previous.modules - step.modules,
    };
  });
}

export interface LambdaEnvironmentOptions {
  readonly node: string;
  readonly functionName: string;
  /** Where the bundle is, as /var/task is in Lambda; also HOME, so no ~/.aws is within reach. */
  readonly taskRoot: string;
  readonly dynamo: { readonly endpoint: string; readonly caFile: string; readonly tableName: string };
  readonly stage: StageName;
  readonly memoryMb: number;
}

/**
 * Only what Lambda sets for a function
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
 * plus the stack's own variables and the two that point the SDK at the local https endpoint
 * (AWS_ENDPOINT_URL_DYNAMODB: https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html).
 * Not DYNAMODB_ENDPOINT: it gives the functions static local credentials, which Lambda never does.
 */
export function lambdaEnvironment(options: LambdaEnvironmentOptions): Record<string, string> {
  return {
    PATH: `${dirname(options.node)}:/usr/local/bin:/usr/bin:/bin`,
    ...lambdaRuntimeVariables({
      functionName: options.functionName,
      memoryMb: options.memoryMb,
      nodeMajor: "24",
      region: "us-east-1",
      version: "1",
      taskRoot: options.taskRoot,
    }),
    HOME: options.taskRoot,
    // The execution role's temporary credentials, as Lambda hands them over (fake: dynalite accepts any).
    AWS_ACCESS_KEY_ID: "ASIABENCHFIRSTRESPONSE",
    AWS_SECRET_ACCESS_KEY: "bench-first-response-secret",
    AWS_SESSION_TOKEN: "bench-first-response-session-token",
    _X_AMZN_TRACE_ID: lambdaTraceHeader(),
    AWS_ENDPOINT_URL_DYNAMODB: options.dynamo.endpoint,
    NODE_EXTRA_CA_CERTS: options.dynamo.caFile,
    PETS_TABLE_NAME: options.dynamo.tableName,
    PETSTORE_STAGE: options.stage,
    LOG_LEVEL: "INFO",
  };
}

/** Keeps the last `limit` characters of a stream: enough to say why a process failed. */
function tail(limit: number) {
  let text = "";
  return {
    add: (chunk: Buffer) => {
      text = (text + chunk.toString()).slice(-limit);
    },
    text: () => text.trim(),
  };
}

export interface FirstResponseRun {
  readonly node: string;
  readonly bundleFile: string;
  readonly event: APIGatewayProxyEvent;
  readonly env: Record<string, string>;
  readonly cwd: string;
  /** The timer to run (a copy outside the project, in the bench). */
  readonly timer?: string;
}

/** One fresh process: imports the bundle, answers the event, reports on fd 3. */
export function runFirstResponse(run: FirstResponseRun): Promise<FirstResponse> {
  const name = basename(run.bundleFile);
  return new Promise((resolve, reject) => {
    // Asynchronous: a dynalite in this process serves the child, and spawnSync would stop it.
    const child = spawn(run.node, [run.timer ?? firstResponseTimer, run.bundleFile, JSON.stringify(run.event)], {
      cwd: run.cwd,
      env: run.env,
      // stdout (the handler's log lines) is drained and kept only for a failure's message.
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    const stdout = tail(2000);
    const stderr = tail(2000);
    let report = "";
    child.stdout?.on("data", stdout.add);
    child.stderr?.on("data", stderr.add);
    child.stdio[3]?.on("data", (chunk: Buffer) => {
      report += chunk.toString();
    });
    // A child that hangs (a request that never returns) is ended, and fails the run.
    const deadline = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("error", (error) => {
      clearTimeout(deadline);
      reject(new Error(`${name}: could not start ${run.node}: ${error.message}`));
    });
    child.once("close", (code, signal) => {
      clearTimeout(deadline);
      try {
        if (code !== 0) throw new Error("no report");
        resolve(JSON.parse(report) as FirstResponse);
      } catch {
        const why = stderr.text() || stdout.text() || "(no output)";
        reject(new Error(`${name}: the process died (${signal ?? `exit ${code}`}): ${why}`));
      }
    });
  });
}

/** The request a bundle answers, as API Gateway would hand it over; the baseline gets getPet's. */
function requestOf(bundle: Bundle): OperationId {
  if (bundle.kind === "baseline") return "getPet";
  if (!bundle.operationId) throw new Error(`${bundle.name}: no request to send it (only functions and the baseline)`);
  return bundle.operationId;
}

/**
 * The figure of the createPet bundle answering a create with an Idempotency-Key (its request makes
 * six DynamoDB calls, the plain create three): measured in the same rounds, beside the others.
 */
export const IDEMPOTENT_CREATE = "createPetIdempotent";

const expectedStatus: Record<OperationId, number> = { getPet: 200, listPets: 200, createPet: 201 };

function proxyEvent(operation: OperationId, apiKey: string, idempotent = false): APIGatewayProxyEvent {
  const common = {
    search: new URLSearchParams(),
    sourceIp: "198.51.100.7",
  };
  const headers = {
    host: "abcdef1234.execute-api.us-east-1.amazonaws.com",
    "user-agent": "petstore-bench",
    accept: "application/json",
    authorization: `Bearer ${apiKey}`,
  };
  switch (operation) {
    case "getPet":
      return toProxyEvent({
        ...common,
        method: "GET",
        path: `/pets/${STORED_PET_ID}`,
        resource: "/pets/{petId}",
        pathParameters: { petId: String(STORED_PET_ID) },
        headers,
        body: "",
      });
    case "listPets":
      return toProxyEvent({
        ...common,
        method: "GET",
        path: "/pets",
        resource: "/pets",
        pathParameters: null,
        headers,
        body: "",
      });
    case "createPet":
      // With a key, a new one each time, so that each is a new pet (five writes instead of two).
      return toProxyEvent({
        ...common,
        method: "POST",
        path: "/pets",
        resource: "/pets",
        pathParameters: null,
        headers: {
          ...headers,
          "content-type": "application/json",
          ...(idempotent ? { "idempotency-key": randomUUID() } : {}),
        },
        body: JSON.stringify({ name: "Rex", categoryId: 1 }),
      });
  }
}

/** The memory size the staging stack gives every function (infra/config.ts). */
export async function stagingMemoryMb(): Promise<number> {
  const { stageConfigOf } = await import("../../infra/config");
  return stageConfigOf(STAGE).functions.memoryMb;
}

/** `node`: the binary to measure with (Lambda's Node in the bench). */
export async function measureFirstResponses(
  bundles: readonly Bundle[],
  rounds: number,
  node = process.execPath,
): Promise<FirstResponseResult> {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a whole number ≥ 1, not ${rounds}`);
  const memoryMb = await stagingMemoryMb();
  const nodeVersion = (await promisify(execFile)(node, ["--version"])).stdout.trim();
  const dynamo = await startHttpsDynamo(TABLE);
  // Outside the project, as /var/task is: a bundle that needs node_modules fails here.
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-first-response-"));
  try {
    const documents = DynamoDBDocumentClient.from(dynamo.client);
    const { key } = await issueApiKey(new DynamoApiKeyStore(documents, TABLE), STAGE, "first-response");
    const pets = new DynamoPetRepository(documents, TABLE);
    for (let stored = 0; stored < STORED_PETS; stored++) {
      const id = await pets.allocateId();
      await pets.insert({ id, name: `Stored ${id}`, categoryId: 1, status: "available" }, SHARED_PETS);
    }
    const timer = join(dir, basename(firstResponseTimer));
    await copyFile(firstResponseTimer, timer);
    const targets: { name: string; bundle: Bundle; file: string; operation: OperationId; idempotent: boolean }[] = [];
    for (const bundle of bundles) {
      const file = join(dir, basename(bundle.file));
      await copyFile(bundle.file, file);
      const operation = requestOf(bundle);
      targets.push({ name: bundle.name, bundle, file, operation, idempotent: false });
      // The project's client sends an Idempotency-Key with every create: that request too, as its own figure.
      if (bundle.kind === "function" && operation === "createPet") {
        targets.push({ name: IDEMPOTENT_CREATE, bundle, file, operation, idempotent: true });
      }
    }
    const runOnce = async (target: (typeof targets)[number]): Promise<FirstResponse> => {
      const env = lambdaEnvironment({
        node,
        functionName: `petstore-${STAGE}-${target.operation}`,
        taskRoot: dir,
        dynamo,
        stage: STAGE,
        memoryMb,
      });
      const answer = await runFirstResponse({
        node,
        timer,
        bundleFile: target.file,
        event: proxyEvent(target.operation, key, target.idempotent),
        env,
        cwd: dir,
      });
      const expected = expectedStatus[target.operation];
      if (answer.statusCode !== expected) {
        throw new Error(
          `${target.name} answered ${answer.statusCode} to ${target.operation}'s request, not ${expected}: ${answer.body}`,
        );
      }
      return answer;
    };
    // One unmeasured pass warms the OS file cache for every file (and checks every answer).
    for (const target of targets) await runOnce(target);
    const raw = new Map<string, FirstResponse[]>(targets.map((target) => [target.name, []]));
    for (let roundIndex = 0; roundIndex < rounds; roundIndex++) {
      for (let i = 0; i < targets.length; i++) {
        const target = targets[(roundIndex + i) % targets.length] as (typeof targets)[number];
        raw.get(target.name)?.push(await runOnce(target));
      }
    }
    const result: FirstResponseResult = { rounds, nodeVersion, memoryMb, bundles: {} };
    for (const [name, answers] of raw) {
      const series = (pick: (answer: FirstResponse) => number) => answers.map((answer) => round(pick(answer), 3));
      const firstResponseMs = series((answer) => answer.firstResponseMs);
      const importMs = series((answer) => answer.importMs);
      const firstRequestMs = series((answer) => answer.firstRequestMs);
      const bootMs = series((answer) => answer.bootMs);
      result.bundles[name] = {
        medianMs: round(median(firstResponseMs), 2),
        p90Ms: round(percentile(firstResponseMs, 90), 2),
        importMedianMs: round(median(importMs), 2),
        firstRequestMedianMs: round(median(firstRequestMs), 2),
        bootMedianMs: round(median(bootMs), 2),
        statusCode: answers[0]?.statusCode ?? 0,
        perRound: { firstResponseMs, importMs, firstRequestMs, bootMs },
      };
    }
    return result;
  } finally {
    await rm(dir, { recursive: true, force: true });
    await dynamo.close();
  }
}
