/** `npm start` as a developer runs it: real processes, real files (`npm run keys`: keysCommand.test.ts). */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { DynamoDBClient, ListTablesCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterEach, describe, expect, inject, it } from "vitest";
import { generateApiKey, issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import type { Pet } from "../../lib/contract/schemas";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { REPLACED_BY_RESTART_NOTE } from "../../local/localKey";
import { LOCAL_DATA_DIR, LOCAL_TABLE_NAME } from "../../local/settings";
import { fetchJson } from "../support/api";
import { leaksInFolder } from "../support/keyLeaks";
import {
  CLEAN_LOCAL_SERVER_ENV,
  freePort,
  projectRoot,
  type RunningProcess,
  runScript,
  runToEnd,
} from "../support/processes";

const MAIN = "local/main.ts";
const KEYS = "scripts/keys.ts";
const running: RunningProcess[] = [];
const folders: string[] = [];

function tempFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), "petstore-"));
  folders.push(folder);
  return folder;
}

async function start(cwd: string, env: Record<string, string>, args: string[] = []) {
  const server = runScript(MAIN, args, { cwd, env: { ...CLEAN_LOCAL_SERVER_ENV, ...env } });
  running.push(server);
  const [, baseUrl, key] = await server.waitFor(/export BASE=(\S+) KEY=(petstore_local_\w+)/);
  await server.waitFor(/Ctrl-C stops the server\./);
  return { server, baseUrl: baseUrl as string, key: key as string };
}

async function ports() {
  return { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()) };
}

function localClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    region: "us-east-1",
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

/** The key records in the table of the npm start whose DynamoDB listens on `dynamoPort`. */
async function scanKeys(dynamoPort: string) {
  const items = await localClient(`http://127.0.0.1:${dynamoPort}`).send(
    new ScanCommand({ TableName: LOCAL_TABLE_NAME }),
  );
  return (items.Items ?? []).filter((item) => item.keyId !== undefined);
}

/** A port p such that p and p + 1 are both free. */
async function adjacentFreePorts(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const next = createServer();
    const free = await new Promise<boolean>((resolve) => {
      next.once("error", () => resolve(false));
      next.listen(port + 1, "127.0.0.1", () => next.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

async function stop(server: RunningProcess): Promise<number | null> {
  server.child.kill("SIGINT");
  return server.exited;
}

afterEach(async () => {
  for (const server of running.splice(0)) server.killGroup("SIGKILL");
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("npm start", () => {
  it("keeps pets and the pinned key across a Ctrl-C and restart", async () => {
    const cwd = tempFolder();
    const env = {
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      PETSTORE_API_KEY: generateApiKey("local"),
    };
    const first = await start(cwd, env);
    const headers = { Authorization: `Bearer ${first.key}`, "Content-Type": "application/json" };
    const created = await fetchJson(`${first.baseUrl}/pets`, {
      method: "POST",
      headers,
      body: '{"name":"Kept","categoryId":4}',
    });

    expect(await stop(first.server)).toBe(0);
    const second = await start(cwd, env);
    const fetched = await fetchJson(`${second.baseUrl}/pets/${(created.json as Pet).id}`, { headers });

    expect(second.key).toBe(env.PETSTORE_API_KEY);
    expect(fetched.status).toBe(200);
    expect(fetched.json).toEqual(created.json);
    expect(existsSync(join(cwd, ".data/dynamodb"))).toBe(true);
  });

  it("prints export and curl lines that work when pasted into a shell, and the key only there", async () => {
    const { server, key } = await start(tempFolder(), await ports(), ["--in-memory"]);
    const [exportLine] = await server.waitFor(/^ {2}export BASE=\S+ KEY=\S+$/m);
    const [curlLine] = await server.waitFor(/^ {2}curl -H "Authorization: Bearer \$KEY" "\$BASE\/pets\?limit=5"$/m);

    const { stdout } = await promisify(execFile)("sh", [
      "-c",
      `${exportLine.trim()}\n${curlLine.trim()} -s -w '\\n%{http_code}'`,
    ]);

    expect(stdout.trim().split("\n").at(-1)).toBe("200");
    expect(server.output().split(key).length - 1).toBe(1);
  });

  it.each([
    ["npm start -- --in-memory", ["--in-memory"], {}, "DynamoDB: embedded dynalite, in memory (table"],
    // Without --, npm keeps the flag as its own setting and passes it on as npm_config_in_memory.
    [
      "npm start --in-memory",
      [],
      { npm_config_in_memory: "true" },
      "In memory as asked: npm kept --in-memory as its own setting and passed it on as npm_config_in_memory.",
    ],
  ])("keeps nothing on disk with %s, and says so", async (_, args, env, banner) => {
    const cwd = tempFolder();

    const { server } = await start(cwd, { ...(await ports()), ...env }, args);
    await stop(server);

    expect(existsSync(join(cwd, ".data"))).toBe(false);
    expect(server.output()).toContain(banner);
  });

  it("makes a new key at each start and revokes the previous one: five restarts leave one npm start key working, and keys of npm run keys and PETSTORE_API_KEY keep working", async () => {
    const cwd = tempFolder();
    const env = await ports();
    const fromKeysCommand = await runToEnd(KEYS, ["create", "--name", "ci", "--quiet"], {
      cwd,
      env: { ...CLEAN_LOCAL_SERVER_ENV, DYNAMODB_PORT: env.DYNAMODB_PORT },
    });
    const ciKey = fromKeysCommand.output.trim();
    const pinnedKey = generateApiKey("local");
    const pinnedRun = await start(cwd, { ...env, PETSTORE_API_KEY: pinnedKey });
    await stop(pinnedRun.server);

    const starts = [];
    for (let restart = 0; restart < 5; restart++) {
      const run = await start(cwd, env);
      starts.push(run);
      if (restart < 4) expect(await stop(run.server)).toBe(0);
    }
    const last = starts.at(-1) as (typeof starts)[number];
    const npmStartKeys = starts.map((run) => run.key);
    const statusWith = async (key: string) =>
      (await fetchJson(`${last.baseUrl}/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } })).status;
    const keyItems = await scanKeys(env.DYNAMODB_PORT);

    expect(ciKey).toMatch(/^petstore_local_[0-9A-Za-z]{43}$/);
    expect(new Set(npmStartKeys).size).toBe(5);
    expect(await Promise.all(npmStartKeys.map(statusWith))).toEqual([401, 401, 401, 401, 200]);
    expect(await statusWith(ciKey)).toBe(200);
    expect(await statusWith(pinnedKey)).toBe(200);
    const startKeyItems = keyItems.filter((item) => item.name?.S === "npm start");
    expect(startKeyItems).toHaveLength(5);
    expect(startKeyItems.filter((item) => item.revokedAt === undefined)).toHaveLength(1);
    expect(starts[0]?.server.output()).toContain("API key: new; the next npm start revokes it and makes another");
    for (const run of starts.slice(1))
      expect(run.server.output()).toContain("API key: new; the previous start's key was revoked");
    expect(last.server.output()).toContain(
      "(to keep one key across restarts: PETSTORE_API_KEY=<a key from npm run keys -- create --name me> npm start)",
    );

    // Nothing key-like is left on disk: only the keys' hashes, inside the database's files.
    await stop(last.server);
    const { leaks, filesRead } = leaksInFolder(join(cwd, ".data"), [...npmStartKeys, ciKey, pinnedKey]);
    expect(filesRead).toBeGreaterThan(0);
    expect(leaks).toEqual([]);
    expect(readdirSync(join(cwd, ".data")).sort()).toEqual(["dynamodb"]);
  });

  it("tells a client still sending the key a restart replaced why it was refused; a key revoked with npm run keys gets the plain answer", async () => {
    const cwd = tempFolder();
    const env = await ports();
    const first = await start(cwd, env);
    expect(await stop(first.server)).toBe(0);
    const second = await start(cwd, env);
    const store = new DynamoApiKeyStore(
      DynamoDBDocumentClient.from(localClient(`http://127.0.0.1:${env.DYNAMODB_PORT}`)),
      LOCAL_TABLE_NAME,
    );
    const revokedByHand = await issueApiKey(store, "local", "ci");
    const revoking = await runToEnd(KEYS, ["revoke", revokedByHand.record.keyId], {
      cwd,
      env: { ...CLEAN_LOCAL_SERVER_ENV, DYNAMODB_PORT: env.DYNAMODB_PORT },
    });
    const answerTo = (key: string) =>
      fetchJson(`${second.baseUrl}/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });

    const replaced = await answerTo(first.key);
    const revoked = await answerTo(revokedByHand.key);

    expect(revoking.code).toBe(0);
    expect(replaced.status).toBe(401);
    expect(replaced.json).toMatchObject({ message: `The API key was revoked: ${REPLACED_BY_RESTART_NOTE}` });
    expect(revoked.status).toBe(401);
    expect(revoked.json).toMatchObject({ message: "The API key is not valid." });
    expect((await answerTo(second.key)).status).toBe(200);
  });

  it("deletes the key file an earlier version left in .data/, revokes the keys earlier versions made, and says so", async () => {
    const cwd = tempFolder();
    const env = await ports();
    const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0, path: join(cwd, LOCAL_DATA_DIR) });
    const client = localClient(dynamo.endpoint);
    await ensureTable(client, LOCAL_TABLE_NAME);
    const store = new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), LOCAL_TABLE_NAME);
    const earlier = [];
    for (const name of ["npm start 2026-03-01T09:15:02.137Z", "npm start --in-memory", "npm start"])
      earlier.push((await issueApiKey(store, "local", name)).key);
    await dynamo.close();
    writeFileSync(join(cwd, ".data/local-api-key"), `${earlier[2]}\n`, { mode: 0o600 });

    const { server, baseUrl, key } = await start(cwd, env);
    const statusWith = async (candidate: string) =>
      (await fetchJson(`${baseUrl}/pets?limit=1`, { headers: { Authorization: `Bearer ${candidate}` } })).status;

    expect(existsSync(join(cwd, ".data/local-api-key"))).toBe(false);
    expect(server.output()).toContain(
      "Deleted .data/local-api-key, where an earlier version kept its key in plain text: keys are not kept on disk.",
    );
    expect(server.output()).toContain("API key: new; the 3 keys earlier starts made were revoked");
    expect(await Promise.all(earlier.map(statusWith))).toEqual([401, 401, 401]);
    expect(await statusWith(key)).toBe(200);
  });

  it("says when PETSTORE_API_KEY is a key an earlier npm start made, which an unpinned start revokes", async () => {
    const cwd = tempFolder();
    const env = await ports();
    const first = await start(cwd, env);
    await stop(first.server);

    const pinned = await start(cwd, { ...env, PETSTORE_API_KEY: first.key });

    expect(pinned.key).toBe(first.key);
    expect(pinned.server.output()).toContain(
      "API key: from PETSTORE_API_KEY, a key an earlier npm start made: the next start without PETSTORE_API_KEY revokes it",
    );
  });

  it("says in one line that its data folder is in use by another npm start, and exits 1", async () => {
    const cwd = tempFolder();
    await start(cwd, await ports());

    const result = await runToEnd(MAIN, [], { cwd, env: { ...CLEAN_LOCAL_SERVER_ENV, ...(await ports()) } });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `npm start: The data folder ${LOCAL_DATA_DIR} is in use by another npm start (or npm run keys); stop it, or start this one with: npm start -- --in-memory`,
    );
  });

  it("says when the other npm start also holds its ports, and suggests free ports with its own data (never the other's DynamoDB port), which start", async () => {
    const cwd = tempFolder();
    // The DynamoDB port right after the API's: a suggestion of "API port + 1" would be the other's DynamoDB.
    const apiPort = await adjacentFreePorts();
    const taken = { PORT: String(apiPort), DYNAMODB_PORT: String(apiPort + 1) };
    await start(cwd, taken);

    const result = await runToEnd(MAIN, [], { cwd, env: { ...CLEAN_LOCAL_SERVER_ENV, ...taken } });
    const suggestion = new RegExp(
      `^npm start: The data folder ${LOCAL_DATA_DIR} is in use by another npm start \\(or npm run keys\\), and so are ports ${apiPort} and ${apiPort + 1}; stop it, or start this one on other ports with its own data: npm start -- (--in-memory --port (\\d+) --dynamodb-port (\\d+))$`,
    ).exec(result.output.trim());
    const [, args = "", suggestedApi, suggestedDynamo] = suggestion ?? [];

    expect(result.code).toBe(1);
    expect(suggestion, result.output).not.toBeNull();
    expect([apiPort, apiPort + 1]).not.toContain(Number(suggestedApi));
    expect([apiPort, apiPort + 1, Number(suggestedApi)]).not.toContain(Number(suggestedDynamo));
    const suggested = await start(cwd, taken, args.split(" "));
    expect(suggested.baseUrl).toBe(`http://127.0.0.1:${suggestedApi}/v1`);
  });

  it.each([["--help"], ["-h"]])("prints every option and setting for %s, and exits 0", async (flag) => {
    const result = await runToEnd(MAIN, [flag], { cwd: tempFolder(), env: CLEAN_LOCAL_SERVER_ENV });

    expect(result.code).toBe(0);
    expect(result.output).toMatch(/^Usage: npm start \[-- OPTIONS\]/);
    for (const name of ["--port N", "--in-memory", "PORT", "DYNAMODB_PORT", "DYNAMODB_ENDPOINT", "PETSTORE_API_KEY"]) {
      expect(result.output).toContain(`  ${name} `);
    }
    expect(result.output).toContain("PETS_TABLE_NAME");
    expect(result.output).toContain("PETSTORE_LOG_FORMAT");
  });

  it("refuses an unknown option in one line that points to --help, and exits 1", async () => {
    const result = await runToEnd(MAIN, ["--verbose"], { cwd: tempFolder(), env: CLEAN_LOCAL_SERVER_ENV });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe("npm start: unknown option --verbose; see: npm start -- --help");
  });

  it("serves on the port --port names", async () => {
    const port = await freePort();

    const { baseUrl } = await start(tempFolder(), { DYNAMODB_PORT: String(await freePort()) }, [
      "--in-memory",
      "--port",
      String(port),
    ]);

    expect(baseUrl).toBe(`http://127.0.0.1:${port}/v1`);
  });

  it("uses the DynamoDB named by DYNAMODB_ENDPOINT instead of starting one", async () => {
    const endpoint = inject("dynamoEndpoint");
    const { server, baseUrl, key } = await start(tempFolder(), {
      PORT: String(await freePort()),
      DYNAMODB_ENDPOINT: endpoint,
      PETS_TABLE_NAME: `endpoint-${Date.now()}`,
    });

    const response = await fetchJson(`${baseUrl}/pets`, { headers: { Authorization: `Bearer ${key}` } });

    expect(response.status).toBe(200);
    expect(server.output()).toContain(`DynamoDB: ${endpoint}`);
  });

  it("says in one line that the port is busy, and exits 1", async () => {
    const blocker = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve));

    try {
      const result = await runToEnd(MAIN, ["--in-memory"], {
        cwd: tempFolder(),
        env: { ...CLEAN_LOCAL_SERVER_ENV, PORT: String(port), DYNAMODB_PORT: String(await freePort()) },
      });

      expect(result.code).toBe(1);
      expect(result.output.trim()).toBe(
        `npm start: Port ${port} is in use; stop what uses it, or choose another with --port or PORT.`,
      );
    } finally {
      blocker.close();
    }
  });

  it("refuses a PETSTORE_API_KEY of another stage in one line", async () => {
    const result = await runToEnd(MAIN, ["--in-memory"], {
      cwd: tempFolder(),
      env: { ...CLEAN_LOCAL_SERVER_ENV, ...(await ports()), PETSTORE_API_KEY: generateApiKey("prod") },
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      "npm start: PETSTORE_API_KEY is a prod key; npm start takes a local one (petstore_local_<43 letters or digits>), or unset it for a new key at each start.",
    );
  });

  it.each([
    ["a trailing newline", "\n", "it ends with a newline"],
    ["a trailing space", " ", "it has a space before or after it"],
  ])("says in one line that PETSTORE_API_KEY has %s, without showing it", async (_, end, problem) => {
    const key = generateApiKey("local");

    const result = await runToEnd(MAIN, ["--in-memory"], {
      cwd: tempFolder(),
      env: { ...CLEAN_LOCAL_SERVER_ENV, ...(await ports()), PETSTORE_API_KEY: `${key}${end}` },
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `npm start: PETSTORE_API_KEY is not valid: ${problem}; set it to the key alone (petstore_local_<43 letters or digits>).`,
    );
  });
});

describe("npm start's log lines", () => {
  it("are readable with PETSTORE_LOG_FORMAT=pretty, even into a pipe: error codes, replays, and a last Stopped line", async () => {
    const { server, baseUrl, key } = await start(tempFolder(), { ...(await ports()), PETSTORE_LOG_FORMAT: "pretty" }, [
      "--in-memory",
    ]);
    const create = {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", "Idempotency-Key": "log-lines" },
      body: '{"name":"Logged","categoryId":2}',
    };

    await fetchJson(`${baseUrl}/pets`);
    await fetchJson(`${baseUrl}/pets`, create);
    await fetchJson(`${baseUrl}/pets`, create);
    server.child.kill("SIGINT");
    const code = await server.exited;

    const output = server.output();
    expect(code).toBe(0);
    expect(output).toMatch(/^GET \/v1\/pets 401 unauthorized [\d.]+ms \S+$/m);
    expect(output).toMatch(/^POST \/v1\/pets 201 [\d.]+ms \S+$/m);
    expect(output).toMatch(/^POST \/v1\/pets 201 replayed [\d.]+ms \S+$/m);
    expect(output).not.toContain('"message":"gateway"');
    expect(output.trimEnd().split("\n").at(-1)).toBe("Stopped.");
  });

  it("end with a JSON stopped line when the output is JSON", async () => {
    const { server } = await start(tempFolder(), await ports(), ["--in-memory"]);

    server.child.kill("SIGTERM");
    await server.exited;

    const lastLines = server
      .output()
      .trimEnd()
      .split("\n")
      .slice(-2)
      .map((line) => JSON.parse(line));
    expect(lastLines).toEqual([
      expect.objectContaining({ level: "INFO", message: "stopping", signal: "SIGTERM" }),
      expect.objectContaining({ level: "INFO", message: "stopped" }),
    ]);
  });
});

describe("npm start on a terminal", () => {
  it("prints one readable line per request instead of JSON", async () => {
    const port = await freePort();
    const command = `${projectRoot}node_modules/.bin/tsx ${projectRoot}${MAIN} --in-memory`;
    // `script` gives the server a pseudo-terminal, as a developer's shell would.
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: tempFolder(),
      detached: true,
      env: { ...process.env, ...CLEAN_LOCAL_SERVER_ENV, PORT: String(port), DYNAMODB_PORT: String(await freePort()) },
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    try {
      await expect.poll(() => /petstore_local_\w+/.exec(output)?.[0], { timeout: 30_000 }).toBeDefined();
      const key = /petstore_local_\w+/.exec(output)?.[0] ?? "";

      await fetchJson(`http://127.0.0.1:${port}/v1/pets?limit=2`, { headers: { Authorization: `Bearer ${key}` } });
      await fetchJson(`http://127.0.0.1:${port}/v1/unknown`);

      await expect
        .poll(() => output, { timeout: 10_000 })
        .toMatch(/^GET \/v1\/unknown 404 not_found [\d.]+ms \S+\r?$/m);
      expect(output).toMatch(/^GET \/v1\/pets\?limit=2 200 [\d.]+ms \S+\r?$/m);
      expect(output).not.toContain('"message":"request"');
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }
  });
});

describe("npm start's DynamoDB", () => {
  it("listens on the port --dynamodb-port names, which the banner shows as its endpoint", async () => {
    const dynamoPort = await freePort();

    const { server } = await start(tempFolder(), { PORT: String(await freePort()) }, [
      "--in-memory",
      "--dynamodb-port",
      String(dynamoPort),
    ]);
    const endpoint = `http://127.0.0.1:${dynamoPort}`;
    const { TableNames } = await localClient(endpoint).send(new ListTablesCommand({}));

    expect(server.output()).toContain(
      `DynamoDB: embedded dynalite, in memory (table ${LOCAL_TABLE_NAME}) at ${endpoint}\n`,
    );
    expect(TableNames).toContain(LOCAL_TABLE_NAME);
  });

  it.each([
    [
      "a port nothing listens on",
      async () => `http://127.0.0.1:${await freePort()}`,
      "cannot reach {} (ECONNREFUSED); start the DynamoDB there, or correct DYNAMODB_ENDPOINT (unset, npm start runs its own).",
    ],
    [
      "an unknown host",
      async () => "http://petstore-dynamodb.invalid:8000",
      "cannot reach {} (ENOTFOUND); start the DynamoDB there, or correct DYNAMODB_ENDPOINT (unset, npm start runs its own).",
    ],
  ])("says in one line what to do when DYNAMODB_ENDPOINT names %s, and exits 1", async (_, endpointOf, message) => {
    const endpoint = await endpointOf();

    const result = await runToEnd(MAIN, ["--in-memory"], {
      cwd: tempFolder(),
      env: { ...CLEAN_LOCAL_SERVER_ENV, PORT: String(await freePort()), DYNAMODB_ENDPOINT: endpoint },
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(`npm start: ${message.replace("{}", endpoint)}`);
  });
});
