/**
 * The client package (client/src) against the local server on dynalite, directly and through a
 * proxy that answers 503 and drops connections (test/support/faultyProxy.ts): whatever the network
 * does, one logical create makes exactly one pet.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createPetStoreClient,
  type DeprecationNotice,
  PetStoreAbortError,
  PetStoreApiError,
  type PetStoreClientOptions,
  PetStoreNetworkError,
} from "../../client/src/index";
import { CLIENT_VERSION } from "../../client/src/version";
import type { Pet } from "../../lib/contract/schemas";
import type { LocalApi } from "../../local/server";
import { bearer, fetchJson, issueTestKey, startTestApi } from "../support/api";
import { type FaultyProxy, startFaultyProxy } from "../support/faultyProxy";

let api: LocalApi;
let proxy: FaultyProxy;
let key: string;

beforeAll(async () => {
  // The server's request lines are not what these tests look at: keep the output short.
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  proxy = await startFaultyProxy(api.baseUrl);
  ({ key } = await issueTestKey("client package"));
});
afterAll(async () => {
  await proxy.close();
  await api.close();
});
beforeEach(() => {
  proxy.requests.length = 0;
  proxy.plan(() => "forward");
});

/** A client of the local server (or of the proxy), quick to retry, collecting deprecation notices. */
function client(options: Partial<PetStoreClientOptions> = {}) {
  const notices: DeprecationNotice[] = [];
  const petStore = createPetStoreClient({
    baseUrl: api.baseUrl,
    apiKey: key,
    retry: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 1_000 },
    onDeprecation: (notice) => notices.push(notice),
    ...options,
  });
  return { petStore, notices };
}

const uniqueName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** Every stored pet with this name, read straight from the server (not through the client), following Link. */
async function storedPets(name: string): Promise<Pet[]> {
  const pets: Pet[] = [];
  let url: string | undefined = `${api.baseUrl}/pets?limit=100`;
  while (url) {
    const response = await fetchJson(url, { headers: bearer(key) });
    expect(response.status).toBe(200);
    pets.push(...(response.json as Pet[]));
    const next = response.headers.link ? /^<([^>]+)>; rel="next"$/.exec(response.headers.link)?.[1] : undefined;
    url = next ? new URL(next, api.baseUrl).href : undefined;
  }
  return pets.filter((pet) => pet.name === name);
}

describe("the client against the local server", () => {
  it("creates pets, pages through them with list() and listAll(), and gets one", async () => {
    const { petStore } = client();
    const name = uniqueName("paging");
    const created: Pet[] = [];
    for (let index = 0; index < 5; index += 1)
      created.push(await petStore.pets.create({ name, categoryId: 3, status: "pending" }));

    const first = await petStore.pets.list({ limit: 2 });
    const all: Pet[] = [];
    for await (const pet of petStore.pets.listAll({ limit: 2 })) all.push(pet);

    expect(created.map((pet) => pet.status)).toEqual(["pending", "pending", "pending", "pending", "pending"]);
    expect(first.items).toHaveLength(2);
    expect(first.next).toEqual({ limit: 2, cursor: expect.any(String) });
    expect(all.filter((pet) => pet.name === name)).toEqual(created);
    expect(all.map((pet) => pet.id)).toEqual([...all.map((pet) => pet.id)].sort((a, b) => a - b));
    expect(await petStore.pets.get(created[0]?.id ?? 0)).toEqual(created[0]);
  });

  it("follows a status-filtered listing to its last page with the filter kept", async () => {
    const { petStore } = client();
    const name = uniqueName("filtered");
    const sold = await petStore.pets.create({ name, categoryId: 1, status: "sold" });
    await petStore.pets.create({ name, categoryId: 1, status: "available" });

    // The status index is eventually consistent (docs/api.md): wait until the new pet shows.
    let seen: Pet[] = [];
    for (let tries = 0; tries < 50 && !seen.some((pet) => pet.id === sold.id); tries += 1) {
      seen = [];
      for await (const pet of petStore.pets.listAll({ status: "sold", limit: 1 })) seen.push(pet);
    }

    expect(seen.filter((pet) => pet.name === name)).toEqual([sold]);
    expect(seen.every((pet) => pet.status === "sold")).toBe(true);
  });

  it("throws the API's error with its code, status, message and X-Request-Id", async () => {
    const { petStore } = client();

    const invalid = await petStore.pets.create({ name: "", categoryId: 1 }).catch((error: unknown) => error);
    const missing = await petStore.pets.get(9_007_199_254_740_991).catch((error: unknown) => error);
    const unauthorized = await client({ apiKey: "petstore_local_notAKey" })
      .petStore.pets.list()
      .catch((error: unknown) => error);

    expect(invalid).toBeInstanceOf(PetStoreApiError);
    expect(invalid).toMatchObject({
      code: "invalid_request",
      status: 400,
      message: expect.stringMatching(/^name: /),
      requestId: expect.stringMatching(/\S/),
      attempts: 1,
    });
    expect(missing).toMatchObject({ code: "not_found", status: 404, attempts: 1 });
    expect(unauthorized).toMatchObject({ code: "unauthorized", status: 401, attempts: 1 });
  });

  it("createWithResponse() answers X-Request-Id and Location, and replayed: true for a second create with the same key", async () => {
    const { petStore } = client();
    const newPet = { name: uniqueName("with-response"), categoryId: 4 };
    const idempotencyKey = randomUUID();

    const first = await petStore.pets.createWithResponse(newPet, { idempotencyKey });
    const second = await petStore.pets.createWithResponse(newPet, { idempotencyKey });

    expect(first.response).toEqual({
      status: 201,
      requestId: expect.stringMatching(/\S/),
      location: `/v1/pets/${first.pet.id}`,
      replayed: false,
      idempotencyKey,
      attempts: 1,
    });
    expect(second.pet).toEqual(first.pet);
    expect(second.response).toMatchObject({ status: 201, location: `/v1/pets/${first.pet.id}`, replayed: true });
    expect(second.response.requestId).not.toBe(first.response.requestId);
    expect(await storedPets(newPet.name)).toEqual([first.pet]);
  });

  it("answers each page with its X-Request-Id", async () => {
    const { petStore } = client();

    const page = await petStore.pets.list({ limit: 1 });

    expect(page.response).toEqual({ status: 200, requestId: expect.stringMatching(/\S/), attempts: 1 });
  });

  it("warns once that getPet is deprecated, with the API's Sunset and successor", async () => {
    const { petStore, notices } = client();
    const pet = await petStore.pets.create({ name: uniqueName("deprecated"), categoryId: 1 });

    await petStore.pets.get(pet.id);
    await petStore.pets.get(pet.id);

    expect(notices).toEqual([
      expect.objectContaining({
        operation: "getPet",
        sunset: "Thu, 05 Dec 2030 00:00:00 GMT",
        successor: "/v1/pets",
        message: expect.stringContaining("getPet is deprecated since 2026-11-23"),
      }),
    ]);
  });
});

describe("the client through a proxy that answers 503 and drops connections", () => {
  it("makes one pet of one create that meets a 503, a dropped request and a dropped answer", async () => {
    const faults = ["503", "drop", "dropAfterForwarding", "forward"] as const;
    proxy.plan((_request, index) => faults[index] ?? "forward");
    const { petStore } = client({ baseUrl: proxy.baseUrl });
    const name = uniqueName("faults");

    const pet = await petStore.pets.create({ name, categoryId: 2 });

    expect(proxy.requests.map((request) => request.fault)).toEqual(faults);
    expect(new Set(proxy.requests.map((request) => request.headers["idempotency-key"])).size).toBe(1);
    // The dropped answer had created the pet; the last attempt got it back as a replay.
    expect(proxy.requests[2]?.upstreamStatus).toBe(201);
    expect(proxy.requests[3]?.upstreamHeaders?.["idempotent-replayed"]).toBe("true");
    expect(await storedPets(name)).toEqual([pet]);
  });

  it("makes exactly one pet per logical create when a third of the requests fail", async () => {
    const cycle = ["dropAfterForwarding", "forward", "503", "forward", "drop", "forward"] as const;
    proxy.plan((_request, index) => cycle[index % cycle.length] ?? "forward");
    const { petStore } = client({ baseUrl: proxy.baseUrl });
    const name = uniqueName("many");

    const created: Pet[] = [];
    for (let index = 0; index < 12; index += 1) created.push(await petStore.pets.create({ name, categoryId: 5 }));

    const stored = await storedPets(name);
    expect(proxy.requests.filter((request) => request.fault !== "forward").length).toBeGreaterThanOrEqual(6);
    expect(new Set(created.map((pet) => pet.id)).size).toBe(12);
    expect(stored).toEqual(created);
  });

  it("throws a PetStoreNetworkError when every answer is lost; the same key later returns the one pet made", async () => {
    proxy.plan(() => "dropAfterForwarding");
    const { petStore } = client({ baseUrl: proxy.baseUrl, retry: { maxAttempts: 3, baseDelayMs: 10 } });
    const name = uniqueName("lost");
    const idempotencyKey = randomUUID();

    const error = await petStore.pets.create({ name, categoryId: 1 }, { idempotencyKey }).catch((e: unknown) => e);
    proxy.plan(() => "forward");
    const retried = await petStore.pets.create({ name, categoryId: 1 }, { idempotencyKey });

    expect(error).toBeInstanceOf(PetStoreNetworkError);
    expect(error).toMatchObject({ attempts: 3 });
    expect(proxy.requests.map((request) => request.upstreamStatus)).toEqual([201, 201, 201, 201]);
    expect(await storedPets(name)).toEqual([retried]);
  });

  it("abandons a create whose answer never comes, after attemptTimeoutMs, and still makes one pet", async () => {
    const faults = ["stallAfterForwarding", "forward"] as const;
    proxy.plan((_request, index) => faults[index] ?? "forward");
    const { petStore } = client({ baseUrl: proxy.baseUrl, attemptTimeoutMs: 500 });
    const name = uniqueName("stalled");

    const pet = await petStore.pets.create({ name, categoryId: 1 });

    expect(proxy.requests.map((request) => request.upstreamStatus)).toEqual([201, 201]);
    expect(proxy.requests[1]?.upstreamHeaders?.["idempotent-replayed"]).toBe("true");
    expect(await storedPets(name)).toEqual([pet]);
  });

  it("sends its own User-Agent through Node's fetch, which keeps it", async () => {
    const { petStore } = client({ baseUrl: proxy.baseUrl });

    await petStore.pets.list({ limit: 1 });

    expect(proxy.requests[0]?.headers["user-agent"]).toBe(
      `petstore-client/${CLIENT_VERSION} (node/${process.versions.node})`,
    );
  });

  it("retries a create that meets a load balancer's 502 page, and makes one pet", async () => {
    const faults = ["502", "forward"] as const;
    proxy.plan((_request, index) => faults[index] ?? "forward");
    const { petStore } = client({ baseUrl: proxy.baseUrl });
    const name = uniqueName("bad-gateway");

    const pet = await petStore.pets.create({ name, categoryId: 1 });

    expect(proxy.requests.map((request) => request.fault)).toEqual(faults);
    expect(await storedPets(name)).toEqual([pet]);
  });

  it("recovers a create whose answers were all lost with the key its PetStoreNetworkError carries", async () => {
    proxy.plan(() => "dropAfterForwarding");
    const { petStore } = client({ baseUrl: proxy.baseUrl, retry: { maxAttempts: 2, baseDelayMs: 10 } });
    const newPet = { name: uniqueName("recovered"), categoryId: 1 };

    const error = await petStore.pets.create(newPet).catch((e: unknown) => e);
    proxy.plan(() => "forward");
    if (!(error instanceof PetStoreNetworkError) || error.idempotencyKey === undefined) throw error;
    const recovered = await petStore.pets.createWithResponse(newPet, { idempotencyKey: error.idempotencyKey });

    expect(recovered.response.replayed).toBe(true);
    expect(await storedPets(newPet.name)).toEqual([recovered.pet]);
  });

  it("rejects a create aborted after the server made the pet with a PetStoreAbortError whose key gets that pet back", async () => {
    proxy.plan(() => "stallAfterForwarding");
    const { petStore } = client({ baseUrl: proxy.baseUrl });
    const newPet = { name: uniqueName("aborted"), categoryId: 1 };
    const controller = new AbortController();

    const pending = petStore.pets.create(newPet, { signal: controller.signal }).catch((e: unknown) => e);
    await expect.poll(() => proxy.requests[0]?.upstreamStatus).toBe(201);
    controller.abort();
    const error = await pending;
    proxy.plan(() => "forward");
    if (!(error instanceof PetStoreAbortError) || error.idempotencyKey === undefined) throw error;
    const recovered = await petStore.pets.createWithResponse(newPet, { idempotencyKey: error.idempotencyKey });

    expect(error).toMatchObject({ attempts: 1, cause: { name: "AbortError" } });
    expect(recovered.response.replayed).toBe(true);
    expect(await storedPets(newPet.name)).toEqual([recovered.pet]);
  });

  it("retries a listing after a 503 and a dropped connection, but never a 400", async () => {
    const faults = ["503", "drop", "forward"] as const;
    proxy.plan((_request, index) => faults[index] ?? "forward");
    const { petStore } = client({ baseUrl: proxy.baseUrl });

    const page = await petStore.pets.list({ limit: 1 });
    const requestsBefore = proxy.requests.length;
    const invalid = await petStore.pets.list({ cursor: "forged" }).catch((error: unknown) => error);

    expect(page.items).toHaveLength(1);
    expect(requestsBefore).toBe(3);
    expect(invalid).toMatchObject({ code: "invalid_request", status: 400, message: expect.stringMatching(/^cursor/) });
    expect(proxy.requests.length - requestsBefore).toBe(1);
  });
});
