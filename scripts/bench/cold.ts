/**
 * `npm run bench`, sections 1 and 2: each bundle, and its cold first response (spawn() to first answer) against two
 * bare handlers (./bareHandler.ts): the floor, with our esbuild options, and the peer, as NodejsFunction bundles by
 * default. Rounds run every side once in a shuffled order. DynamoDB is dynalite behind https delayed DYNAMO_DELAY_MS
 * per call (an in-region round trip); a bare side making other calls or answering another status fails the run.
 * Alone: `npx tsx scripts/bench/cold.ts --rounds 5`.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFile, cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import type { IncomingMessage, RequestListener, Server } from "node:http";
import { Agent, createServer } from "node:https";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { PassThrough } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import dynalite from "dynalite";
import { generate } from "selfsigned";
import { stageConfigOf } from "../../infra/config";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository } from "../../lib/pets/repository";
import { ensureTable } from "../../local/dynamo";
import { listen } from "../../local/listen";
import { toProxyEvent } from "../../local/proxyEvent";
import { runAsScript } from "../entryPoint";
import { type Bundle, buildBundles, bundleDir, bundleFile, projectRoot, SIDES, type Side } from "./build";
import { coldEnvironment } from "./lambdaEnvironment";
import { type Figure, figure, markdownTables, TARGETS, type Target } from "./report";
import { BENCH_RUNTIMES, type BenchRuntime, nodeOf } from "./runtimes";
import { median, round, seededRandom, shuffled, upperQuartile } from "./stats";

/**
 * Added to every DynamoDB call: "for most atomic operations, such as GetItem and PutItem, you can expect an average
 * latency in single-digit milliseconds" (https://repost.aws/knowledge-center/dynamodb-high-latency).
 */
export const DYNAMO_DELAY_MS = 5;
const TABLE = "petstore-bench-cold";
const STAGE = "staging";
const CHILD = fileURLToPath(new URL("./coldChild.mjs", import.meta.url));
/** Pets stored first: one more than listPets' default page (20), so every listing is a full page. */
const STORED_PETS = 21;

/** A call as recorded: its operation and the partition it names, up to any `#` (`PutItem IDEMPOTENCY`). */
function describeCall(request: IncomingMessage, body: string): string {
  const input = JSON.parse(body || "{}");
  const pk = input.Key?.pk?.S ?? input.Item?.pk?.S ?? input.ExpressionAttributeValues?.[":pk"]?.S ?? "-";
  return `${String(request.headers["x-amz-target"]).split(".")[1]} ${String(pk).split("#")[0]}`;
}

/**
 * dynalite behind https, each request held `delayMs`. https because over http the SDK loads modules (undici, http2,
 * zlib) a deployed function, whose endpoint is https, never loads. A certificate per run.
 */
export async function startDelayedDynamo(tableName: string, delayMs = DYNAMO_DELAY_MS) {
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-dynamo-"));
  const now = Date.now();
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keySize: 2048, // as AWS endpoints' keys
    algorithm: "sha256",
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 86_400_000),
    extensions: [{ name: "subjectAltName", altNames: [{ type: 2, value: "localhost" }] }],
  });
  const caFile = join(dir, "localhost.pem");
  await writeFile(caFile, pems.cert);
  // It never listens: only its request listener is used, behind the https server.
  const handle = dynalite({ createTableMs: 0 }).listeners("request")[0] as RequestListener;
  /** Each call since the caller last emptied it. */
  const calls: string[] = [];
  const accessKeyIds = new Set<string>();
  const server = createServer({ key: pems.private, cert: pems.cert }, async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    calls.push(describeCall(request, body.toString()));
    const credential = /Credential=([^/,\s]+)\//.exec(String(request.headers.authorization));
    if (credential?.[1]) accessKeyIds.add(credential[1]);
    await sleep(delayMs);
    // dynalite reads the request's headers, method, url and body stream: it gets a replay of them.
    const { headers, method, url } = request;
    const replay = Object.assign(new PassThrough(), { headers, method, url });
    handle(replay as unknown as IncomingMessage, response);
    replay.end(body);
  });
  const endpoint = `https://localhost:${await listen(server as unknown as Server, 0, "127.0.0.1")}`;
  const agent = new Agent({ ca: pems.cert, keepAlive: true });
  const credentials = { accessKeyId: "local", secretAccessKey: "local" };
  const requestHandler = { httpsAgent: agent };
  const client = new DynamoDBClient({ region: "us-east-1", endpoint, credentials, requestHandler });
  const close = async () => {
    client.destroy();
    agent.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  };
  await ensureTable(client, tableName).catch(async (error) => {
    await close();
    throw error;
  });
  return { endpoint, caFile, client, tableName, calls, accessKeyIdsSeen: () => new Set(accessKeyIds), close };
}
export type DelayedDynamo = Awaited<ReturnType<typeof startDelayedDynamo>>;

/** `file`: the bundle, none for Node's bare start; `child`: the child script (the bench runs a copy). */
export interface ColdRun {
  readonly node: string;
  readonly file?: string;
  readonly event?: unknown;
  readonly env: Record<string, string>;
  readonly cwd: string;
  readonly child?: string;
}

/**
 * One fresh process: loads the bundle, answers the event, reports (./coldChild.mjs). `ms`: spawn() to the report on fd
 * 3, Node's start included.
 */
export function runCold(run: ColdRun): Promise<{ ms: number; statusCode?: number; body?: string | null }> {
  const args = [run.child ?? CHILD, ...(run.file ? [run.file, JSON.stringify(run.event)] : [])];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    // Asynchronous: the dynalite the child calls runs in this process.
    const proc = spawn(run.node, args, { cwd: run.cwd, env: run.env, stdio: ["ignore", "pipe", "pipe", "pipe"] });
    let ms = 0;
    let report = "";
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-1000);
    };
    proc.stdout?.on("data", keep);
    proc.stderr?.on("data", keep);
    proc.stdio[3]?.on("data", (chunk: Buffer) => {
      ms ||= performance.now() - started;
      report += chunk.toString();
    });
    const deadline = setTimeout(() => proc.kill("SIGKILL"), 30_000);
    proc.once("error", (error) => reject(new Error(`could not start ${run.node}: ${error.message}`)));
    proc.once("close", (code, signal) => {
      clearTimeout(deadline);
      try {
        if (code !== 0) throw new Error();
        resolve({ ms, ...JSON.parse(report) });
      } catch {
        const why = output.trim().split("\n").at(-1) || "(no output)";
        reject(new Error(`${basename(run.file ?? "node")} died (${signal ?? `exit ${code}`}): ${why}`));
      }
    });
  });
}

/** The requests measured: each operation, and a create with an Idempotency-Key (the client's default). */
const CASES = ["listPets", "getPet", "createPet", "createPetIdempotent"] as const;
type Case = (typeof CASES)[number];
const operationOf = (kase: Case) => (kase === "createPetIdempotent" ? "createPet" : kase);
const EXPECTED_STATUS: Record<Case, number> = { listPets: 200, getPet: 200, createPet: 201, createPetIdempotent: 201 };

/** The request as API Gateway hands it over; each create a new pet, each Idempotency-Key a new one. */
function coldRequest(kase: Case, apiKey: string) {
  const create = kase.startsWith("create");
  const idempotency = kase === "createPetIdempotent" ? { "idempotency-key": randomUUID() } : {};
  return toProxyEvent({
    method: create ? "POST" : "GET",
    path: kase === "getPet" ? "/pets/1" : "/pets",
    resource: kase === "getPet" ? "/pets/{petId}" : "/pets",
    pathParameters: kase === "getPet" ? { petId: "1" } : null,
    search: new URLSearchParams(),
    sourceIp: "198.51.100.7",
    headers: {
      host: "abcdef1234.execute-api.us-east-1.amazonaws.com",
      accept: "application/json",
      authorization: `Bearer ${apiKey}`,
      ...(create ? { "content-type": "application/json", ...idempotency } : {}),
    },
    body: create ? JSON.stringify({ name: "Rex", categoryId: 1 }) : "",
  });
}

/** The memory size the staging stack gives every function (infra/config.ts). */
export const stagingMemoryMb = () => stageConfigOf(STAGE).functions.memoryMb;

type Run = { readonly name: string; readonly side: Side | "node"; readonly kase?: Case; readonly file?: string };

/** `seed`: the shuffles' (in details, so that a run's orders can be repeated); new by default. */
export type ColdOptions = { runtimes: readonly BenchRuntime[]; rounds: number; seed?: number };

export async function measureCold(options: ColdOptions): Promise<{ figures: Figure[]; details: unknown }> {
  const { runtimes, rounds, seed = Date.now() % 2 ** 32 } = options;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a whole number ≥ 1, not ${rounds}`);
  const bundles = await buildBundles();
  const figures = bundleFigures(bundles);
  const memoryMb = stagingMemoryMb();
  const dynamo = await startDelayedDynamo(TABLE);
  // Outside the project, as /var/task is: a bundle that needs node_modules fails here.
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-cold-"));
  try {
    const documents = DynamoDBDocumentClient.from(dynamo.client);
    const { key } = await issueApiKey(new DynamoApiKeyStore(documents, TABLE), STAGE, "cold");
    const pets = new DynamoPetRepository(documents, TABLE);
    for (let stored = 0; stored < STORED_PETS; stored++) {
      const id = await pets.allocateId();
      await pets.insert({ id, name: `Stored ${id}`, categoryId: 1, status: "available" }, SHARED_PETS);
    }
    const child = join(dir, basename(CHILD));
    await copyFile(CHILD, child);
    await cp(bundleDir, dir, { recursive: true });
    const file = (side: Side, kase: Case) => join(dir, bundleFile(side, operationOf(kase)));
    const targets: Run[] = [{ name: "node", side: "node" }];
    for (const kase of CASES) {
      for (const side of SIDES) targets.push({ name: `${side} ${kase}`, side, kase, file: file(side, kase) });
    }
    const expected = new Map<Case, string>();
    const random = seededRandom(seed);
    const details: Record<string, unknown> = { delayMs: DYNAMO_DELAY_MS, rounds, seed, memoryMb };
    for (const runtime of runtimes) {
      const node = await nodeOf(runtime);
      const lambda = { node, memoryMb, nodeMajor: runtime.major, taskRoot: dir, dynamo };
      const runOnce = async ({ name, side, kase, file }: Run): Promise<number> => {
        const env = coldEnvironment({
          ...lambda,
          functionName: `petstore-${STAGE}-${kase ? operationOf(kase) : "listPets"}`,
          stage: STAGE,
          // The peer's SDK is the runtime's: here the very SDK our bundles contain, this project's.
          ...(side === "peer" ? { nodePath: join(projectRoot, "node_modules") } : {}),
        });
        dynamo.calls.length = 0;
        const answer = await runCold({ node, file, event: kase && coldRequest(kase, key), env, cwd: dir, child });
        if (!kase) return answer.ms;
        const calls = `[${dynamo.calls.join(", ")}]`;
        // Ours runs first: its route's status, then its answer and calls are what every later run must give.
        const wanted = expected.get(kase) ?? `${EXPECTED_STATUS[kase]} ${calls}`;
        const seen = `${answer.statusCode} ${calls}`;
        if (seen !== wanted) throw new Error(`${name} answered ${seen}, not ${wanted}: ${answer.body?.slice(0, 200)}`);
        expected.set(kase, seen);
        return answer.ms;
      };
      // One unmeasured pass, ours first (what the others must match), also warms the file cache.
      for (const target of targets) await runOnce(target);
      const ms = new Map(targets.map((target) => [target.name, [] as number[]]));
      for (let index = 0; index < rounds; index++) {
        for (const target of shuffled(targets, random)) ms.get(target.name)?.push(await runOnce(target));
      }
      figures.push(...coldFigures(runtime, (name) => ms.get(name) ?? [], rounds));
      details[runtime.version] = Object.fromEntries([...ms].map(([name, all]) => [name, all.map((v) => round(v, 2))]));
    }
    details.calls = Object.fromEntries(expected);
    figures.push(...callFigures(expected));
    return { figures, details };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await dynamo.close();
  }
}

function bundleFigures(bundles: readonly Bundle[]): Figure[] {
  const method =
    "esbuild's output bytes and source files (metafile), each function with infra/bundling.ts's options; bare: scripts/bench/bareHandler.ts with those options (floor) and with CDK NodejsFunction's defaults, SDK left out (peer).";
  const size = (id: string, label: string, value: number, unit: string, target: Target | null = null) =>
    figure({ id: `bundle.${id}`, section: "1 Bundle size", label, value, unit, method, target });
  return bundles.flatMap(({ side, operationId: op, bytes, modules }) =>
    side === "ours"
      ? [
          size(`${op}.bytes`, `${op} bundle`, bytes, "bytes", TARGETS.bundleBytes),
          size(`${op}.modules`, `${op} modules`, modules, ""),
        ]
      : [size(`bare.${side}.bytes`, `bare ${side} bundle`, bytes, "bytes")],
  );
}

/** The DynamoDB calls each request makes on every side (the same on all, or the run failed). */
function callFigures(answers: ReadonlyMap<Case, string>): Figure[] {
  const callsOf = (answer: string) => answer.slice(answer.indexOf("[") + 1, -1);
  // The page has no label column, so the calls themselves are named in the method, once for all cases.
  const method = `DynamoDB calls per request, the same on every side, as the https server in front of dynalite records them: ${[
    ...answers,
  ]
    .map(([kase, answer]) => `${kase} ${callsOf(answer)}`)
    .join("; ")}.`;
  return [...answers].map(([kase, answer]) => {
    const calls = callsOf(answer);
    const label = `${kase} DynamoDB calls, on every side: ${calls}`;
    const value = calls.split(", ").length;
    return figure({ id: `coldStart.${kase}.calls`, section: "2 Cold start", label, value, unit: "", method });
  });
}

function coldFigures(runtime: BenchRuntime, times: (name: string) => number[], rounds: number): Figure[] {
  // Each method is printed once per section: the ratios refer to the timing the ms figures describe.
  const how = `Median ms of ${rounds} rounds: each side a fresh \`node\`, timed from spawn() to its first answer, sides shuffled each round; DynamoDB is dynalite over https plus ${DYNAMO_DELAY_MS} ms a call; the bare sides must make our calls and answer our status.`;
  const methods = {
    floor: `floorRatio: per round, ours ÷ the bare handler built with our esbuild options and cuts; median, judged on the upper quartile.`,
    peer: `peerRatio: per round, ours ÷ the bare handler bundled by CDK NodejsFunction's defaults (CommonJS, unminified, SDK from the runtime via NODE_PATH); median, judged on the upper quartile.`,
    ms: how,
  };
  const base = { section: "2 Cold start", runtime: runtime.version };
  const id = (rest: string) => `coldStart.${runtime.idPart}${rest}`;
  const ms = (rest: string, label: string, name: string) =>
    figure({ ...base, id: id(rest), label, value: round(median(times(name)), 1), unit: "ms", method: methods.ms });
  return [
    ms("nodeStartMs", "Node's bare start", "node"),
    ...CASES.flatMap((kase) => [
      ...(["floor", "peer"] as const).map((side) => {
        const ratios = times(`ours ${kase}`).map((value, index) => value / (times(`${side} ${kase}`)[index] as number));
        return figure({
          ...base,
          id: id(`${kase}.${side}Ratio`),
          label: `${kase} cold, ours ÷ bare ${side}`,
          value: round(median(ratios), 3),
          upperQuartile: round(upperQuartile(ratios), 3),
          unit: "",
          method: methods[side],
          target: side === "floor" ? TARGETS.coldFloorRatio : TARGETS.coldPeerRatio,
        });
      }),
      ...SIDES.map((side) => ms(`${kase}.${side}Ms`, `${kase} cold, ${side}`, `${side} ${kase}`)),
    ]),
  ];
}

await runAsScript(
  import.meta.url,
  async (argv) => {
    const flag = argv.indexOf("--rounds");
    const rounds = flag < 0 ? 5 : Number(argv[flag + 1]);
    console.log(markdownTables((await measureCold({ runtimes: BENCH_RUNTIMES, rounds })).figures));
  },
  (error) => `cold: ${error instanceof Error ? error.message : String(error)}`,
);
