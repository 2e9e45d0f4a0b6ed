/**
 * Idempotency-Key on POST /pets against dynalite: replays, conflicts, concurrency, scoping,
 * the 24-hour window, failed creates, and a crash between any two of the create's writes.
 */
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createListPets } from "../../functions/listPets";
import type { Pet } from "../../lib/contract/schemas";
import { itemKeys } from "../../lib/db/table";
import { ServiceUnavailableError } from "../../lib/errors";
import { requestHash } from "../../lib/idempotency/requestHash";
import { metricNames } from "../../lib/observability/metrics";
import { IDEMPOTENCY_LOCK_MS, IDEMPOTENCY_RETENTION_SECONDS } from "../../lib/pets/idempotentCreate";
import type { LocalApi } from "../../local/server";
import { bearer, fetchJson, invoke, issueTestKey, jsonContent, startTestApi, type TestResponse } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";
import { throttling } from "../support/dynamoFaults";
import { startProcess } from "../support/processDeps";
import { capturedTelemetry } from "../support/telemetry";

let api: LocalApi;
let key: string;
let keyId: string;
let otherKey: string;
let keyCounter = 0;
/** A fresh Idempotency-Key per test, so that tests sharing the table stay independent. */
function newIdempotencyKey(): string {
  keyCounter += 1;
  return `test-${Date.now()}-${keyCounter}`;
}

beforeAll(async () => {
  api = await startTestApi();
  ({ key, keyId } = await issueTestKey("first client"));
  otherKey = (await issueTestKey("second client")).key;
});
afterAll(() => api.close());

function postOverHttp(body: unknown, idempotencyKey: string | undefined, apiKey = key): Promise<TestResponse> {
  return fetchJson(`${api.baseUrl}/pets`, {
    method: "POST",
    headers: {
      ...bearer(apiKey),
      ...jsonContent,
      ...(idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey }),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** One POST /pets through a given process's handler, in-process. */
function postIn(process: ReturnType<typeof startProcess>, body: unknown, idempotencyKey: string) {
  return invoke(createCreatePet(process.deps), {
    method: "POST",
    path: "/pets",
    headers: { ...bearer(key), ...jsonContent, "Idempotency-Key": idempotencyKey },
    body: JSON.stringify(body),
  });
}

/** Every stored pet, read the way a client reads them: GET /pets, following Link. */
async function listAll(): Promise<Pet[]> {
  const listPets = createListPets(startProcess().deps);
  const pets: Pet[] = [];
  let path: string | undefined = "/pets?limit=100";
  while (path) {
    const response = await invoke(listPets, { path, resource: "/pets", headers: bearer(key) });
    expect(response.status).toBe(200);
    pets.push(...(response.json as Pet[]));
    path = response.headers.link ? /^<\/v1([^>]+)>/.exec(response.headers.link)?.[1] : undefined;
  }
  return pets;
}

const named = async (name: string) => (await listAll()).filter((pet) => pet.name === name);

function expectError(response: TestResponse, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.json).toEqual({ code, message: expect.any(String), status });
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
}

describe("Idempotency-Key on POST /pets", () => {
  it("replays the original 201 with the same id, body and Location, and creates nothing", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Replayed Rex", categoryId: 4, status: "pending" };
    const first = await postOverHttp(body, idempotencyKey);
    const countAfterFirst = (await listAll()).length;

    const second = await postOverHttp(body, idempotencyKey);

    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.json).toEqual(first.json);
    expect(second.headers.location).toBe(first.headers.location);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    expect((await listAll()).length).toBe(countAfterFirst);
  });

  it("counts a create once in PetsCreated and its replay not at all, while both count as requests", async () => {
    const { lines, telemetry } = capturedTelemetry();
    const createPet = createCreatePet({ ...startProcess().deps, telemetry });
    const idempotencyKey = newIdempotencyKey();
    const post = () =>
      invoke(createPet, {
        method: "POST",
        path: "/pets",
        headers: { ...bearer(key), ...jsonContent, "Idempotency-Key": idempotencyKey },
        body: JSON.stringify({ name: "Counted once", categoryId: 3 }),
      });

    const created = await post();
    const replayed = await post();

    expect([created.status, replayed.status]).toEqual([201, 201]);
    expect(replayed.headers["idempotent-replayed"]).toBe("true");
    const metrics = lines.map((line) => JSON.parse(line)).filter((entry) => entry._aws);
    expect(metrics.map((record) => [record[metricNames.requests], record[metricNames.petsCreated]])).toEqual([
      [1, 1],
      [1, 0],
    ]);
  });

  it("stores a completed create in the layout every deployed version reads (both serve retries during a canary)", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Pinned", categoryId: 2 };
    const created = await postOverHttp(body, idempotencyKey);

    const { Item } = await documentClient().send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.idempotency(keyId, idempotencyKey) }),
    );

    // docs/delivery.md: a change to these attributes must be read by the old version first.
    expect(created.status).toBe(201);
    expect(Item).toEqual({
      pk: `IDEMPOTENCY#${keyId}`,
      sk: idempotencyKey,
      state: "completed",
      requestHash: requestHash(body),
      petId: (created.json as Pet).id,
      pet: created.json,
      expiresAt: expect.any(Number),
    });
  });

  it("treats the same JSON with other key order and spacing as the same body", async () => {
    const idempotencyKey = newIdempotencyKey();
    const first = await postOverHttp('{"name":"Spaced","categoryId":1}', idempotencyKey);

    const second = await postOverHttp('{ "categoryId": 1,\n  "name": "Spaced" }', idempotencyKey);

    expect(second.status).toBe(201);
    expect(second.json).toEqual(first.json);
  });

  it("answers 422 idempotency_key_reused for the same key with another body, and creates nothing", async () => {
    const idempotencyKey = newIdempotencyKey();
    await postOverHttp({ name: "Original", categoryId: 1 }, idempotencyKey);
    const before = (await listAll()).length;

    const reused = await postOverHttp({ name: "Impostor", categoryId: 1 }, idempotencyKey);

    expectError(reused, 422, "idempotency_key_reused");
    expect((await listAll()).length).toBe(before);
    expect(await named("Impostor")).toEqual([]);
  });

  it("creates exactly one pet from 20 concurrent creates with one key; the others replay it or answer 409", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Stampede", categoryId: 9 };

    const responses = await Promise.all(Array.from({ length: 20 }, () => postOverHttp(body, idempotencyKey)));

    const created = responses.filter((response) => response.status === 201);
    const inProgress = responses.filter((response) => response.status === 409);
    expect(created.length + inProgress.length).toBe(20);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((response) => (response.json as Pet).id)).size).toBe(1);
    for (const response of inProgress) {
      expectError(response, 409, "idempotency_key_in_progress");
      expect(Number(response.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    }
    const stored = await named("Stampede");
    expect(stored).toHaveLength(1);
    expect(stored[0]).toEqual(created[0]?.json);
  });

  it("scopes keys to the API key: the same Idempotency-Key from two API keys creates two pets", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Twin", categoryId: 2 };

    const fromFirst = await postOverHttp(body, idempotencyKey, key);
    const fromSecond = await postOverHttp(body, idempotencyKey, otherKey);

    expect(fromFirst.status).toBe(201);
    expect(fromSecond.status).toBe(201);
    expect((fromSecond.json as Pet).id).not.toBe((fromFirst.json as Pet).id);
    expect(await named("Twin")).toHaveLength(2);
  });

  it("creates a new pet for every create without Idempotency-Key", async () => {
    const first = await postOverHttp({ name: "Keyless", categoryId: 1 }, undefined);
    const second = await postOverHttp({ name: "Keyless", categoryId: 1 }, undefined);

    expect((second.json as Pet).id).not.toBe((first.json as Pet).id);
    expect(await named("Keyless")).toHaveLength(2);
  });

  it.each([
    ["an empty key", ""],
    ["a key of 256 characters", "k".repeat(256)],
  ])("answers 400 naming Idempotency-Key for %s, and creates nothing", async (_, idempotencyKey) => {
    const before = (await listAll()).length;

    const response = await postOverHttp({ name: "Bad key", categoryId: 1 }, idempotencyKey);

    expectError(response, 400, "invalid_request");
    expect((response.json as { message: string }).message).toMatch(/^Idempotency-Key: /);
    expect((await listAll()).length).toBe(before);
  });

  it("accepts a key of 255 characters and one of a single character", async () => {
    const long = await postOverHttp({ name: "Long key", categoryId: 1 }, `${"k".repeat(254)}${keyCounter}`);
    const short = await postOverHttp({ name: "Short key", categoryId: 1 }, String(keyCounter % 10));

    expect(long.status).toBe(201);
    expect(short.status).toBe(201);
  });

  it("answers 409 with Retry-After while the first request is still in flight, then replays", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Slow", categoryId: 1 };
    const slow = startProcess();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reachedGate: () => void = () => undefined;
    const atGate = new Promise<void>((resolve) => {
      reachedGate = resolve;
    });
    const allocateId = slow.deps.pets.allocateId.bind(slow.deps.pets);
    slow.deps.pets.allocateId = async () => {
      reachedGate();
      await gate;
      return allocateId();
    };
    const first = postIn(slow, body, idempotencyKey);
    await atGate;

    const duplicate = await postIn(startProcess(), body, idempotencyKey);
    release();
    const original = await first;
    const retry = await postIn(startProcess(), body, idempotencyKey);

    expectError(duplicate, 409, "idempotency_key_in_progress");
    expect(duplicate.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
    expect(original.status).toBe(201);
    expect(retry.json).toEqual(original.json);
    expect(await named("Slow")).toHaveLength(1);
  });
});

describe("the 24-hour window", () => {
  it("replays up to 24 hours after the 201 and treats the key as new afterwards", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Day old", categoryId: 1 };
    const createdAt = Date.parse("2027-03-01T12:00:00Z");
    const at = (ms: number) => startProcess(() => new Date(ms));
    const original = await postIn(at(createdAt), body, idempotencyKey);

    const justInside = await postIn(at(createdAt + IDEMPOTENCY_RETENTION_SECONDS * 1000 - 1000), body, idempotencyKey);
    const after = await postIn(at(createdAt + IDEMPOTENCY_RETENTION_SECONDS * 1000 + 1000), body, idempotencyKey);
    const afterReplay = await postIn(at(createdAt + IDEMPOTENCY_RETENTION_SECONDS * 1000 + 2000), body, idempotencyKey);

    expect(justInside.json).toEqual(original.json);
    expect(after.status).toBe(201);
    expect((after.json as Pet).id).not.toBe((original.json as Pet).id);
    expect(afterReplay.json).toEqual(after.json);
    expect(await named("Day old")).toHaveLength(2);
  });
});

describe("failed creates are not remembered", () => {
  it("lets a retry with the same key succeed after the id allocation failed", async () => {
    const idempotencyKey = newIdempotencyKey();
    const failing = startProcess();
    failing.deps.pets.allocateId = async () => {
      throw new ServiceUnavailableError(1);
    };

    const failed = await postIn(failing, { name: "Second chance", categoryId: 1 }, idempotencyKey);
    const retried = await postIn(startProcess(), { name: "Second chance", categoryId: 1 }, idempotencyKey);

    expectError(failed, 503, "service_unavailable");
    expect(retried.status).toBe(201);
    expect(await named("Second chance")).toEqual([retried.json]);
  });

  it("accepts another body under the key after a create that failed before storing anything", async () => {
    const idempotencyKey = newIdempotencyKey();
    const failing = startProcess();
    failing.deps.pets.allocateId = async () => {
      throw new Error("injected bug");
    };

    const failed = await postIn(failing, { name: "First try", categoryId: 1 }, idempotencyKey);
    const corrected = await postIn(startProcess(), { name: "Corrected", categoryId: 1 }, idempotencyKey);

    expectError(failed, 500, "internal_error");
    expect(corrected.status).toBe(201);
    expect(await named("First try")).toEqual([]);
  });
});

/** The keyed create's writes, in order (see lib/pets/idempotentCreate.ts). */
const WRITES = ["begin", "allocate id", "reserve id", "insert pet", "complete"] as const;
const afterEachWrite = WRITES.map((write, index) => [index + 1, write] as const);

describe("a crash between any two writes of a create", () => {
  it("makes exactly five writes for a fresh keyed create", async () => {
    const process = startProcess();

    const response = await postIn(process, { name: "Counted", categoryId: 1 }, newIdempotencyKey());

    expect(response.status).toBe(201);
    expect(process.faults.writesApplied()).toBe(WRITES.length);
  });

  it.each(afterEachWrite)(
    "converges on exactly one pet with one id when the process dies after write %i (%s)",
    async (writes) => {
      const idempotencyKey = newIdempotencyKey();
      const name = `Crash after ${writes}`;
      const startedAt = Date.parse("2027-04-01T00:00:00Z");
      const doomed = startProcess(() => new Date(startedAt));
      doomed.faults.crashAfterWrites(writes);

      const crashed = await postIn(doomed, { name, categoryId: 1 }, idempotencyKey);
      const soon = await postIn(
        startProcess(() => new Date(startedAt + 1000)),
        { name, categoryId: 1 },
        idempotencyKey,
      );
      const laterMs = startedAt + IDEMPOTENCY_LOCK_MS + 1000;
      const retried = await postIn(
        startProcess(() => new Date(laterMs)),
        { name, categoryId: 1 },
        idempotencyKey,
      );
      const again = await postIn(
        startProcess(() => new Date(laterMs + 1000)),
        { name, categoryId: 1 },
        idempotencyKey,
      );

      expectError(crashed, 500, "internal_error");
      if (writes < WRITES.length) expectError(soon, 409, "idempotency_key_in_progress");
      else expect(soon.status).toBe(201);
      expect(retried.status).toBe(201);
      expect(again.json).toEqual(retried.json);
      expect(await named(name)).toEqual([retried.json]);
    },
  );

  it.each(afterEachWrite)(
    "converges on exactly one pet when write %i (%s) is applied but its answer is lost, retrying at once",
    async (writes) => {
      const idempotencyKey = newIdempotencyKey();
      const name = `Lost answer ${writes}`;
      const unlucky = startProcess();
      unlucky.faults.loseAnswerOfWrite(writes, throttling);

      const failed = await postIn(unlucky, { name, categoryId: 1 }, idempotencyKey);
      const retried = await postIn(startProcess(), { name, categoryId: 1 }, idempotencyKey);
      const again = await postIn(startProcess(), { name, categoryId: 1 }, idempotencyKey);

      expectError(failed, 503, "service_unavailable");
      expect(retried.status).toBe(201);
      expect(again.json).toEqual(retried.json);
      expect(await named(name)).toEqual([retried.json]);
    },
  );

  it("never lets a crashed process's late writes add a second pet after a retry took over", async () => {
    const idempotencyKey = newIdempotencyKey();
    const name = "Zombie";
    const startedAt = Date.parse("2027-05-01T00:00:00Z");
    // The first process reserves an id, then stalls before inserting (a frozen Lambda).
    const zombie = startProcess(() => new Date(startedAt));
    let resume: () => void = () => undefined;
    const stalled = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let reachedInsert: () => void = () => undefined;
    const atInsert = new Promise<void>((resolve) => {
      reachedInsert = resolve;
    });
    const insert = zombie.deps.pets.insert.bind(zombie.deps.pets);
    zombie.deps.pets.insert = async (pet, collection) => {
      reachedInsert();
      await stalled;
      return insert(pet, collection);
    };
    const late = postIn(zombie, { name, categoryId: 1 }, idempotencyKey);
    await atInsert;

    const takeover = await postIn(
      startProcess(() => new Date(startedAt + IDEMPOTENCY_LOCK_MS + 1000)),
      { name, categoryId: 1 },
      idempotencyKey,
    );
    resume();
    const zombieAnswer = await late;

    expect(takeover.status).toBe(201);
    expect(zombieAnswer.status).toBe(201);
    expect((zombieAnswer.json as Pet).id).toBe((takeover.json as Pet).id);
    expect(await named(name)).toEqual([takeover.json]);
  });

  it("does not let a rejected duplicate release the lock of the request in flight", async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = { name: "Held", categoryId: 1 };
    const holder = startProcess();
    holder.faults.crashAfterWrites(1);
    await postIn(holder, body, idempotencyKey);

    const duplicate = await postIn(startProcess(), body, idempotencyKey);
    const conflicting = await postIn(startProcess(), { name: "Other", categoryId: 1 }, idempotencyKey);
    const stillHeld = await postIn(startProcess(), body, idempotencyKey);

    expectError(duplicate, 409, "idempotency_key_in_progress");
    expectError(conflicting, 422, "idempotency_key_reused");
    expectError(stillHeld, 409, "idempotency_key_in_progress");
    expect(await named("Held")).toEqual([]);
  });
});
