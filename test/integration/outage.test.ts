/**
 * DynamoDB cut off under a running `npm start` and reachable again, while clients create pets and
 * retry as the contract tells them to (same Idempotency-Key, after Retry-After). During the outage
 * every answer is a retryable 503 or 409 in the Error shape; afterwards every logical create has
 * exactly one pet: nothing lost, nothing duplicated, nothing half-written.
 *
 * The outage is certain to meet a create in flight: the link to DynamoDB is cut at the first answer
 * the engine gives once every client has a pet, so the call that answer belongs to was applied and its answer
 * lost, and every call after it finds DynamoDB unreachable until the link is restored.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import type { Pet } from "../../lib/contract/schemas";
import { tableName } from "../support/dynamo";
import { freePort, type RunningProcess, runScript } from "../support/processes";
import { type StoreLink, startStoreLink } from "../support/storeLink";

const CLIENTS = 6;
const CREATES_PER_CLIENT = 5;

const running: RunningProcess[] = [];
const links: StoreLink[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const server of running.splice(0)) server.killGroup("SIGKILL");
  await Promise.all(links.splice(0).map((link) => link.close()));
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

interface Answer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly contentType: string | null;
  readonly body: unknown;
}

describe("DynamoDB unreachable under npm start, then back", () => {
  it("answers retryable errors during the outage, and clients that retry with their key end with exactly one pet each", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "petstore-outage-"));
    folders.push(cwd);
    const link = await startStoreLink(String(process.env.DYNAMODB_ENDPOINT));
    links.push(link);
    const key = generateApiKey("local");
    const server = runScript("local/main.ts", [], {
      cwd,
      env: {
        PORT: String(await freePort()),
        DYNAMODB_ENDPOINT: link.endpoint,
        PETS_TABLE_NAME: tableName(),
        PETSTORE_API_KEY: key,
      },
    });
    running.push(server);
    const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    const answers: Answer[] = [];
    const created = new Map<string, { sent: object; pet: Pet }>();

    // A well-behaved client: one Idempotency-Key per logical create, retried until it gets a 201.
    async function createUntilDone(idempotencyKey: string, sent: object): Promise<void> {
      for (;;) {
        const response = await fetch(`${baseUrl}/pets`, {
          method: "POST",
          headers: { ...headers, "Idempotency-Key": idempotencyKey },
          body: JSON.stringify(sent),
        });
        const answer = {
          status: response.status,
          retryAfter: response.headers.get("retry-after"),
          contentType: response.headers.get("content-type"),
          body: await response.json(),
        };
        answers.push(answer);
        if (answer.status === 201) {
          created.set(idempotencyKey, { sent, pet: answer.body as Pet });
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let create = 0; create < CREATES_PER_CLIENT; create++) {
        await createUntilDone(randomUUID(), { name: `client ${client} pet ${create}`, categoryId: client + 1 });
      }
    });

    // Act: an outage in the middle of the run. Creates cut off mid-way cannot release their
    // Idempotency-Key while the store is down, so their retries get 409 until the lock lapses (15 s).
    await link.cutAtAnswer(() => created.size >= CLIENTS);
    await expect
      .poll(() => answers.filter((answer) => answer.status === 503).length, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    await link.restore();
    await Promise.all(clients);

    // Assert: only the retryable statuses, each in the Error shape and with Retry-After.
    const failures = answers.filter((answer) => answer.status !== 201);
    expect(failures.map((answer) => answer.status)).toContain(503);
    expect(failures.filter((answer) => answer.status !== 503 && answer.status !== 409)).toEqual([]);
    for (const failure of failures) {
      expect(failure.body).toEqual({ code: expect.any(String), message: expect.any(String), status: failure.status });
      expect(failure.contentType).toMatch(/^application\/json/);
      expect(Number(failure.retryAfter)).toBeGreaterThan(0);
      expect(JSON.stringify(failure.body)).not.toMatch(/ECONN|dynamo|stack/i);
    }
    // Every logical create has one pet, as it was sent, and the store holds nothing else.
    expect(created.size).toBe(CLIENTS * CREATES_PER_CLIENT);
    const pets = [...created.values()].map(({ pet }) => pet);
    expect(new Set(pets.map((pet) => pet.id)).size).toBe(pets.length);
    for (const { sent, pet } of created.values()) expect(pet).toEqual({ id: pet.id, status: "available", ...sent });
    const listed = await fetch(`${baseUrl}/pets?limit=100`, { headers });
    const listedPets = (await listed.json()) as Pet[];
    expect(listedPets.map((pet) => pet.id).sort((a, b) => a - b)).toEqual(
      pets.map((pet) => pet.id).sort((a, b) => a - b),
    );
  });
});
