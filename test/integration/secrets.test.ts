/**
 * No API key ever reaches a log. Everything the code can print is captured — the handlers'
 * telemetry at DEBUG in both formats and anything else written to stdout or stderr in-process,
 * then the whole output of a real `npm start` — over a run with valid, revoked, unknown, foreign
 * and malformed keys, failures of the store included, and searched for every key and for any
 * 12-character piece of a key's secret part (so a truncated key counts too).
 *
 * Excluded by design: the banner of `npm start`, which prints its own key once so that a developer
 * can use it, and `npm run keys -- create`, which prints the new key once (keys here are issued
 * in-process, not with that command).
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import dynalite from "dynalite";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type CreatePetDependencies, createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { type ApiKeyStore, apiKeyPrefix, generateApiKey, issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { storeCall } from "../../lib/db/storeErrors";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import type { PetRepository } from "../../lib/pets/repository";
import { runtimeDependencies, runtimeTable } from "../../lib/runtime";
import { ensureTable } from "../../local/dynamo";
import { listen } from "../../local/listen";
import { invoke, issueTestKey, type TestRequest } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";
import { leaksInFolder, leaksOf } from "../support/keyLeaks";
import { freePort, type RunningProcess, runScript } from "../support/processes";

/** Near-misses of a real key: what a client with a typo, a bad paste or another scheme sends. */
function malformedVariants(key: string): string[] {
  return [
    key.slice(0, -1),
    `${key}x`,
    key.toUpperCase(),
    key.replace(apiKeyPrefix("local"), apiKeyPrefix("prod")),
    key.slice(apiKeyPrefix("local").length),
    `${key}\u0000`,
    `${key}🐶`,
    ` ${key} `,
  ];
}

function authorizationHeaders(keys: readonly string[]): string[] {
  return keys.flatMap((key) => [
    `Bearer ${key}`,
    `bearer  ${key}`,
    `Basic ${key}`,
    `Basic ${Buffer.from(`${key}:`).toString("base64")}`,
    key,
    `Bearer ${key} ${key}`,
    `Token ${key}`,
  ]);
}

/** A request of each kind the API answers: successes and every client error. */
function requestsWith(authorization: string): TestRequest[] {
  const headers = { Authorization: authorization, "Content-Type": "application/json" };
  return [
    { path: "/pets?limit=2", headers },
    { path: "/pets?limit=0", headers },
    { path: "/pets?cursor=garbage", headers },
    { method: "POST", path: "/pets", headers, body: '{"name":"Secretive","categoryId":3}' },
    { method: "POST", path: "/pets", headers, body: '{"name":"","categoryId":3}' },
    { method: "POST", path: "/pets", headers, body: "{not json" },
    { method: "POST", path: "/pets", headers: { ...headers, "Content-Type": "text/plain" }, body: "{}" },
    { method: "POST", path: "/pets", headers, body: "x".repeat(17 * 1024) },
    { path: "/pets/1", resource: "/pets/{petId}", pathParameters: { petId: "1" }, headers },
    { path: "/pets/999999", resource: "/pets/{petId}", pathParameters: { petId: "999999" }, headers },
    { path: "/pets/abc", resource: "/pets/{petId}", pathParameters: { petId: "abc" }, headers },
  ];
}

function handlerFor(request: TestRequest, handlers: Record<"create" | "get" | "list", ProxyHandler>): ProxyHandler {
  if (request.method === "POST") return handlers.create;
  return request.pathParameters ? handlers.get : handlers.list;
}

describe("the search for keys in logs", () => {
  it("finds a whole key, a key cut short and the secret part alone, and nothing in a log without them", () => {
    const key = generateApiKey("local");
    const secret = key.slice(apiKeyPrefix("local").length);

    expect(leaksOf(`{"auth":"${key}"}`, [key])).toContain(key);
    expect(leaksOf(`token=${key.slice(0, 30)}…`, [key]).length).toBeGreaterThan(0);
    expect(leaksOf(`…${secret.slice(10, 25)}…`, [key]).length).toBeGreaterThan(0);
    expect(leaksOf(`{"apiKeyId":"key_abc","status":401}`, [key])).toEqual([]);
  });

  it("finds a key piece in any file of a folder, read byte for byte, and nothing in files without one", () => {
    const key = generateApiKey("local");
    const folder = mkdtempSync(join(tmpdir(), "petstore-leaks-"));
    try {
      mkdirSync(join(folder, "deep/er"), { recursive: true });
      writeFileSync(join(folder, "clean.log"), "nothing here");
      writeFileSync(join(folder, "deep/er/000003.ldb"), Buffer.from([0, 255, ...Buffer.from(key.slice(20, 40)), 7]));

      const { leaks, filesRead } = leaksInFolder(folder, [key]);

      expect(filesRead).toBe(2);
      expect(leaks.length).toBeGreaterThan(0);
      expect(leaks.every((leak) => leak.startsWith("deep/er/000003.ldb: "))).toBe(true);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("the handlers' own output", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  // JSON logs an error with its cause; the terminal format prints the error's own stack only.
  it.each([
    ["json", "ECONNREFUSED"],
    ["pretty", "ServiceUnavailableError"],
  ] as const)("holds no key at DEBUG in %s format, failures of the stores included", async (format, outageEvidence) => {
    const written: string[] = [];
    const capture = (chunk: unknown) => {
      written.push(String(chunk));
      return true;
    };
    vi.spyOn(process.stdout, "write").mockImplementation(capture);
    vi.spyOn(process.stderr, "write").mockImplementation(capture);
    for (const method of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        written.push(args.map(String).join(" "));
      });
    }
    const telemetry = createTelemetry({
      service: "petstore",
      stage: "local",
      level: "DEBUG",
      format,
      write: (line) => written.push(line),
    });
    const store = new DynamoApiKeyStore(documentClient(), tableName());
    const valid = (await issueTestKey("secrets valid")).key;
    const revoked = await issueTestKey("secrets revoked");
    await store.revoke(revoked.keyId, new Date());
    const keys = [valid, revoked.key, generateApiKey("local"), generateApiKey("prod"), generateApiKey("staging")];
    const deps: CreatePetDependencies = {
      ...runtimeDependencies,
      idempotency: new DynamoIdempotencyStore(runtimeTable.client, runtimeTable.tableName),
      telemetry,
    };
    const failingStore: ApiKeyStore = {
      // As DynamoApiKeyStore fails when DynamoDB is unreachable: a 503 with the cause logged.
      findByHash: () =>
        storeCall(async () => {
          throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
        }),
      save: async () => undefined,
      list: async () => [],
      markReplaced: async () => false,
      revoke: async () => false,
    };
    const failingPets: PetRepository = {
      allocateId: async () => {
        throw new Error("the disk is on fire");
      },
      insert: async () => {
        throw new Error("the disk is on fire");
      },
      get: async () => {
        throw new Error("the disk is on fire");
      },
      page: async () => {
        throw new Error("the disk is on fire");
      },
    };
    const working = {
      create: createCreatePet(deps),
      get: createGetPet(deps),
      list: createListPets(deps),
    };
    const brokenDeps: CreatePetDependencies = { ...deps, pets: failingPets };
    const brokenPets = {
      create: createCreatePet(brokenDeps),
      get: createGetPet(brokenDeps),
      list: createListPets(brokenDeps),
    };
    const brokenKeysDeps: CreatePetDependencies = { ...deps, keys: createApiKeyVerifier(failingStore, "local") };
    const brokenKeys = {
      create: createCreatePet(brokenKeysDeps),
      get: createGetPet(brokenKeysDeps),
      list: createListPets(brokenKeysDeps),
    };
    const statuses = new Set<number>();

    for (const authorization of authorizationHeaders([...keys, ...malformedVariants(valid)])) {
      for (const request of requestsWith(authorization)) {
        for (const handlers of [working, brokenPets, brokenKeys]) {
          statuses.add((await invoke(handlerFor(request, handlers), request)).status);
        }
      }
    }

    const output = written.join("\n");
    expect(leaksOf(output, [...keys, ...malformedVariants(valid).map((variant) => variant.trim())])).toEqual([]);
    // The run did reach every kind of answer, and their logs were captured.
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 201, 400, 401, 404, 413, 415, 500, 503]));
    expect(output).toContain("the disk is on fire");
    expect(output).toContain(outageEvidence);
  });
});

describe("npm start's whole output", () => {
  const running: RunningProcess[] = [];
  const folders: string[] = [];
  const engines: Server[] = [];

  afterEach(() => {
    for (const server of running.splice(0)) server.killGroup("SIGKILL");
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
    for (const engine of engines.splice(0)) {
      engine.close();
      engine.closeAllConnections();
    }
  });

  it("holds no key but the one its banner shows, over a run with every kind of key and a DynamoDB outage", async () => {
    // A DynamoDB of this test's own, so that it can be stopped under the server.
    const engine = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    engines.push(engine);
    const endpoint = `http://127.0.0.1:${await listen(engine, 0, "127.0.0.1")}`;
    const table = "secrets";
    const client = new DynamoDBClient({
      region: "us-east-1",
      endpoint,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    await ensureTable(client, table);
    const store = new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), table);
    const pinned = generateApiKey("local");
    const issued = (await issueApiKey(store, "local", "issued")).key;
    const revoked = await issueApiKey(store, "local", "revoked");
    await store.revoke(revoked.record.keyId, new Date());
    const neverSeenBeforeOutage = (await issueApiKey(store, "local", "used during the outage")).key;
    const otherKeys = [issued, revoked.key, generateApiKey("local"), generateApiKey("prod"), neverSeenBeforeOutage];
    const cwd = mkdtempSync(join(tmpdir(), "petstore-secrets-"));
    folders.push(cwd);
    const server = runScript("local/main.ts", [], {
      cwd,
      env: {
        PORT: String(await freePort()),
        DYNAMODB_ENDPOINT: endpoint,
        PETS_TABLE_NAME: table,
        PETSTORE_API_KEY: pinned,
        LOG_LEVEL: "DEBUG",
      },
    });
    running.push(server);
    const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
    await server.waitFor(/Ctrl-C stops the server\./);
    const send = async (request: TestRequest) => {
      const response = await fetch(`${baseUrl}${request.path}`, {
        method: request.method ?? "GET",
        headers: request.headers,
        ...(request.body === undefined ? {} : { body: request.body }),
      }).catch(() => undefined);
      await response?.arrayBuffer();
      return response?.status;
    };
    const statuses = new Set<number | undefined>();
    const printable = (header: string) => /^[\x20-\x7e]*$/.test(header);

    for (const authorization of authorizationHeaders([
      pinned,
      ...otherKeys.slice(0, -1),
      ...malformedVariants(pinned),
    ])) {
      if (!printable(authorization)) continue;
      for (const request of requestsWith(authorization)) statuses.add(await send(request));
    }
    engine.close();
    engine.closeAllConnections();
    for (const key of [pinned, neverSeenBeforeOutage]) {
      for (const request of requestsWith(`Bearer ${key}`)) statuses.add(await send(request));
    }
    server.child.kill("SIGINT");
    await server.exited;

    const output = server.output();
    const banner = output.slice(0, output.indexOf("Ctrl-C stops the server."));
    const afterBanner = output.slice(banner.length);
    expect(leaksOf(afterBanner, [pinned, ...otherKeys, ...malformedVariants(pinned).map((v) => v.trim())])).toEqual([]);
    expect(leaksOf(banner, otherKeys)).toEqual([]);
    // The run reached the answers it meant to, and the server logged them at DEBUG.
    expect([...statuses]).toEqual(expect.arrayContaining([200, 201, 400, 401, 404, 413, 415, 503]));
    expect(afterBanner.match(/"message":"request"/g)?.length ?? 0).toBeGreaterThan(100);
    expect(afterBanner).toContain('"level":"ERROR"');
  });
});
