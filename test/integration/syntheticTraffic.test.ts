/**
 * Synthetic keys (lib/pets/collection.ts): the project's own checks go through the path a client
 * uses, but what they create never shows in another key's answer, is never even read by another
 * key's query, and expires by itself.
 */
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import type { Pet } from "../../lib/contract/schemas";
import { itemKeys, TTL_ATTRIBUTE } from "../../lib/db/table";
import type { Dependencies } from "../../lib/http/types";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { SHARED_PETS, SYNTHETIC_PET_RETENTION_SECONDS } from "../../lib/pets/collection";
import { DynamoPetRepository, petItem } from "../../lib/pets/repository";
import { runSmoke, type SmokeReport } from "../../lib/smoke/checks";
import { bearer, invoke, issueTestKey, jsonContent, startTestApi } from "../support/api";
import { documentClient, recordReads, tableName } from "../support/dynamo";

const client = documentClient();
const reads = recordReads(client);
const deps: Dependencies = {
  pets: new DynamoPetRepository(client, tableName()),
  keys: createApiKeyVerifier(new DynamoApiKeyStore(documentClient(), tableName()), "local"),
  clock: () => new Date(),
};
const listPets = createListPets(deps);
const getPet = createGetPet(deps);
const createPet = createCreatePet({ ...deps, idempotency: new DynamoIdempotencyStore(client, tableName()) });

let api: Awaited<ReturnType<typeof startTestApi>>;
let clientKey: string;
let syntheticKey: { key: string; keyId: string };
let smoke: SmokeReport;
const clientPets: Pet[] = [];

async function create(key: string, name: string, status: Pet["status"]): Promise<Pet> {
  const response = await invoke(createPet, {
    method: "POST",
    path: "/pets",
    headers: { ...bearer(key), ...jsonContent },
    body: JSON.stringify({ name, categoryId: 7, status }),
  });
  expect(response.status).toBe(201);
  return response.json as Pet;
}

/** Every pet a key's listing shows, following `Link: rel="next"` page by page. */
async function listAll(key: string, query: string): Promise<{ pets: Pet[]; pages: number }> {
  const pets: Pet[] = [];
  let path: string | undefined = `/pets?${query}`;
  let pages = 0;
  while (path !== undefined) {
    const response = await invoke(listPets, { path, resource: "/pets", headers: bearer(key) });
    expect(response.status).toBe(200);
    pets.push(...(response.json as Pet[]));
    pages += 1;
    const next = /<\/v1([^>]+)>; rel="next"/.exec(response.headers.link ?? "")?.[1];
    path = next;
  }
  return { pets, pages };
}

/** `GET /pets/{id}` with `key`. */
function getAs(key: string, id: number) {
  return invoke(getPet, {
    path: `/pets/${id}`,
    resource: "/pets/{petId}",
    pathParameters: { petId: String(id) },
    headers: bearer(key),
  });
}

const ids = (pets: readonly { readonly id: number }[]) => pets.map((pet) => pet.id);

beforeAll(async () => {
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  clientKey = (await issueTestKey("mobile app")).key;
  syntheticKey = await issueTestKey("deploy smoke", { synthetic: true });
  clientPets.push(await create(clientKey, "Rex", "available"));
  clientPets.push(await create(clientKey, "Tom", "pending"));
  smoke = await runSmoke({ baseUrl: api.baseUrl, key: syntheticKey.key, print: () => {} });
  clientPets.push(await create(clientKey, "Kit", "pending"));
}, 60_000);

afterAll(async () => {
  await api.close();
});

describe("a synthetic key's smoke run", () => {
  it("passes every check through the local server, creating its pets", () => {
    expect(smoke.results.filter((result) => !result.passed)).toEqual([]);
    expect(smoke.created).toHaveLength(3);
  });

  it("takes its pets' ids from the one sequence clients use, so an id names one pet anywhere", () => {
    const all = [...ids(clientPets), ...ids(smoke.created)];
    expect(new Set(all).size).toBe(all.length);
    expect(Math.min(...ids(smoke.created))).toBeGreaterThan(clientPets[1]?.id ?? 0);
    expect(Math.max(...ids(smoke.created))).toBeLessThan(clientPets[2]?.id ?? 0);
  });

  it("stores its pets apart from clients' pets, each with an expiry an hour after its creation", async () => {
    const pet = smoke.created[0] as Pet;
    const now = Math.floor(Date.now() / 1000);
    const shared = await client.send(
      new GetCommand({ TableName: tableName(), Key: itemKeys.pet(pet.id, SHARED_PETS) }),
    );
    const own = await client.send(
      new GetCommand({
        TableName: tableName(),
        Key: itemKeys.pet(pet.id, { kind: "synthetic", keyId: syntheticKey.keyId }),
      }),
    );

    expect(shared.Item).toBeUndefined();
    expect(own.Item?.[TTL_ATTRIBUTE]).toBeGreaterThan(now + SYNTHETIC_PET_RETENTION_SECONDS - 120);
    expect(own.Item?.[TTL_ATTRIBUTE]).toBeLessThanOrEqual(now + SYNTHETIC_PET_RETENTION_SECONDS);
  });
});

describe("an ordinary key after a synthetic key's smoke run", () => {
  it("lists exactly the clients' pets, page by page, none of the synthetic key's", async () => {
    const listing = await listAll(clientKey, "limit=1");

    expect(ids(listing.pets)).toEqual(ids(clientPets));
    expect(listing.pages).toBe(clientPets.length);
  });

  it("filters by status among the clients' pets only", async () => {
    const pending = await listAll(clientKey, "status=pending&limit=1");

    expect(ids(pending.pets)).toEqual(ids(clientPets.filter((pet) => pet.status === "pending")));
    expect(smoke.created.some((pet) => pet.status === "pending")).toBe(true);
  });

  it("gets 404 for a synthetic key's pet, and its own pet as before", async () => {
    const synthetic = smoke.created[0] as Pet;
    const own = clientPets[0] as Pet;

    expect((await getAs(clientKey, synthetic.id)).status).toBe(404);
    expect(await getAs(clientKey, own.id)).toMatchObject({ status: 200, json: own });
  });

  it("reads one item per pet returned (and one to know there is more), never a synthetic key's pet", async () => {
    reads.reset();
    const all = await invoke(listPets, { path: "/pets?limit=2", headers: bearer(clientKey) });
    const allReads = reads.itemsRead();
    reads.reset();
    const pending = await invoke(listPets, { path: "/pets?status=pending&limit=5", headers: bearer(clientKey) });
    const pendingReads = reads.itemsRead();

    // The key lookup is cached by the verifier: every item read here is the listing's.
    expect((all.json as Pet[]).length).toBe(2);
    expect(allReads).toBe(3);
    expect((pending.json as Pet[]).length).toBe(2);
    expect(pendingReads).toBe(2);
  });
});

describe("a synthetic key's own answers", () => {
  it("list only the pets it created, with the status filter too", async () => {
    const listing = await listAll(syntheticKey.key, "limit=1");
    const pending = await listAll(syntheticKey.key, "status=pending&limit=1");

    expect(ids(listing.pets)).toEqual(ids(smoke.created));
    expect(ids(pending.pets)).toEqual(ids(smoke.created.filter((pet) => pet.status === "pending")));
  });

  it("do not show another synthetic key's pets, nor a client's pet by id", async () => {
    const other = await issueTestKey("synthetic check", { synthetic: true });
    const created = await create(other.key, "probe", "available");
    const clientPet = clientPets[0] as Pet;

    const listing = await listAll(syntheticKey.key, "limit=100");
    const get = await getAs(other.key, clientPet.id);

    expect(ids(listing.pets)).not.toContain(created.id);
    expect(get.status).toBe(404);
    expect(ids((await listAll(other.key, "limit=100")).pets)).toEqual([created.id]);
  });

  it("no longer show a pet once it has expired, though TTL has not deleted it yet", async () => {
    const key = await issueTestKey("expiry", { synthetic: true });
    const collection = { kind: "synthetic", keyId: key.keyId } as const;
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3600_000);
    const expired = { id: 9_000_001, name: "old smoke", categoryId: 1, status: "pending" } as const;
    await client.send(new PutCommand({ TableName: tableName(), Item: petItem(expired, hoursAgo(2), collection) }));
    const fresh = await create(key.key, "new smoke", "pending");

    const listing = await listAll(key.key, "limit=1");
    const pending = await listAll(key.key, "status=pending&limit=1");
    const get = await getAs(key.key, expired.id);

    expect(ids(listing.pets)).toEqual([fresh.id]);
    expect(ids(pending.pets)).toEqual([fresh.id]);
    expect(get.status).toBe(404);
  });
});
