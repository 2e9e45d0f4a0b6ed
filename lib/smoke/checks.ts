/**
 * The smoke checks: a black-box pass over a running stage (deployed or `npm start`) with nothing
 * but HTTP and a key of that stage. One source for the `npm run smoke` command (scripts/smoke.ts)
 * and the deployed synthetic check that runs them every few minutes (lib/synthetic/check.ts).
 * They only add pets, each named `smoke-<random>-…`; run with a synthetic key (lib/pets/collection.ts),
 * as the synthetic check and the pipeline do, no other key ever sees them and they expire by
 * themselves, so the checks are safe to run against a shared stage, production included.
 */
import { randomBytes } from "node:crypto";
import { MAX_BODY_BYTES } from "../contract/schemas";
import { API_BASE_PATH, routes } from "../routes";

export interface SmokeOptions {
  /** The stage's base URL, ending in /v1. */
  readonly baseUrl: string;
  readonly key: string;
  readonly fetch?: typeof fetch;
  readonly print?: (line: string) => void;
  /** Most pages a listing is followed for before the check stops short of its end. */
  readonly maxPages?: number;
  readonly now?: () => Date;
}

export interface CheckResult {
  readonly name: string;
  readonly passed: boolean;
  readonly detail: string;
}

export interface SmokeReport {
  readonly results: readonly CheckResult[];
  readonly passed: number;
  readonly failed: number;
  /** The pets this run added (named `smoke-<run id>-…`). */
  readonly created: readonly Pet[];
}

export interface Pet {
  readonly id: number;
  readonly name: string;
  readonly categoryId: number;
  readonly status?: string;
}

interface Answer {
  readonly label: string;
  readonly status: number;
  readonly headers: Headers;
  readonly json: unknown;
}

class CheckFailed extends Error {}

/** Pages of this size prove that a page holds exactly `limit` pets and that links keep it. */
const SMALL_LIMIT = 1;
const SMALL_PAGES = 3;
/** Then the walk goes on with big pages, to reach the end of a large stage in few requests. */
const LARGE_LIMIT = 100;
const REQUEST_TIMEOUT_MS = 15_000;
/** A valid id no stage will reach. */
const MISSING_PET_ID = Number.MAX_SAFE_INTEGER;

/**
 * Why a run could not start or go on, in one line for a person: a base URL that is not a stage's,
 * or a stage that cannot be reached at all (then no check could say more than the first).
 */
export class SmokeRunError extends Error {
  override readonly name = "SmokeRunError";
}

/** What is wrong with `baseUrl` as a stage's base URL, in one line; undefined when nothing is. */
export function baseUrlProblem(baseUrl: string): string | undefined {
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol))
    return `the base URL must be an http(s) URL ending in ${API_BASE_PATH}, e.g. http://127.0.0.1:3000${API_BASE_PATH}`;
  const url = new URL(baseUrl);
  if (url.search || url.hash) return `the base URL must end in ${API_BASE_PATH}, with no query or fragment`;
  const path = url.pathname.replace(/\/+$/, "");
  if (path.endsWith(API_BASE_PATH)) return undefined;
  // The most likely meant: the URL cut after /v1 (".../v1/pets"), another version replaced, or /v1 added.
  const cut = path.indexOf(`${API_BASE_PATH}/`);
  const stem = cut >= 0 ? path.slice(0, cut) : path.replace(/\/v\d+$/, "");
  const suggested = `${url.origin}${stem}${API_BASE_PATH}`;
  return `the base URL must end in ${API_BASE_PATH}, e.g. ${suggested}`;
}

/** Node's fetch (undici) names what failed in the error's cause; a person wants it in words. */
const unreachableReasons: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "no such host (DNS lookup failed)",
  EAI_AGAIN: "DNS lookup failed (temporary failure; try again)",
  ECONNRESET: "connection reset",
  EPIPE: "connection closed by the server",
  UND_ERR_SOCKET: "connection closed by the server",
  ETIMEDOUT: "connection timed out",
  UND_ERR_CONNECT_TIMEOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ERR_SSL_WRONG_VERSION_NUMBER: "TLS handshake failed (is it an http:// server?)",
};

/**
 * Why `fetch` got no answer at all, or undefined when `error` is something else (then it is an
 * ordinary check failure). Network failures reach us as a TypeError "fetch failed" whose cause has
 * a code (several, for a host with several addresses); a request that took too long as the
 * TimeoutError of its AbortSignal.timeout.
 */
export function unreachableReason(error: unknown): string | undefined {
  if ((error as Error)?.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  if (!(error instanceof TypeError) || error.cause === undefined) return undefined;
  const cause = error.cause as { code?: unknown; message?: unknown; errors?: readonly { code?: unknown }[] };
  const code = String(cause.code ?? cause.errors?.[0]?.code ?? "");
  const known = unreachableReasons[code];
  if (known) return known;
  if (/^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code)) return `TLS failed (${code})`;
  const firstLine = String(cause.message ?? "")
    .split("\n")[0]
    ?.trim();
  return code || firstLine || "the request failed";
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

const nextLinkOf = (headers: Headers): string | undefined =>
  /<([^>]+)>\s*;\s*rel="?next"?/.exec(headers.get("link") ?? "")?.[1];

function isPet(value: unknown): value is Pet {
  const pet = value as Pet;
  return typeof pet === "object" && pet !== null && Number.isSafeInteger(pet.id) && typeof pet.name === "string";
}

function checkErrorShape(answer: Answer, status: number, code: string): void {
  check(answer.status === status, `${answer.label}: expected ${status}, got ${answer.status}`);
  const body = answer.json as Record<string, unknown> | undefined;
  check(
    body !== null &&
      typeof body === "object" &&
      Object.keys(body).sort().join() === "code,message,status" &&
      typeof body.message === "string",
    `${answer.label}: body is not {code,message,status}: ${JSON.stringify(body)}`,
  );
  check(
    body.code === code && body.status === status,
    `${answer.label}: expected ${code}/${status} in ${JSON.stringify(body)}`,
  );
}

/**
 * Runs every check, printing one line each and a total. Throws a SmokeRunError, with nothing more
 * run, for a base URL that is not a stage's or a stage that cannot be reached.
 */
export async function runSmoke(options: SmokeOptions): Promise<SmokeReport> {
  const wrongBaseUrl = baseUrlProblem(options.baseUrl);
  if (wrongBaseUrl) throw new SmokeRunError(wrongBaseUrl);
  const fetchImpl = options.fetch ?? fetch;
  const print = options.print ?? console.log;
  const maxPages = options.maxPages ?? 200;
  const now = options.now ?? (() => new Date());
  const base = options.baseUrl.replace(/\/+$/, "");
  const basePath = new URL(base).pathname;
  const runId = `smoke-${randomBytes(4).toString("hex")}`;
  const results: CheckResult[] = [];
  const created: Pet[] = [];

  /** Every answer, errors included, must carry the common headers. */
  async function call(
    method: string,
    target: string,
    init: {
      auth?: string | null;
      /** A JSON value, sent as application/json. */
      body?: unknown;
      /** A body sent as given, with its own media type. */
      raw?: { readonly text: string; readonly contentType: string };
      /**
       * The edge firewall of a stage that has one (AWS WAF) answers some requests itself, with fixed
       * texts: everything but a per-request X-Request-Id, which nothing can put in them.
       */
      mayComeFromTheEdge?: boolean;
    } = {},
  ): Promise<Answer> {
    // A path below the base URL, or an absolute URL (a followed link).
    const url = /^https?:/.test(target) ? target : `${base}${target}`;
    const headers: Record<string, string> = {};
    const auth = init.auth === undefined ? `Bearer ${options.key}` : init.auth;
    if (auth !== null) headers.Authorization = auth;
    if (init.body !== undefined) headers["Content-Type"] = "application/json";
    if (init.raw !== undefined) headers["Content-Type"] = init.raw.contentType;
    const body =
      init.raw !== undefined ? init.raw.text : init.body === undefined ? undefined : JSON.stringify(init.body);
    const label = `${method} ${new URL(url).pathname}${new URL(url).search}`;
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const reason = unreachableReason(error);
      if (reason === undefined) throw error;
      throw new SmokeRunError(`cannot reach ${base}: ${reason}`, { cause: error });
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      throw new CheckFailed(`${label}: body is not JSON: ${text.slice(0, 80)}`);
    }
    const answer: Answer = { label, status: response.status, headers: response.headers, json };
    check(init.mayComeFromTheEdge || answer.headers.get("x-request-id"), `${label}: no X-Request-Id`);
    check(/\bno-store\b/.test(answer.headers.get("cache-control") ?? ""), `${label}: Cache-Control is not no-store`);
    check(
      answer.headers.get("x-content-type-options") === "nosniff",
      `${label}: X-Content-Type-Options is not nosniff`,
    );
    check(
      /^application\/json\b/.test(answer.headers.get("content-type") ?? ""),
      `${label}: Content-Type is ${answer.headers.get("content-type")}`,
    );
    return answer;
  }

  async function run(name: string, body: () => Promise<string>): Promise<void> {
    let result: CheckResult;
    try {
      result = { name, passed: true, detail: await body() };
    } catch (error) {
      if (error instanceof SmokeRunError) throw error;
      const detail =
        error instanceof CheckFailed ? error.message : `${(error as Error).name}: ${(error as Error).message}`;
      result = { name, passed: false, detail };
    }
    results.push(result);
    print(`${result.passed ? "PASS" : "FAIL"}  ${result.name}${result.detail ? ` — ${result.detail}` : ""}`);
  }

  async function create(suffix: string, status?: string): Promise<Pet> {
    const request = { name: `${runId}-${suffix}`, categoryId: 1, ...(status ? { status } : {}) };
    const answer = await call("POST", "/pets", { body: request });
    check(answer.status === 201, `${answer.label}: expected 201, got ${answer.status} ${JSON.stringify(answer.json)}`);
    check(isPet(answer.json), `${answer.label}: body is not a Pet: ${JSON.stringify(answer.json)}`);
    const pet = answer.json;
    check(
      pet.name === request.name && pet.categoryId === 1 && pet.status === (status ?? "available"),
      `${answer.label}: answered ${JSON.stringify(pet)} for ${JSON.stringify(request)}`,
    );
    check(
      answer.headers.get("location") === `${basePath}/pets/${pet.id}`,
      `${answer.label}: Location is ${answer.headers.get("location")}, expected ${basePath}/pets/${pet.id}`,
    );
    created.push(pet);
    return pet;
  }

  /** Follows rel="next" from the first page; checks page sizes, order and what the links keep. */
  async function walk(status: string | undefined): Promise<{ pets: Pet[]; pages: number; complete: boolean }> {
    const query = new URLSearchParams({ limit: String(SMALL_LIMIT), ...(status ? { status } : {}) });
    let next: string | undefined = `${base}/pets?${query}`;
    const pets: Pet[] = [];
    let pages = 0;
    while (next !== undefined && pages < maxPages) {
      const limit = Number(new URL(next).searchParams.get("limit"));
      const answer = await call("GET", next);
      pages++;
      check(answer.status === 200, `${answer.label}: expected 200, got ${answer.status}`);
      check(Array.isArray(answer.json) && answer.json.every(isPet), `${answer.label}: body is not an array of Pets`);
      const page = answer.json as Pet[];
      const link = nextLinkOf(answer.headers);
      // Links are relative to the host (`</v1/pets?…>`).
      next = link === undefined ? undefined : new URL(link, base).href;
      if (next !== undefined) {
        check(page.length === limit, `${answer.label}: ${page.length} pets on a page of ${limit} with a next link`);
        const parameters = new URL(next).searchParams;
        check(parameters.get("cursor"), `${answer.label}: next link has no cursor`);
        check(
          parameters.get("limit") === String(limit),
          `${answer.label}: next link changed limit to ${parameters.get("limit")}`,
        );
        check(
          parameters.get("status") === (status ?? null),
          `${answer.label}: next link has status ${parameters.get("status")}`,
        );
        if (pages >= SMALL_PAGES) {
          const bigger = new URL(next);
          bigger.searchParams.set("limit", String(LARGE_LIMIT));
          next = bigger.href;
        }
      } else {
        check(page.length <= limit, `${answer.label}: ${page.length} pets on a page of ${limit}`);
      }
      for (const pet of page) {
        const previous = pets.at(-1);
        check(!previous || pet.id > previous.id, `${answer.label}: id ${pet.id} after ${previous?.id} (not ascending)`);
        check(!status || pet.status === status, `${answer.label}: pet ${pet.id} has status ${pet.status}`);
        pets.push(pet);
      }
    }
    return { pets, pages, complete: next === undefined };
  }

  function expectListed(listing: { pets: Pet[]; complete: boolean }, expected: Pet[]): string {
    if (!listing.complete) return `stopped after ${maxPages} pages, before the end`;
    const ids = new Set(listing.pets.map((pet) => pet.id));
    const missing = expected.filter((pet) => !ids.has(pet.id));
    check(missing.length === 0, `created pets not listed: ${missing.map((pet) => pet.id).join(", ")}`);
    return `all ${expected.length} created pets listed`;
  }

  await run("401 without Authorization, with a Bearer challenge", async () => {
    const answer = await call("GET", "/pets", { auth: null });
    checkErrorShape(answer, 401, "unauthorized");
    const challenge = answer.headers.get("www-authenticate") ?? "";
    check(/^Bearer realm="pets"/.test(challenge), `WWW-Authenticate is "${challenge}"`);
    check(!challenge.includes("invalid_token"), `WWW-Authenticate names an invalid token that was not sent`);
    return "";
  });

  await run("401 with another scheme", async () => {
    const answer = await call("GET", "/pets", { auth: `Basic ${Buffer.from("smoke:test").toString("base64")}` });
    checkErrorShape(answer, 401, "unauthorized");
    check(/^Bearer\b/.test(answer.headers.get("www-authenticate") ?? ""), "no Bearer WWW-Authenticate");
    return "";
  });

  await run("401 with an unknown key, naming an invalid token", async () => {
    // Same prefix and length as the real key, so it is looked up rather than rejected by shape.
    const unknown = options.key.replace(/[0-9A-Za-z]+$/, (secret) => "0".repeat(secret.length));
    const answer = await call("GET", "/pets", { auth: `Bearer ${unknown}` });
    checkErrorShape(answer, 401, "unauthorized");
    const challenge = answer.headers.get("www-authenticate") ?? "";
    check(challenge.includes('error="invalid_token"'), `WWW-Authenticate is "${challenge}"`);
    return "";
  });

  await run("create: 201 with Location and the default status", async () => {
    const pet = await create("a");
    return `id ${pet.id}, ${pet.name}`;
  });

  await run("create with status pending", async () => {
    const pets = [await create("b", "pending"), await create("c", "pending")];
    return `ids ${pets.map((pet) => pet.id).join(", ")}`;
  });

  await run("get: the pet, with Deprecation, Sunset and a successor Link", async () => {
    const pet = created[0];
    check(pet, "no pet was created (see the create check)");
    const deprecation = routes.getPet.deprecation;
    const answer = await call("GET", `/pets/${pet.id}`);
    const sunsetPassed = now() >= deprecation.sunsetAt;
    if (sunsetPassed) checkErrorShape(answer, 410, "gone");
    else {
      check(answer.status === 200, `${answer.label}: expected 200, got ${answer.status}`);
      check(
        JSON.stringify(answer.json) === JSON.stringify(pet),
        `${answer.label}: answered ${JSON.stringify(answer.json)}`,
      );
    }
    const expected = {
      deprecation: `@${Math.floor(deprecation.deprecatedAt.getTime() / 1000)}`,
      sunset: deprecation.sunsetAt.toUTCString(),
    };
    check(
      answer.headers.get("deprecation") === expected.deprecation,
      `Deprecation is ${answer.headers.get("deprecation")}`,
    );
    check(answer.headers.get("sunset") === expected.sunset, `Sunset is ${answer.headers.get("sunset")}`);
    const link = answer.headers.get("link") ?? "";
    check(link.includes(`<${basePath}/pets>; rel="successor-version"`), `Link is "${link}"`);
    return sunsetPassed ? "410 after the sunset" : "";
  });

  await run("get a missing pet: 404", async () => {
    const answer = await call("GET", `/pets/${MISSING_PET_ID}`);
    if (now() >= routes.getPet.deprecation.sunsetAt) checkErrorShape(answer, 410, "gone");
    else checkErrorShape(answer, 404, "not_found");
    return "";
  });

  await run("list with limit=0: 400 naming limit", async () => {
    const answer = await call("GET", "/pets?limit=0");
    checkErrorShape(answer, 400, "invalid_request");
    const message = (answer.json as { message: string }).message;
    check(message.startsWith("limit"), `message does not start with the parameter: "${message}"`);
    return "";
  });

  await run("list filtered by status, following Link rel=next", async () => {
    const pending = created.filter((pet) => pet.status === "pending");
    check(pending.length > 0, "no pending pet was created (see the create checks)");
    // The status index is eventually consistent: a new pet normally appears within a second.
    const allListed = (pets: Pet[]) => pending.every((pet) => pets.some((listed) => listed.id === pet.id));
    let listing = await walk("pending");
    for (let attempt = 1; attempt < 5 && listing.complete && !allListed(listing.pets); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      listing = await walk("pending");
    }
    return `${listing.pages} pages; ${expectListed(listing, pending)}`;
  });

  await run("list all, following Link rel=next", async () => {
    check(created.length > 0, "no pet was created (see the create checks)");
    const listing = await walk(undefined);
    return `${listing.pages} pages; ${expectListed(listing, created)}`;
  });

  await run("unknown route: 404 in the Error shape, with or without a key", async () => {
    checkErrorShape(await call("GET", `/${runId}-no-such-route`), 404, "not_found");
    checkErrorShape(await call("GET", `/${runId}-no-such-route`, { auth: null }), 404, "not_found");
    return "";
  });

  await run("wrong method: 405 naming the allowed ones", async () => {
    const answer = await call("DELETE", "/pets");
    checkErrorShape(answer, 405, "method_not_allowed");
    const allow = answer.headers.get("allow") ?? "";
    check(/\bGET\b/.test(allow) && /\bPOST\b/.test(allow), `Allow is "${allow}"`);
    return "";
  });

  await run("unknown route or method with a text/plain body: the JSON Error all the same", async () => {
    const text = { text: "smoke test", contentType: "text/plain" };
    checkErrorShape(await call("POST", `/${runId}-no-such-route`, { raw: text }), 404, "not_found");
    const wrongMethod = await call("PUT", "/pets", { raw: text });
    checkErrorShape(wrongMethod, 405, "method_not_allowed");
    check(/\bGET\b/.test(wrongMethod.headers.get("allow") ?? ""), `Allow is "${wrongMethod.headers.get("allow")}"`);
    return "";
  });

  await run(`body over ${MAX_BODY_BYTES} bytes: 413 payload_too_large`, async () => {
    // A valid create padded with white space: were the limit not enforced, it would add one more
    // smoke pet and fail here, rather than leave anything else behind.
    const request = JSON.stringify({ name: `${runId}-oversize`, categoryId: 1 });
    const padded = `${request.slice(0, -1)}${" ".repeat(MAX_BODY_BYTES + 1 - request.length)}}`;
    const answer = await call("POST", "/pets", {
      raw: { text: padded, contentType: "application/json" },
      mayComeFromTheEdge: true,
    });
    checkErrorShape(answer, 413, "payload_too_large");
    return "";
  });

  const failed = results.filter((result) => !result.passed).length;
  print(
    `${results.length - failed} passed, ${failed} failed (pets created: ${created.map((pet) => pet.id).join(", ") || "none"})`,
  );
  return { results, passed: results.length - failed, failed, created };
}
