/** `npm run keys` as a developer runs it: real processes, real folders, ports the tests pick. */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CreateTableCommand, ListTablesCommand, ScanCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { LOCAL_RUN_DIR } from "../../local/settings";
import { fetchJson } from "../support/api";
import { rawClient, tableName } from "../support/dynamo";
import { freePort, projectRoot, type RunningProcess, runScript, runToEnd } from "../support/processes";

const MAIN = "local/main.ts";
const KEYS = "scripts/keys.ts";
const KEY_LINE = /^petstore_local_[0-9A-Za-z]{43}$/;
const folders: string[] = [];

function tempFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), "petstore-keys-"));
  folders.push(folder);
  return folder;
}

/** The keys command in `cwd`, with nothing of this test process's own DynamoDB settings unless given. */
function keys(args: string[], cwd: string, env: Record<string, string> = {}) {
  return runToEnd(KEYS, args, {
    cwd,
    env: { DYNAMODB_ENDPOINT: "", DYNAMODB_PORT: "", PETS_TABLE_NAME: "", ...env },
  });
}

/** npm start -- --dynamodb-port N: nothing in the environment of `npm run keys` names that port. */
async function startNpmStart(cwd: string, dynamoPort: number) {
  const server = runScript(MAIN, ["--dynamodb-port", String(dynamoPort)], {
    cwd,
    env: {
      PORT: String(await freePort()),
      DYNAMODB_PORT: "",
      DYNAMODB_ENDPOINT: "",
      PETS_TABLE_NAME: "",
      PETSTORE_API_KEY: "",
    },
  });
  const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
  return { server, baseUrl: baseUrl as string };
}

/** An HTTP server that is not DynamoDB, counting the requests it gets. */
async function unrelatedServer(): Promise<{ server: Server; port: number; requests: () => number }> {
  let requests = 0;
  const server = createServer((_request, response) => {
    requests++;
    response.writeHead(404, { "Content-Type": "text/html" }).end("<h1>Not Found</h1>");
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { server, port, requests: () => requests };
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});
afterAll(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

describe("npm run keys and a running npm start", () => {
  let folder: string;
  let dynamoPort: number;
  let running: { server: RunningProcess; baseUrl: string };

  beforeAll(async () => {
    folder = tempFolder();
    dynamoPort = await freePort();
    running = await startNpmStart(folder, dynamoPort);
  });
  afterAll(() => running.server.killGroup("SIGKILL"));

  /** Names of the keys this folder's npm start holds. */
  async function namesInNpmStart(): Promise<string> {
    const listed = await keys(["list"], folder, { DYNAMODB_PORT: String(dynamoPort) });
    expect(listed.code).toBe(0);
    return listed.output;
  }

  it("writes into this folder's npm start found on DYNAMODB_PORT, where the key works at once, without the SDK's Node warning", async () => {
    const created = await keys(["create", "--name", "found by port", "--quiet"], folder, {
      DYNAMODB_PORT: String(dynamoPort),
      // As in a developer's shell, where nothing turns the warning off.
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "",
    });
    const key = created.output.trim();

    expect(created.code).toBe(0);
    expect(created.output).not.toContain("NodeVersionSupportWarning");
    expect(key).toMatch(KEY_LINE);
    const response = await fetchJson(`${running.baseUrl}/pets`, { headers: { Authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
  });

  it.each([
    ["another DYNAMODB_PORT", async () => ({ DYNAMODB_PORT: String(await freePort()) })],
    ["no DYNAMODB_PORT (npm start was given --dynamodb-port)", async () => ({})],
  ])("uses this folder's npm start found by its note, with %s, and says which on stderr", async (_, envOf) => {
    const created = await keys(["create", "--name", "found by its note", "--quiet"], folder, await envOf());
    const [notice, key = ""] = created.output.trim().split("\n");

    expect(created.code).toBe(0);
    expect(notice).toMatch(
      new RegExp(`^keys: using this folder's npm start \\(pid \\d+\\), whose DynamoDB is on port ${dynamoPort}\\.$`),
    );
    expect(key).toMatch(KEY_LINE);
    const response = await fetchJson(`${running.baseUrl}/pets`, { headers: { Authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
  });

  it("leaves another folder's npm start on the port alone, and uses that folder's own data", async () => {
    const otherFolder = tempFolder();

    const result = await keys(["create", "--name", "other folder"], otherFolder, { DYNAMODB_PORT: String(dynamoPort) });
    const listedThere = await keys(["list"], otherFolder);

    expect(result.code).toBe(0);
    expect(result.output).toMatch(/^Created key_\w+ \(other folder\) in the data folder .data\/dynamodb\./);
    expect(listedThere.output).toContain("other folder");
    expect(existsSync(join(otherFolder, ".data/dynamodb"))).toBe(true);
    expect(await namesInNpmStart()).not.toContain("other folder");
  });

  it("refuses a port whose database is not the npm start its note names, even when that process lives", async () => {
    const otherFolder = tempFolder();
    // A note left by an npm start that was killed, whose pid now belongs to another live process.
    mkdirSync(join(otherFolder, LOCAL_RUN_DIR), { recursive: true });
    writeFileSync(
      join(otherFolder, LOCAL_RUN_DIR, `${process.pid}.json`),
      JSON.stringify({
        pid: process.pid,
        port: dynamoPort,
        endpoint: `http://127.0.0.1:${dynamoPort}`,
        tableName: "petstore-local",
        instance: "an npm start long gone",
        dataDir: null,
      }),
    );

    const result = await keys(["create", "--name", "forged note"], otherFolder, { DYNAMODB_PORT: String(dynamoPort) });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `keys: the DynamoDB on port ${dynamoPort} is not this folder's npm start (pid ${process.pid}).`,
    );
    expect(await namesInNpmStart()).not.toContain("forged note");
  });
});

describe("npm run keys without a running npm start", () => {
  it("opens the data folder, whatever listens on DYNAMODB_PORT", async () => {
    const cwd = tempFolder();
    const unrelated = await unrelatedServer();
    servers.push(unrelated.server);

    const created = await keys(["create", "--name", "from the data folder"], cwd, {
      DYNAMODB_PORT: String(unrelated.port),
    });
    const listed = await keys(["list"], cwd, { DYNAMODB_PORT: String(unrelated.port) });

    expect(created.code).toBe(0);
    expect(created.output).toContain("in the data folder .data/dynamodb.");
    expect(listed.output).toContain("from the data folder");
    expect(existsSync(join(cwd, ".data/dynamodb"))).toBe(true);
    expect(unrelated.requests()).toBe(0);
  });
});

describe("npm run keys with DYNAMODB_ENDPOINT", () => {
  const endpoint = () => inject("dynamoEndpoint");

  it("refuses, in one line, an endpoint that is not DynamoDB", async () => {
    const unrelated = await unrelatedServer();
    servers.push(unrelated.server);

    const result = await keys(["create", "--name", "x"], tempFolder(), {
      DYNAMODB_ENDPOINT: `http://127.0.0.1:${unrelated.port}`,
    });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `keys: http://127.0.0.1:${unrelated.port} does not answer as DynamoDB (HTTP 404); check DYNAMODB_ENDPOINT.`,
    );
  });

  it("refuses, in one line, an endpoint nothing listens on", async () => {
    const port = await freePort();

    const result = await keys(["list"], tempFolder(), { DYNAMODB_ENDPOINT: `http://127.0.0.1:${port}` });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `keys: cannot reach http://127.0.0.1:${port} (ECONNREFUSED); start the DynamoDB there, or correct or unset DYNAMODB_ENDPOINT.`,
    );
  });

  it("refuses a database without the project's table, and creates none there", async () => {
    const missing = `never-created-${Date.now()}`;

    const result = await keys(["create", "--name", "x"], tempFolder(), {
      DYNAMODB_ENDPOINT: endpoint(),
      PETS_TABLE_NAME: missing,
    });
    const { TableNames } = await rawClient().send(new ListTablesCommand({}));

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      `keys: ${endpoint()} has no table ${missing}; npm start with the same DYNAMODB_ENDPOINT creates it, or set PETS_TABLE_NAME.`,
    );
    expect(TableNames).not.toContain(missing);
  });

  it("refuses a table of the same name with other keys, and writes nothing in it", async () => {
    const foreign = `foreign-${Date.now()}`;
    const client = rawClient();
    await client.send(
      new CreateTableCommand({
        TableName: foreign,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "id", AttributeType: "N" }],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      }),
    );

    const result = await keys(["create", "--name", "x"], tempFolder(), {
      DYNAMODB_ENDPOINT: endpoint(),
      PETS_TABLE_NAME: foreign,
    });
    const { Count } = await client.send(new ScanCommand({ TableName: foreign }));

    expect(result.code).toBe(1);
    expect(result.output.trim()).toMatch(/^keys: table foreign-\d+ at http:\S+ is not a Pet Store table/);
    expect(Count).toBe(0);
  });

  it("creates a key that works, lists it without the secret under a header, and revokes it", async () => {
    const cwd = tempFolder();
    const env = { DYNAMODB_ENDPOINT: endpoint(), PETS_TABLE_NAME: tableName() };

    const created = await keys(["create", "--name", "ci robot", "--quiet"], cwd, env);
    const key = created.output.trim();
    const listed = await keys(["list"], cwd, env);
    // The columns after SYNTHETIC: scope, expires, replaced by, replaces, last used.
    const keyId = /^(key_\w+) +ci robot +\S+ +- +- +write +- +- +- +never$/m.exec(listed.output)?.[1] ?? "";
    const revoked = await keys(["revoke", keyId], cwd, env);
    const afterRevoke = await keys(["list"], cwd, env);
    const { server, baseUrl } = await startNpmStartOn(cwd, env);
    const response = await fetchJson(`${baseUrl}/pets`, { headers: { Authorization: `Bearer ${key}` } });
    server.killGroup("SIGKILL");

    expect(created.code).toBe(0);
    expect(key).toMatch(KEY_LINE);
    expect(listed.output).not.toContain(key);
    expect(keyId).toMatch(/^key_/);
    expect(revoked.code).toBe(0);
    expect(afterRevoke.output).toMatch(
      new RegExp(`^${keyId} +ci robot +\\S+ +\\d{4}-\\d\\d-\\d\\dT\\S+Z +- +write +- +- +- +never$`, "m"),
    );
    expect(response.status).toBe(401);
  });

  it("lists keys under a header row whose columns are those the help names, in its order", async () => {
    const cwd = tempFolder();
    const env = { DYNAMODB_ENDPOINT: endpoint(), PETS_TABLE_NAME: tableName() };
    await keys(["create", "--name", "column check"], cwd, env);

    const help = await keys(["--help"], cwd);
    const listed = await keys(["list"], cwd, env);
    const helpColumns = /list keys: (.+)$/m.exec(help.output)?.[1]?.split(", ");
    const [header, ...rows] = listed.output.trim().split("\n");
    const row = rows.find((line) => line.includes("column check")) ?? "";
    const cells = row.split(/ {2,}/);

    expect(helpColumns).toEqual([
      "id",
      "name",
      "created",
      "revoked",
      "synthetic",
      "scope",
      "expires",
      "replaced by",
      "replaces",
      "last used",
    ]);
    expect(header?.split(/ {2,}/).map((title) => title.trim().toLowerCase())).toEqual(helpColumns);
    expect(cells[0]).toMatch(/^key_\w+$/);
    expect(cells[1]).toBe("column check");
    expect(cells[2]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect(cells[3]).toBe("-");
    expect(cells[4]).toBe("-");
    expect(cells.slice(5)).toEqual(["write", "-", "-", "-", "never"]);
    // Columns line up under their titles.
    expect(row.indexOf("column check")).toBe(header?.indexOf("NAME"));
  });

  it("creates a synthetic key, says so, and lists it as synthetic", async () => {
    const cwd = tempFolder();
    const env = { DYNAMODB_ENDPOINT: endpoint(), PETS_TABLE_NAME: tableName() };

    const created = await keys(["create", "--name", "deploy smoke", "--synthetic"], cwd, env);
    const listed = await keys(["list"], cwd, env);

    expect(created.code).toBe(0);
    expect(created.output).toMatch(/^Created synthetic key key_\w+ \(deploy smoke\)/);
    expect(listed.output).toMatch(/^key_\w+ +deploy smoke +\S+ +- +yes +write +\S+Z +- +- +never$/m);
    // Marked synthetic in its text (what npm run smoke checks), and it says when it expires: 30 days on.
    expect(created.output).toMatch(/^petstore_local_synthetic_[0-9A-Za-z]{43}$/m);
    const expiry = /It expires at (\S+)\./.exec(created.output)?.[1] ?? "";
    const days = (Date.parse(expiry) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
  });

  it("explains what is missing when create has no name", async () => {
    const result = await keys(["create"], tempFolder(), { DYNAMODB_ENDPOINT: endpoint() });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe("keys: create needs --name NAME (who or what the key is for).");
  });
});

async function startNpmStartOn(cwd: string, env: Record<string, string>) {
  const server = runScript(MAIN, [], {
    cwd,
    env: { PORT: String(await freePort()), PETSTORE_API_KEY: "", ...env },
  });
  const [, baseUrl] = await server.waitFor(/Pet Store API on (\S+)/);
  return { server, baseUrl: baseUrl as string };
}

describe("capturing a key in a script", () => {
  const run = promisify(execFile);
  const npmRunKeys = async (npmFlags: string[]) => {
    const { stdout, stderr } = await run(
      "npm",
      ["run", ...npmFlags, "keys", "--", "create", "--name", "ci", "--quiet"],
      {
        cwd: projectRoot,
        env: {
          ...process.env,
          DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
          PETS_TABLE_NAME: tableName(),
          DYNAMODB_PORT: "",
        },
      },
    );
    return { stdout, stderr };
  };

  it("gets exactly the key from KEY=$(npm run -s keys -- create --name ci --quiet)", async () => {
    const { stdout } = await npmRunKeys(["-s"]);

    expect(stdout).toMatch(/^petstore_local_[0-9A-Za-z]{43}\n$/);
  });

  it("says how to capture only the key when npm's banner goes to the captured output too", async () => {
    const { stdout, stderr } = await npmRunKeys([]);

    expect(stdout).toMatch(/^> petstore-api@\S+ keys$/m);
    expect(stderr).toContain("KEY=$(npm run -s keys -- create --name NAME --quiet)");
    expect(stderr).not.toMatch(/petstore_local_/);
  });
});
