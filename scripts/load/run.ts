/**
 * `npm run load`: mixed creates and reads with autocannon against `npm start --in-memory`; afterwards each 201 must be
 * readable with the body sent, ids unique, and one walk of GET /pets list each once. Exit 1 on any violation.
 * Environment: LOAD_DURATION (seconds, default 30), LOAD_CONNECTIONS (default 50).
 */
import { readFileSync } from "node:fs";
import { availableParallelism, cpus, totalmem } from "node:os";
import autocannon from "autocannon";
import type { NewPet, Pet, PetStatus } from "../../lib/contract/schemas";
import { percentile, round } from "../bench/stats";
import { startServer } from "./server";

function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer, not "${raw}".`);
  return value;
}

const duration = positiveInteger("LOAD_DURATION", 30);
const connections = positiveInteger("LOAD_CONNECTIONS", 50);
const statuses: PetStatus[] = ["available", "pending", "sold"];

/** What each autocannon connection remembers between its requests. */
interface ConnectionContext {
  sent?: NewPet;
  lastCreated?: Pet;
  /** When the connection's current request was set up (one request at a time: no pipelining). */
  startedAt?: number;
}

const created = new Map<number, Pet>();
const duplicates: number[] = [];
const violations: string[] = [];
const statusCounts = new Map<string, number>();
let sequence = 0;

function violation(message: string): void {
  // A broken server can produce thousands; the first ones say what is wrong.
  if (violations.length < 50) violations.push(message);
  else if (violations.length === 50) violations.push("… further violations not shown");
}

/** Latencies per operation, in ms: autocannon's own histogram mixes the three. */
const latencies = new Map<string, number[]>();

function count(operation: string, status: number, context: object): void {
  const startedAt = (context as ConnectionContext).startedAt;
  if (startedAt !== undefined) {
    const list = latencies.get(operation) ?? [];
    list.push(performance.now() - startedAt);
    latencies.set(operation, list);
  }
  const label = `${operation} ${status}`;
  statusCounts.set(label, (statusCounts.get(label) ?? 0) + 1);
  if (status >= 500) violation(`${label}`);
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function samePet(a: unknown, b: Pet): boolean {
  const pet = a as Partial<Pet> | undefined;
  return (
    pet?.id === b.id &&
    pet.name === b.name &&
    pet.categoryId === b.categoryId &&
    pet.status === b.status &&
    Object.keys(pet).length === 4
  );
}

const requests: autocannon.Request[] = [
  {
    method: "POST",
    path: "/v1/pets",
    setupRequest: (request, context) => {
      sequence += 1;
      const sent: NewPet = {
        name: `load ${sequence} ${"🐶".repeat(sequence % 3)}`,
        categoryId: (sequence % 1000) + 1,
        status: statuses[sequence % 3] as PetStatus,
      };
      (context as ConnectionContext).sent = sent;
      (context as ConnectionContext).startedAt = performance.now();
      return { ...request, body: JSON.stringify(sent) };
    },
    onResponse: (status, body, context) => {
      count("POST /pets", status, context);
      const state = context as ConnectionContext;
      state.lastCreated = undefined;
      if (status !== 201) {
        if (status < 500) violation(`POST /pets answered ${status}: ${body.slice(0, 200)}`);
        return;
      }
      const pet = parse(body) as Pet | undefined;
      const sent = state.sent;
      if (!pet || !sent || !samePet(pet, { ...sent, id: pet.id } as Pet)) {
        violation(`POST /pets answered ${body.slice(0, 200)} for ${JSON.stringify(sent)}`);
        return;
      }
      if (created.has(pet.id)) duplicates.push(pet.id);
      created.set(pet.id, pet);
      state.lastCreated = pet;
    },
  },
  {
    method: "GET",
    // Reads the pet this connection just created (read-your-write), or a page when the create failed.
    setupRequest: (request, context) => {
      const last = (context as ConnectionContext).lastCreated;
      (context as ConnectionContext).startedAt = performance.now();
      return { ...request, path: last ? `/v1/pets/${last.id}` : "/v1/pets?limit=1" };
    },
    onResponse: (status, body, context) => {
      count("GET /pets/{id}", status, context);
      const last = (context as ConnectionContext).lastCreated;
      if (last && (status !== 200 || !samePet(parse(body), last))) {
        violation(`GET /pets/${last.id} answered ${status} ${body.slice(0, 200)}, expected ${JSON.stringify(last)}`);
      }
    },
  },
  {
    method: "GET",
    path: "/v1/pets?limit=20",
    setupRequest: (request, context) => {
      (context as ConnectionContext).startedAt = performance.now();
      return request;
    },
    onResponse: (status, body, context) => {
      count("GET /pets", status, context);
      if (status !== 200 || !Array.isArray(parse(body)))
        violation(`GET /pets answered ${status} ${body.slice(0, 200)}`);
    },
  },
];

/** Runs `work` over `items` with at most `limit` at a time. */
async function inBatches<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const item = items[next] as T;
        next += 1;
        await work(item);
      }
    }),
  );
}

async function verify(baseUrl: string, headers: Record<string, string>) {
  const pets = [...created.values()];
  let unreadable = 0;
  await inBatches(pets, 20, async (pet) => {
    const response = await fetch(`${baseUrl}/pets/${pet.id}`, { headers });
    const body = await response.text();
    if (response.status !== 200 || !samePet(parse(body), pet)) {
      unreadable += 1;
      violation(`after the run, GET /pets/${pet.id} answered ${response.status} ${body.slice(0, 200)}`);
    }
  });

  const listedTimes = new Map<number, number>();
  let pages = 0;
  let next: string | undefined = `${baseUrl}/pets?limit=100`;
  while (next) {
    const response = await fetch(next, { headers });
    pages += 1;
    if (response.status !== 200) {
      violation(`walking GET /pets, page ${pages} answered ${response.status}`);
      break;
    }
    for (const pet of (await response.json()) as Pet[]) {
      listedTimes.set(pet.id, (listedTimes.get(pet.id) ?? 0) + 1);
      const acknowledged = created.get(pet.id);
      if (acknowledged && !samePet(pet, acknowledged)) violation(`listed ${JSON.stringify(pet)} differs from its 201`);
    }
    const path = /^<\/v1([^>]+)>; rel="next"$/.exec(response.headers.get("link") ?? "")?.[1];
    next = path ? `${baseUrl}${path}` : undefined;
  }
  const listedTwice = [...listedTimes].filter(([, times]) => times > 1).map(([id]) => id);
  const notListed = pets.filter((pet) => !listedTimes.has(pet.id)).map((pet) => pet.id);
  if (listedTwice.length > 0) violation(`listed more than once: ${listedTwice.slice(0, 20).join(", ")}`);
  if (notListed.length > 0) violation(`acknowledged but not listed: ${notListed.slice(0, 20).join(", ")}`);
  if (duplicates.length > 0) violation(`ids handed out twice: ${duplicates.slice(0, 20).join(", ")}`);
  // Creates still in flight when autocannon stopped exist without a 201 having been counted.
  const unacknowledged = listedTimes.size - pets.filter((pet) => listedTimes.has(pet.id)).length;
  return {
    unreadable,
    pages,
    listed: listedTimes.size,
    listedTwice: listedTwice.length,
    notListed: notListed.length,
    unacknowledged,
  };
}

function machine(): string {
  let model = cpus()[0]?.model ?? "unknown CPU";
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? model;
  } catch {
    // Not Linux: os.cpus() has it.
  }
  const memory = `${Math.round(totalmem() / 2 ** 30)} GiB`;
  return `${availableParallelism()} × ${model}, ${memory}, Node ${process.version}, ${process.platform} ${process.arch}`;
}

/** To a tenth: what the summary shows. */
const tenth = (value: number) => round(value, 1);

function latencyByOperation(): string {
  return [...latencies]
    .map(
      ([operation, values]) =>
        `${operation} p50 ${tenth(percentile(values, 50))} ms, p99 ${tenth(percentile(values, 99))} ms`,
    )
    .join("; ");
}

async function main(): Promise<number> {
  process.stderr.write(`load: starting npm start --in-memory\n`);
  const server = await startServer();
  try {
    const headers = { authorization: `Bearer ${server.key}`, "content-type": "application/json" };
    process.stderr.write(
      `load: ${duration} s at ${connections} connections against ${server.baseUrl} (create, read it, list)\n`,
    );
    const result = await autocannon({
      url: new URL(server.baseUrl).origin,
      connections,
      duration,
      headers,
      requests,
    });
    process.stderr.write(`load: checking ${created.size} acknowledged pets\n`);
    const checks = await verify(server.baseUrl, { authorization: headers.authorization });
    if (result.errors > 0) violation(`${result.errors} connection errors (${result.timeouts} timeouts)`);
    if (server.errorLines.length > 0) violation(`server logged errors: ${server.errorLines.slice(0, 3).join("\n")}`);

    const fivexx = [...statusCounts].filter(([label]) => / 5\d\d$/.test(label)).reduce((sum, [, n]) => sum + n, 0);
    const lines = [
      "",
      `Machine:      ${machine()}`,
      `Load:         ${duration} s, ${connections} connections, autocannon; server: npm start --in-memory (one process, dynalite in memory)`,
      `Requests:     ${result.requests.total} in ${tenth(result.duration)} s = ${tenth(result.requests.average)} req/s (mean of per-second counts)`,
      `Latency:      p50 ${result.latency.p50} ms, p90 ${result.latency.p90} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`,
      `By operation: ${latencyByOperation()}`,
      `Creates:      ${created.size} acknowledged (${tenth(created.size / result.duration)}/s), ${checks.unacknowledged} stored but cut off by the end of the run`,
      `Statuses:     ${[...statusCounts]
        .sort()
        .map(([label, n]) => `${label}: ${n}`)
        .join(", ")}`,
      `5xx:          ${fivexx}; connection errors: ${result.errors}; timeouts: ${result.timeouts}`,
      `After:        ${created.size - checks.unreadable}/${created.size} readable with the same body; ids unique: ${duplicates.length === 0}; list walk: ${checks.listed} pets in ${checks.pages} pages, each acknowledged pet listed exactly once: ${checks.listedTwice === 0 && checks.notListed === 0}`,
      violations.length === 0 ? "Result:       OK, nothing lost" : `Result:       FAILED\n  ${violations.join("\n  ")}`,
      "",
    ];
    process.stdout.write(lines.join("\n"));
    return violations.length === 0 ? 0 : 1;
  } finally {
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
