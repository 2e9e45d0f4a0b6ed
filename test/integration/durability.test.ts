/**
 * Durability of `npm start`: a 201 means the pet is stored. The server process group is killed
 * with SIGKILL (no shutdown hook runs) while creates are in flight, restarted on the same data
 * folder, and every acknowledged pet must still be there, unchanged, with its id unique.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import type { Pet, PetStatus } from "../../lib/contract/schemas";
import { fetchJson } from "../support/api";
import { freePort, type RunningProcess, runScript } from "../support/processes";

const MAIN = "local/main.ts";
const WRITERS = 16;
/** Enough acknowledged creates that LevelDB has appended well past its first log block. */
const ACKNOWLEDGED_BEFORE_KILL = 150;

const running: RunningProcess[] = [];
const folders: string[] = [];

afterEach(() => {
  for (const server of running.splice(0)) server.killGroup("SIGKILL");
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

async function start(cwd: string, env: Record<string, string>) {
  const server = runScript(MAIN, [], { cwd, env });
  running.push(server);
  const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
  return { server, baseUrl: baseUrl as string };
}

/** Follows rel="next" from the first page and returns every listed id, in order. */
async function listedIds(baseUrl: string, headers: Record<string, string>): Promise<number[]> {
  const ids: number[] = [];
  let next: string | undefined = `${baseUrl}/pets?limit=100`;
  while (next) {
    const page = await fetchJson(next, { headers });
    expect(page.status).toBe(200);
    ids.push(...(page.json as Pet[]).map((pet) => pet.id));
    const path = /^<\/v1([^>]+)>; rel="next"$/.exec(page.headers.link ?? "")?.[1];
    next = path ? `${baseUrl}${path}` : undefined;
  }
  return ids;
}

describe("npm start killed with SIGKILL during writes", () => {
  it("still has every pet whose 201 was received, unchanged and with unique ids, after a restart", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "petstore-durability-"));
    folders.push(cwd);
    const key = generateApiKey("local");
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      PETSTORE_API_KEY: key,
      DYNAMODB_ENDPOINT: "",
    };
    const headers = { Authorization: `Bearer ${key}`, "Content-Type": "application/json" };
    const first = await start(cwd, env);
    const acknowledged: Pet[] = [];
    const unexpected: string[] = [];
    let inFlight = 0;
    let stop = false;
    const statuses: PetStatus[] = ["available", "pending", "sold"];

    const writers = Array.from({ length: WRITERS }, async (_, writer) => {
      for (let attempt = 0; !stop; attempt++) {
        const sent = { name: `writer ${writer} pet ${attempt}`, categoryId: writer + 1, status: statuses[attempt % 3] };
        inFlight += 1;
        try {
          const response = await fetch(`${first.baseUrl}/pets`, {
            method: "POST",
            headers,
            body: JSON.stringify(sent),
          });
          // Acknowledged only once the whole answer, id included, has reached the client.
          const body = (await response.json()) as Pet;
          if (response.status === 201) acknowledged.push(body);
          else unexpected.push(`${response.status} ${JSON.stringify(body)}`);
        } catch {
          // The connection died with the server: this create was never acknowledged.
        } finally {
          inFlight -= 1;
        }
      }
    });
    await expect.poll(() => acknowledged.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_KILL);
    const inFlightAtKill = inFlight;
    first.server.killGroup("SIGKILL");
    stop = true;
    await first.server.exited;
    await Promise.all(writers);

    const second = await start(cwd, env);
    const fetched = await Promise.all(
      acknowledged.map((pet) => fetchJson(`${second.baseUrl}/pets/${pet.id}`, { headers })),
    );
    const listed = await listedIds(second.baseUrl, headers);
    const afterRestart = await fetchJson(`${second.baseUrl}/pets`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "after restart", categoryId: 1 }),
    });

    expect(unexpected).toEqual([]);
    expect(inFlightAtKill).toBeGreaterThan(0);
    expect(fetched.map((response) => response.status)).toEqual(acknowledged.map(() => 200));
    expect(fetched.map((response) => response.json)).toEqual(acknowledged);
    const ids = acknowledged.map((pet) => pet.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual(expect.arrayContaining(ids));
    // The id counter survived too: a new pet never reuses an id handed out before the kill.
    expect(afterRestart.status).toBe(201);
    expect((afterRestart.json as Pet).id).toBeGreaterThan(Math.max(...listed));
  });
});
