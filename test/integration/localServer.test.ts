/** `npm start` and `npm run keys` as a developer runs them: real processes, real files. */
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, inject, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import type { Pet } from "../../lib/contract/schemas";
import { fetchJson } from "../support/api";
import { freePort, projectRoot, type RunningProcess, runScript, runToEnd } from "../support/processes";

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
  const server = runScript(MAIN, args, { cwd, env: { PETSTORE_API_KEY: "", DYNAMODB_ENDPOINT: "", ...env } });
  running.push(server);
  const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
  const [, key] = await server.waitFor(/API key.*: (petstore_local_\w+)/);
  return { server, baseUrl: baseUrl as string, key: key as string };
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

  it("prints a curl command that works when pasted", async () => {
    const { server } = await start(
      tempFolder(),
      { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()) },
      ["--in-memory"],
    );
    const [command] = await server.waitFor(/curl -H 'Authorization: Bearer \S+' '[^']+\/pets\?limit=5'/);

    const { stdout } = await promisify(execFile)("sh", ["-c", `${command} -s -w '\\n%{http_code}'`]);

    expect(stdout.trim().split("\n").at(-1)).toBe("200");
  });

  it("keeps nothing on disk with --in-memory", async () => {
    const cwd = tempFolder();

    const { server } = await start(cwd, { PORT: String(await freePort()), DYNAMODB_PORT: String(await freePort()) }, [
      "--in-memory",
    ]);
    await stop(server);

    expect(existsSync(join(cwd, ".data"))).toBe(false);
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
        env: { PORT: String(port), DYNAMODB_PORT: String(await freePort()), DYNAMODB_ENDPOINT: "" },
      });

      expect(result.code).toBe(1);
      expect(result.output.trim()).toBe(
        `npm start: Port ${port} is in use; stop what uses it or set PORT to another port.`,
      );
    } finally {
      blocker.close();
    }
  });

  it("refuses a PETSTORE_API_KEY that is not a local key", async () => {
    const result = await runToEnd(MAIN, ["--in-memory"], {
      cwd: tempFolder(),
      env: {
        PORT: String(await freePort()),
        DYNAMODB_PORT: String(await freePort()),
        PETSTORE_API_KEY: generateApiKey("prod"),
      },
    });

    expect(result.code).toBe(1);
    expect(result.output).toContain("PETSTORE_API_KEY must look like petstore_local_");
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
      env: {
        ...process.env,
        PORT: String(port),
        DYNAMODB_PORT: String(await freePort()),
        DYNAMODB_ENDPOINT: "",
        PETSTORE_API_KEY: "",
      },
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

      await expect.poll(() => output, { timeout: 10_000 }).toMatch(/^GET \/v1\/unknown 404 [\d.]+ms \S+\r?$/m);
      expect(output).toMatch(/^GET \/v1\/pets\?limit=2 200 [\d.]+ms \S+\r?$/m);
      expect(output).not.toContain('"message":"request"');
    } finally {
      if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
    }
  });
});

describe("npm run keys", () => {
  it("creates a key that works, lists it without the secret, and revokes it", async () => {
    const endpoint = inject("dynamoEndpoint");
    const env = { DYNAMODB_ENDPOINT: endpoint, PETS_TABLE_NAME: `keys-${Date.now()}` };
    const cwd = tempFolder();

    const created = await runToEnd(KEYS, ["create", "--name", "ci robot", "--quiet"], { cwd, env });
    const key = created.output.trim();
    const listed = await runToEnd(KEYS, ["list"], { cwd, env });
    const keyId = /^(key_\w+)\t.*\tactive\tci robot$/m.exec(listed.output)?.[1] ?? "";
    const revoked = await runToEnd(KEYS, ["revoke", keyId], { cwd, env });
    const afterRevoke = await runToEnd(KEYS, ["list"], { cwd, env });
    const { server, baseUrl } = await start(cwd, { ...env, PORT: String(await freePort()), PETSTORE_API_KEY: "" });
    const response = await fetchJson(`${baseUrl}/pets`, { headers: { Authorization: `Bearer ${key}` } });

    expect(created.code).toBe(0);
    expect(key).toMatch(/^petstore_local_[0-9A-Za-z]{43}$/);
    expect(listed.output).not.toContain(key);
    expect(keyId).toMatch(/^key_/);
    expect(revoked.code).toBe(0);
    expect(afterRevoke.output).toMatch(new RegExp(`^${keyId}\\t.*\\trevoked `, "m"));
    expect(response.status).toBe(401);
    await stop(server);
  });

  it("explains what is missing when create has no name", async () => {
    const result = await runToEnd(KEYS, ["create"], {
      cwd: tempFolder(),
      env: { DYNAMODB_ENDPOINT: inject("dynamoEndpoint") },
    });

    expect(result.code).toBe(1);
    expect(result.output).toContain("create needs --name NAME");
  });
});
