/** The smoke command against the local server: it passes on a healthy stage and notices a broken one. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { runSmoke } from "../../scripts/smoke";
import { issueTestKey, startTestApi } from "../support/api";
import { projectRoot, runToEnd } from "../support/processes";

const SMOKE = "scripts/smoke.ts";
let api: Awaited<ReturnType<typeof startTestApi>>;
let key: string;

beforeAll(async () => {
  api = await startTestApi();
  ({ key } = await issueTestKey("smoke"));
});

afterAll(async () => {
  await api.close();
});

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

  it("says when it stopped following links before the end of a listing", async () => {
    const report = await runSmoke({ baseUrl: api.baseUrl, key, maxPages: 2, print: () => undefined });

    const listing = report.results.find((result) => result.name === "list all, following Link rel=next");
    expect(listing).toEqual(
      expect.objectContaining({ passed: true, detail: "2 pages; stopped after 2 pages, before the end" }),
    );
  });

  it("runs as a command: exit 0 when every check passes, 1 when one fails", async () => {
    const passing = await runToEnd(SMOKE, ["--base-url", api.baseUrl, "--key", key], { cwd: projectRoot });
    const failing = await runToEnd(SMOKE, ["--base-url", api.baseUrl, "--key", generateApiKey("local")], {
      cwd: projectRoot,
    });

    expect(passing.code).toBe(0);
    expect(passing.output.trim().split("\n").at(-1)).toMatch(/^\d+ passed, 0 failed/);
    expect(failing.code).toBe(1);
    expect(failing.output).toMatch(/^FAIL {2}create: 201 with Location and the default status — /m);
  });

  it("explains its arguments when one is missing", async () => {
    const result = await runToEnd(SMOKE, ["--base-url", api.baseUrl], { cwd: projectRoot });

    expect(result.code).toBe(1);
    expect(result.output).toContain("smoke: --base-url and --key are required.");
  });
});
