/** The smoke command against the local server: it passes on a healthy stage and notices a broken one. */
import { createServer as createHttpServer } from "node:http";
import { createConnection, createServer as createTcpServer } from "node:net";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { MAX_BODY_BYTES } from "../../lib/contract/schemas";
import { runSmoke, SmokeRunError } from "../../lib/smoke/checks";
import { issueTestKey, startTestApi } from "../support/api";
import { leaksOf } from "../support/keyLeaks";
import { freePort, projectRoot, runToEnd } from "../support/processes";

const SMOKE = "scripts/smoke.ts";
let api: Awaited<ReturnType<typeof startTestApi>>;
let key: string;

beforeAll(async () => {
  // The server's own request lines and metrics are not what these tests look at: keep the output short.
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  ({ key } = await issueTestKey("smoke"));
});

afterAll(async () => {
  await api.close();
});

/** A plain HTTP server on `port`, for a client that expects TLS there. */
async function plainHttpServer(port: number): Promise<Closable> {
  const server = createHttpServer((_request, response) => response.end("{}"));
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { close: () => server.close() };
}

/** A TCP server on `port` that accepts each connection and closes it without a word. */
async function closingServer(port: number): Promise<Closable> {
  const server = createTcpServer((socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { close: () => server.close() };
}

interface Closable {
  close(): void;
}

/** A stage that answers like the local one, except that `alter` rewrites some answers. */
function alteredFetch(alter: (url: string, response: Response) => Response | undefined): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    return alter(String(input), response) ?? response;
  };
}

describe("npm run smoke", () => {
  it("passes every check against a healthy stage, one line per check and a total", async () => {
    const lines: string[] = [];

    const report = await runSmoke({ baseUrl: api.baseUrl, key, print: (line) => lines.push(line) });

    expect(report.results.filter((result) => !result.passed)).toEqual([]);
    expect(report.results.map((result) => result.name)).toEqual([
      "401 without Authorization, with a Bearer challenge",
      "401 with another scheme",
      "401 with an unknown key, naming an invalid token",
      "create: 201 with Location and the default status",
      "create with status pending",
      "get: the pet, with Deprecation, Sunset and a successor Link",
      "get a missing pet: 404",
      "list with limit=0: 400 naming limit",
      "list filtered by status, following Link rel=next",
      "list all, following Link rel=next",
      "unknown route: 404 in the Error shape, with or without a key",
      "wrong method: 405 naming the allowed ones",
      "unknown route or method with a text/plain body: the JSON Error all the same",
      `body over ${MAX_BODY_BYTES} bytes: 413 payload_too_large`,
    ]);
    expect(lines).toHaveLength(report.results.length + 1);
    expect(lines.slice(0, -1).every((line) => line.startsWith("PASS  "))).toBe(true);
    expect(lines.at(-1)).toMatch(new RegExp(`^${report.results.length} passed, 0 failed`));
  });

  it("adds only pets with names unique to the run", async () => {
    const first = await runSmoke({ baseUrl: api.baseUrl, key, print: () => undefined });
    const second = await runSmoke({ baseUrl: api.baseUrl, key, print: () => undefined });

    const names = [...first.created, ...second.created].map((pet) => pet.name);
    const runIds = (report: typeof first) => new Set(report.created.map((pet) => /^(smoke-\w+)-/.exec(pet.name)?.[1]));
    expect(names.every((name) => /^smoke-[0-9a-f]{8}-\w+$/.test(name))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    expect(runIds(first).size).toBe(1);
    expect([...runIds(first)][0]).not.toBe([...runIds(second)][0]);
  });

  it("fails the get check when the deprecation headers are missing", async () => {
    const withoutDeprecation = alteredFetch((url, response) => {
      if (!/\/pets\/\d+$/.test(url)) return undefined;
      const headers = new Headers(response.headers);
      headers.delete("deprecation");
      return new Response(response.body, { status: response.status, headers });
    });

    const report = await runSmoke({ baseUrl: api.baseUrl, key, fetch: withoutDeprecation, print: () => undefined });

    expect(report.failed).toBe(1);
    expect(report.results.filter((result) => !result.passed)).toEqual([
      {
        name: "get: the pet, with Deprecation, Sunset and a successor Link",
        passed: false,
        detail: "Deprecation is null",
      },
    ]);
  });

  it("fails a check when an answer lacks a common header", async () => {
    const withoutRequestId = alteredFetch((url, response) => {
      if (!url.endsWith("/pets?limit=0")) return undefined;
      const headers = new Headers(response.headers);
      headers.delete("x-request-id");
      return new Response(response.body, { status: response.status, headers });
    });

    const report = await runSmoke({ baseUrl: api.baseUrl, key, fetch: withoutRequestId, print: () => undefined });

    expect(report.results.filter((result) => !result.passed).map((result) => result.detail)).toEqual([
      "GET /v1/pets?limit=0: no X-Request-Id",
    ]);
  });

  it("fails the text/plain check when the gateway cannot answer an unknown media type in JSON", async () => {
    // What a mock integration that passes unknown media types through answers: a gateway 500.
    const failingMocks: typeof fetch = async (input, init) =>
      new Headers(init?.headers).get("content-type") === "text/plain"
        ? new Response('{"message": "Internal server error"}', {
            status: 500,
            headers: {
              "Content-Type": "application/json",
              "X-Request-Id": "r",
              "Cache-Control": "no-store",
              "X-Content-Type-Options": "nosniff",
            },
          })
        : fetch(input, init);

    const report = await runSmoke({ baseUrl: api.baseUrl, key, fetch: failingMocks, print: () => undefined });

    expect(report.results.filter((result) => !result.passed).map((result) => result.name)).toEqual([
      "unknown route or method with a text/plain body: the JSON Error all the same",
    ]);
  });

  it("accepts an over-size answer from an edge firewall, which carries no X-Request-Id, and fails a stage that takes the body", async () => {
    const isOversize = (init?: RequestInit) => typeof init?.body === "string" && init.body.length > MAX_BODY_BYTES;
    const fromTheEdge: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (!isOversize(init)) return response;
      const headers = new Headers(response.headers);
      headers.delete("x-request-id");
      return new Response(response.body, { status: response.status, headers });
    };
    const takesAnything: typeof fetch = async (input, init) =>
      fetch(input, isOversize(init) ? { ...init, body: JSON.stringify({ name: "smoke-x-big", categoryId: 1 }) } : init);
    const oversizeCheck = `body over ${MAX_BODY_BYTES} bytes: 413 payload_too_large`;

    const behindTheEdge = await runSmoke({ baseUrl: api.baseUrl, key, fetch: fromTheEdge, print: () => undefined });
    const unprotected = await runSmoke({ baseUrl: api.baseUrl, key, fetch: takesAnything, print: () => undefined });

    expect(behindTheEdge.failed).toBe(0);
    expect(unprotected.results.filter((result) => !result.passed)).toEqual([
      expect.objectContaining({ name: oversizeCheck, detail: expect.stringMatching(/expected 413, got 201/) }),
    ]);
  });

  it("says when it stopped following links before the end of a listing", async () => {
    const report = await runSmoke({ baseUrl: api.baseUrl, key, maxPages: 2, print: () => undefined });

    const listing = report.results.find((result) => result.name === "list all, following Link rel=next");
    expect(listing).toEqual(
      expect.objectContaining({ passed: true, detail: "2 pages; stopped after 2 pages, before the end" }),
    );
  });

  it("stops with one SmokeRunError, before any check line, when nothing listens", async () => {
    const lines: string[] = [];
    const closedPort = await freePort();

    const run = runSmoke({ baseUrl: `http://127.0.0.1:${closedPort}/v1`, key, print: (line) => lines.push(line) });

    await expect(run).rejects.toThrow(SmokeRunError);
    await expect(run).rejects.toThrow(`cannot reach http://127.0.0.1:${closedPort}/v1: connection refused`);
    expect(lines).toEqual([]);
  });

  it.each([
    [
      "speaks plain HTTP to https://",
      "https",
      (port: number) => plainHttpServer(port),
      "TLS handshake failed (is it an http:// server?)",
    ],
    [
      "closes every connection at once",
      "http",
      (port: number) => closingServer(port),
      "connection closed by the server",
    ],
  ])("names the real cause when the server %s", async (_, scheme, serve, reason) => {
    const port = await freePort();
    const server = await serve(port);
    try {
      await expect(
        runSmoke({ baseUrl: `${scheme}://127.0.0.1:${port}/v1`, key, print: () => undefined }),
      ).rejects.toThrow(`cannot reach ${scheme}://127.0.0.1:${port}/v1: ${reason}`);
    } finally {
      server.close();
    }
  });

  it("stops, after the lines of the checks that ran, when the stage goes away during the run", async () => {
    const lines: string[] = [];
    let calls = 0;
    const goesAway: typeof fetch = async (input, init) => {
      calls++;
      if (calls <= 4) return fetch(input, init);
      throw new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }),
      });
    };

    await expect(
      runSmoke({ baseUrl: api.baseUrl, key, fetch: goesAway, print: (line) => lines.push(line) }),
    ).rejects.toThrow(`cannot reach ${api.baseUrl}: connection refused`);
    // One request for each of the first four checks; the fifth check's request fails.
    expect(calls).toBe(5);
    expect(lines).toHaveLength(4);
    expect(lines.every((line) => line.startsWith("PASS  "))).toBe(true);
  });

  it("refuses a base URL without /v1 before sending anything", async () => {
    await expect(runSmoke({ baseUrl: api.baseUrl.replace(/\/v1$/, ""), key, print: () => undefined })).rejects.toThrow(
      new SmokeRunError(`the base URL must end in /v1, e.g. ${api.baseUrl}`),
    );
  });
});

describe("npm run smoke as a command", () => {
  /** The command with only the environment a test gives it (no PETSTORE_API_KEY of this process). */
  const smoke = (args: string[], env: Record<string, string> = {}) =>
    runToEnd(SMOKE, args, { cwd: projectRoot, env: { PETSTORE_API_KEY: "", ...env } });

  it("exits 0 when every check passes and 1 when one fails, taking the key from PETSTORE_API_KEY and never printing it", async () => {
    const passing = await smoke(["--base-url", api.baseUrl], { PETSTORE_API_KEY: key });
    const unknownKey = generateApiKey("local");
    const failing = await smoke(["--base-url", api.baseUrl], { PETSTORE_API_KEY: unknownKey });

    expect(passing.code).toBe(0);
    expect(passing.output.trim().split("\n").at(-1)).toMatch(/^\d+ passed, 0 failed/);
    expect(failing.code).toBe(1);
    expect(failing.output).toMatch(/^FAIL {2}create: 201 with Location and the default status — /m);
    expect(leaksOf(passing.output, [key])).toEqual([]);
    expect(leaksOf(failing.output, [unknownKey])).toEqual([]);
  });

  it("takes --key too, and does not print it either", async () => {
    const result = await smoke(["--base-url", api.baseUrl, "--key", key]);

    expect(result.code).toBe(0);
    expect(leaksOf(result.output, [key])).toEqual([]);
  });

  it("says in one line that it cannot reach a server that is not there, and exits 1", async () => {
    const closedPort = await freePort();

    const result = await smoke(["--base-url", `http://127.0.0.1:${closedPort}/v1`], { PETSTORE_API_KEY: key });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(`smoke: cannot reach http://127.0.0.1:${closedPort}/v1: connection refused`);
  });

  it("says in one line that the base URL must end in /v1, and exits 1 without running a check", async () => {
    const origin = api.baseUrl.replace(/\/v1$/, "");

    const result = await smoke(["--base-url", origin], { PETSTORE_API_KEY: key });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(`smoke: the base URL must end in /v1, e.g. ${origin}/v1`);
  });

  it("asks for PETSTORE_API_KEY when there is no key, and exits 1", async () => {
    const result = await smoke(["--base-url", api.baseUrl]);

    expect(result.code).toBe(1);
    expect(result.output).toMatch(/^smoke: an API key is required: set PETSTORE_API_KEY\.\nUsage: /);
  });

  it("names a slip in PETSTORE_API_KEY without showing the key, and exits 1", async () => {
    const result = await smoke(["--base-url", api.baseUrl], { PETSTORE_API_KEY: `${key}\n` });

    expect(result.code).toBe(1);
    expect(result.output.trim()).toBe(
      "smoke: PETSTORE_API_KEY is not a valid key: it ends with a newline; set it to the key alone.",
    );
  });

  /** This machine's first address that is not loopback: a base URL there is not `npm start`'s. */
  const outsideAddress = Object.values(networkInterfaces())
    .flat()
    .find((address) => address?.family === "IPv4" && !address.internal)?.address;

  /** Forwards connections on `outsideAddress` to the local API, counting them. */
  async function forwarderToApi(): Promise<{ baseUrl: string; connections: () => number } & Closable> {
    let connections = 0;
    const target = new URL(api.baseUrl);
    const server = createTcpServer((socket) => {
      connections++;
      const upstream = createConnection(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on("error", () => upstream.destroy());
      upstream.on("error", () => socket.destroy());
    });
    const port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, outsideAddress, resolve));
    return {
      baseUrl: `http://${outsideAddress}:${port}/v1`,
      connections: () => connections,
      close: () => server.close(),
    };
  }

  it.runIf(outsideAddress)(
    "refuses an ordinary key against a base URL off this machine's loopback in one line naming the fix, with no request made",
    async () => {
      const stage = await forwarderToApi();
      try {
        const result = await smoke(["--base-url", stage.baseUrl], { PETSTORE_API_KEY: key });

        expect(result.code).toBe(1);
        expect(result.output.trim()).toBe(
          `smoke: PETSTORE_API_KEY is an ordinary key, and its pets would stay in every client's listing: against a deployed stage use a synthetic key (npm run keys -- create --synthetic --name NAME), or pass --allow-ordinary-key "<reason>".`,
        );
        expect(stage.connections()).toBe(0);
      } finally {
        stage.close();
      }
    },
  );

  it.runIf(outsideAddress)(
    "runs there with a synthetic key, and with an ordinary one given a reason, which it echoes",
    async () => {
      const stage = await forwarderToApi();
      const { key: syntheticKey } = await issueTestKey("smoke synthetic", { synthetic: true });
      try {
        const synthetic = await smoke(["--base-url", stage.baseUrl], { PETSTORE_API_KEY: syntheticKey });
        const allowed = await smoke(["--base-url", stage.baseUrl, "--allow-ordinary-key", "reproducing issue 36"], {
          PETSTORE_API_KEY: key,
        });

        expect(synthetic.code).toBe(0);
        expect(allowed.code).toBe(0);
        expect(allowed.output.split("\n")[0]).toBe(
          "smoke: running with an ordinary key (--allow-ordinary-key: reproducing issue 36); its pets stay in every client's listing.",
        );
        expect(stage.connections()).toBeGreaterThan(0);
        expect(leaksOf(synthetic.output + allowed.output, [key, syntheticKey])).toEqual([]);
      } finally {
        stage.close();
      }
    },
  );

  it("prints its usage for --help, and exits 0", async () => {
    const result = await smoke(["--help"]);

    expect(result.code).toBe(0);
    expect(result.output).toMatch(/^Usage: PETSTORE_API_KEY=KEY npm run smoke -- --base-url URL\n/);
  });
});
