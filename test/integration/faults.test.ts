/**
 * DynamoDB failing under the handlers: throttling on each call, an unreachable or silent store,
 * a permission error. Faults are injected below the SDK's retry logic, so the real client
 * configuration (lib/db/client.ts) decides how often and how long it retries.
 */
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CreatePetDependencies, createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import type { Pet } from "../../lib/contract/schemas";
import {
  createDocumentClient,
  DYNAMODB_CALL_WORST_CASE_MS,
  DYNAMODB_MAX_ATTEMPTS,
  DYNAMODB_REQUEST_TIMEOUT_MS,
} from "../../lib/db/client";
import { REQUEST_DEADLINE_MARGIN_MS } from "../../lib/http/middleware/requestDeadline";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { DynamoPetRepository } from "../../lib/pets/repository";
import {
  asTestResponse,
  bearer,
  invoke,
  issueTestKey,
  jsonContent,
  proxyEvent,
  type TestResponse,
  testContext,
} from "../support/api";
import { documentClient, tableName } from "../support/dynamo";
import { accessDenied, injectFaults, throttling } from "../support/dynamoFaults";
import { startProcess, type TestProcess } from "../support/processDeps";
import { freePort } from "../support/processes";

let key: string;
let counter = 0;
const unique = (prefix: string) => {
  counter += 1;
  return `${prefix} ${Date.now()} ${counter}`;
};

beforeAll(async () => {
  key = (await issueTestKey()).key;
});

function create(process: TestProcess | CreatePetDependencies, body: unknown, idempotencyKey?: string) {
  const deps = "deps" in process ? process.deps : process;
  return invoke(createCreatePet(deps), {
    method: "POST",
    path: "/pets",
    headers: { ...bearer(key), ...jsonContent, ...(idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {}) },
    body: JSON.stringify(body),
  });
}

async function listAll(): Promise<Pet[]> {
  const listPets = createListPets(startProcess().deps);
  const pets: Pet[] = [];
  let path: string | undefined = "/pets?limit=100";
  while (path) {
    const response = await invoke(listPets, { path, resource: "/pets", headers: bearer(key) });
    pets.push(...(response.json as Pet[]));
    path = response.headers.link ? /^<\/v1([^>]+)>/.exec(response.headers.link)?.[1] : undefined;
  }
  return pets;
}

/** 503 in the Error shape, with Retry-After, telling nothing about the store. */
function expectUnavailable(response: TestResponse) {
  expect(response.status).toBe(503);
  expect(response.json).toEqual({ code: "service_unavailable", message: expect.any(String), status: 503 });
  expect(response.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
  expect(JSON.stringify(response.json)).not.toMatch(/throttl|dynamo|arn:|exception|rate of requests/i);
}

/** Runs `act` with console.error captured, so expected failure logs do not flood the output. */
async function quietly<T>(act: () => Promise<T>): Promise<T> {
  const original = console.error;
  console.error = () => undefined;
  try {
    return await act();
  } finally {
    console.error = original;
  }
}

/** Runs `act` and answers the JSON log lines it wrote to console.error, keeping them out of the test output. */
async function errorLogOf<T>(act: () => Promise<T>): Promise<{ result: T; log: { error?: { cause?: unknown } }[] }> {
  const original = console.error;
  const lines: string[] = [];
  console.error = (line: unknown) => lines.push(String(line));
  try {
    return { result: await act(), log: lines.map((line) => JSON.parse(line)) };
  } finally {
    console.error = original;
  }
}

describe("throttling of each DynamoDB call of a create", () => {
  const keyedCalls = ["begin", "allocate id", "reserve id", "insert pet", "complete"] as const;

  it.each(keyedCalls.map((name, index) => [name, index] as const))(
    "answers 503 with Retry-After after the SDK's retries when %s is throttled, and a retry makes exactly one pet",
    async (_, callIndex) => {
      const name = unique("Throttled");
      const idempotencyKey = unique("key");
      const throttled = startProcess();
      throttled.faults.failAttempts((__, call) => call === callIndex, throttling);

      const response = await quietly(() => create(throttled, { name, categoryId: 1 }, idempotencyKey));
      const listedMeanwhile = (await listAll()).filter((pet) => pet.name === name);
      const retried = await create(startProcess(), { name, categoryId: 1 }, idempotencyKey);

      expectUnavailable(response);
      expect(throttled.faults.attempts.filter((attempt) => attempt.call === callIndex)).toHaveLength(
        DYNAMODB_MAX_ATTEMPTS,
      );
      // A pet is either wholly there (its insert succeeded before the failure) or not at all.
      for (const pet of listedMeanwhile) expect(pet).toEqual({ ...(retried.json as Pet) });
      expect(retried.status).toBe(201);
      expect((await listAll()).filter((pet) => pet.name === name)).toEqual([retried.json]);
    },
  );

  it.each([
    ["allocate id", 0],
    ["insert pet", 1],
  ] as const)(
    "answers 503 when %s of a create without Idempotency-Key is throttled, and lists no partial pet",
    async (_, callIndex) => {
      const name = unique("Plain throttled");
      const throttled = startProcess();
      throttled.faults.failAttempts((__, call) => call === callIndex, throttling);

      const response = await quietly(() => create(throttled, { name, categoryId: 1 }));

      expectUnavailable(response);
      expect((await listAll()).filter((pet) => pet.name === name)).toEqual([]);
    },
  );
});

describe("throttling of reads", () => {
  it("answers 503 with Retry-After when listing is throttled", async () => {
    const throttled = startProcess();
    throttled.faults.failAttempts((command) => command.startsWith("Query"), throttling);

    const response = await quietly(() =>
      invoke(createListPets(throttled.deps), { path: "/pets", resource: "/pets", headers: bearer(key) }),
    );

    expectUnavailable(response);
    expect(throttled.faults.attempts).toHaveLength(DYNAMODB_MAX_ATTEMPTS);
  });

  it("answers 503 with Retry-After when getting a pet is throttled", async () => {
    const created = (await create(startProcess(), { name: unique("Readable"), categoryId: 1 })).json as Pet;
    const throttled = startProcess();
    throttled.faults.failAttempts((command) => command.startsWith("Get"), throttling);

    const response = await quietly(() =>
      invoke(createGetPet(throttled.deps), {
        path: `/pets/${created.id}`,
        resource: "/pets/{petId}",
        pathParameters: { petId: String(created.id) },
        headers: bearer(key),
      }),
    );

    expectUnavailable(response);
  });
});

describe("a store that cannot be reached or does not answer", () => {
  let silent: Server;
  const sockets: Socket[] = [];
  let silentPort: number;

  beforeAll(async () => {
    // Accepts connections and never answers: only the SDK's request timeout ends a call.
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentPort = (silent.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  /** Far from the deadline, so that only the SDK's own timeouts end the wait. */
  const TIME_TO_SPARE_MS = 600_000;
  /** Less than one attempt's request timeout: the SDK alone would still be waiting when Lambda stops the function. */
  const SHORT_OF_ONE_ATTEMPT_MS = REQUEST_DEADLINE_MARGIN_MS + DYNAMODB_REQUEST_TIMEOUT_MS / 2;

  /** A process whose pets and idempotency records live at `endpoint`; keys stay readable. */
  function processAt(endpoint: string): TestProcess {
    const client = createDocumentClient({ region: "us-east-1", endpoint });
    return {
      faults: injectFaults(client),
      deps: {
        pets: new DynamoPetRepository(client, tableName()),
        idempotency: new DynamoIdempotencyStore(client, tableName()),
        keys: createApiKeyVerifier(new DynamoApiKeyStore(documentClient(), tableName()), "local"),
        clock: () => new Date(),
      },
    };
  }

  /** POST /pets as a function with `remainingMs` left before Lambda stops it. */
  async function createWithRemainingTime(process: TestProcess, body: unknown, remainingMs: number) {
    const event = proxyEvent({
      method: "POST",
      path: "/pets",
      headers: { ...bearer(key), ...jsonContent },
      body: JSON.stringify(body),
    });
    const context = { ...testContext, getRemainingTimeInMillis: () => remainingMs };
    return asTestResponse(await createCreatePet(process.deps)(event, context));
  }

  it("answers 503 when nothing listens at the store's address", async () => {
    const process = processAt(`http://127.0.0.1:${await freePort()}`);

    const response = await quietly(() =>
      createWithRemainingTime(process, { name: "Nowhere", categoryId: 1 }, TIME_TO_SPARE_MS),
    );

    expectUnavailable(response);
    expect(process.faults.attempts).toHaveLength(DYNAMODB_MAX_ATTEMPTS);
  });

  it("answers 503 when the store accepts connections but never answers, after the SDK's request timeouts", async () => {
    const process = processAt(`http://127.0.0.1:${silentPort}`);

    const response = await quietly(() =>
      createWithRemainingTime(process, { name: "Silence", categoryId: 1 }, TIME_TO_SPARE_MS),
    );

    expectUnavailable(response);
    expect(process.faults.attempts).toHaveLength(DYNAMODB_MAX_ATTEMPTS);
  });

  it("answers 503 with Retry-After at the request's deadline when the store does not answer, without waiting out the SDK", async () => {
    const process = processAt(`http://127.0.0.1:${silentPort}`);
    // The key is already in this process's cache: the whole time left is the create's.
    await process.deps.keys.verify(key);

    const { result: response, log } = await errorLogOf(() =>
      createWithRemainingTime(process, { name: "Out of time", categoryId: 1 }, SHORT_OF_ONE_ATTEMPT_MS),
    );

    expectUnavailable(response);
    // Its first call (allocating an id) was aborted during its first attempt, and the log says so.
    expect(process.faults.calls).toEqual(["UpdateItemCommand"]);
    expect(process.faults.attempts).toHaveLength(1);
    expect(log.map((line) => line.error?.cause)).toEqual([expect.objectContaining({ name: "AbortError" })]);
  });

  it("answers 503, not 401 or 500, when the key lookup gets no answer by the request's deadline", async () => {
    const keyClient = createDocumentClient({ region: "us-east-1", endpoint: `http://127.0.0.1:${silentPort}` });
    const keyFaults = injectFaults(keyClient);
    const process = processAt(String(globalThis.process.env.DYNAMODB_ENDPOINT));
    const deps = {
      ...process.deps,
      keys: createApiKeyVerifier(new DynamoApiKeyStore(keyClient, tableName()), "local"),
    };

    const { result: response, log } = await errorLogOf(() =>
      createWithRemainingTime({ ...process, deps }, { name: "Unverified", categoryId: 1 }, SHORT_OF_ONE_ATTEMPT_MS),
    );

    expectUnavailable(response);
    expect(log.map((line) => line.error?.cause)).toEqual([expect.objectContaining({ name: "AbortError" })]);
    expect(keyFaults.calls).toEqual(["GetItemCommand"]);
    expect(keyFaults.attempts).toHaveLength(1);
    // The bearer check runs first: nothing was written.
    expect(process.faults.calls).toEqual([]);
  });

  it("gives up on one DynamoDB call well before the Lambda timeout of 10 s", () => {
    expect(DYNAMODB_CALL_WORST_CASE_MS).toBeLessThan(10_000);
  });
});

describe("a permission error", () => {
  it("answers 500 internal_error with a generic message, without retrying or revealing the error", async () => {
    const name = unique("Forbidden");
    const denied = startProcess();
    denied.faults.failAttempts((command) => command.startsWith("Put"), accessDenied);
    const logged: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => logged.push(args);

    let response: TestResponse;
    try {
      response = await create(denied, { name, categoryId: 1 });
    } finally {
      console.error = original;
    }

    expect(response.status).toBe(500);
    expect(response.json).toEqual({ code: "internal_error", message: expect.any(String), status: 500 });
    expect(JSON.stringify(response.json)).not.toMatch(/arn:|AccessDenied|not authorized|secret-table/);
    expect(JSON.stringify(logged)).toContain("AccessDeniedException");
    expect(denied.faults.attempts.filter((attempt) => attempt.command.startsWith("Put"))).toHaveLength(1);
    expect((await listAll()).filter((pet) => pet.name === name)).toEqual([]);
  });
});
