/**
 * The OpenAPI document drives a mock of the API, as docs/api.md ("A mock of the API") tells a user
 * to run one: Prism, at the exact version the page pins, installed from the npm registry in a new
 * project, run on Node 24 (what that version requires) over the document, and driven with the
 * project's own client at the base URL the page gives (no `/v1`). The mock must let a client page
 * (a real next-page Link), retry (a numeric Retry-After) and report errors (the examples' bodies).
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPetStoreClient,
  type DeprecationNotice,
  PetStoreApiError,
  type PetStoreClientOptions,
} from "../../client/src/index";
import {
  errorExamples,
  locationExample,
  newPetExample,
  nextPageLinkExample,
  petExample,
  petsExample,
  requestIdExample,
} from "../../lib/contract/examples";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { routes } from "../../lib/routes";
import { ensureNode, NODE_VERSIONS } from "../../scripts/nodeVersions";
import { freePort } from "../support/processes";
import { newRegistryProject, type RegistryProject } from "../support/registryProject";

/** The Prism the page pins: `npx @stoplight/prism-cli@<version> mock …`. */
const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const mockSection = guide.slice(guide.indexOf("## A mock of the API"));
const prismCommand = /^npx (@stoplight\/prism-cli@(\d+\.\d+\.\d+)) mock (\S+)/m.exec(mockSection);
/** The base URL the page gives for the mock, e.g. `http://127.0.0.1:4010`. */
const documentedBase = /base URL is `(http:\/\/127\.0\.0\.1:(\d+))`/.exec(mockSection);
if (!prismCommand || !documentedBase) throw new Error("docs/api.md has no Prism command or mock base URL");
const [, prismSpec] = prismCommand;

/** The body of the (one) example of an operation's error answer. */
function exampleBody(operationId: keyof typeof routes, status: 400 | 401 | 404 | 503) {
  // Prism answers an operation's first example.
  const [example] = Object.values(errorExamples(operationId, status));
  if (!example) throw new Error(`${operationId} ${status} has no example`);
  return example.value;
}

let project: RegistryProject;
let prism: ChildProcessWithoutNullStreams;
let output = "";
/** The mock's base URL: the documented one, on a free port. */
let baseUrl: string;

function waitForOutput(pattern: RegExp, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = () => {
      if (pattern.test(output)) return resolve();
      if (prism.exitCode !== null) return reject(new Error(`prism exited ${prism.exitCode}:\n${output}`));
      if (Date.now() - started > timeoutMs) return reject(new Error(`prism did not start:\n${output}`));
      setTimeout(check, 50);
    };
    check();
  });
}

beforeAll(async () => {
  project = await newRegistryProject("petstore-prism");
  await project.install([prismSpec as string]);
  const documentFile = join(project.dir, "openapi.json");
  writeFileSync(documentFile, JSON.stringify(buildOpenApiDocument()));
  const port = await freePort();
  // Prism 5.16 declares Node >= 24.18 (its package.json engines): run it on the project's Node 24.
  const node = await ensureNode(NODE_VERSIONS.lambda);
  prism = spawn(
    node,
    [
      join(project.dir, "node_modules", ".bin", "prism"),
      "mock",
      documentFile,
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
    ],
    {
      cwd: project.dir,
      // Its own process group, so that afterAll ends it and anything it started.
      detached: true,
      env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH}` },
    },
  );
  prism.stdout.on("data", (chunk) => {
    output += chunk;
  });
  prism.stderr.on("data", (chunk) => {
    output += chunk;
  });
  await waitForOutput(/Prism is listening on/);
  baseUrl = documentedBase[1]?.replace(documentedBase[2] as string, String(port)) as string;
}, 180_000);

afterAll(async () => {
  if (prism?.pid !== undefined && prism.exitCode === null) {
    const exited = new Promise((resolve) => prism.once("exit", resolve));
    try {
      process.kill(-prism.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
    await exited;
  }
  project?.remove();
});

/** The project's client pointed at the mock; `prefer` picks Prism's answer for the attempt numbered (from 1). */
function mockClient(
  prefer: (attempt: number) => string | undefined = () => undefined,
  options: Partial<PetStoreClientOptions> = {},
) {
  const attempts: { at: number; prefer: string | undefined }[] = [];
  const notices: DeprecationNotice[] = [];
  const client = createPetStoreClient({
    baseUrl,
    // Prism only checks that a bearer token is there.
    apiKey: "any-key",
    fetch: (request) => {
      const preference = prefer(attempts.length + 1);
      attempts.push({ at: Date.now(), prefer: preference });
      // https://docs.stoplight.io/docs/prism/beeb2d4d3e8ec-request-response-preferences
      if (preference !== undefined) request.headers.set("Prefer", preference);
      return fetch(request);
    },
    onDeprecation: (notice) => notices.push(notice),
    ...options,
  });
  return { client, attempts, notices };
}

describe(`the OpenAPI document in Prism's mock (${prismSpec})`, () => {
  it("lists the example page, whose Link gives the next page's query, which the mock also answers", async () => {
    const { client } = mockClient();

    const page = await client.pets.list({ limit: petsExample.length });
    const target = new URL(/<([^>]+)>/.exec(nextPageLinkExample)?.[1] as string, baseUrl).searchParams;

    expect(page.items).toEqual(petsExample);
    expect(page.next).toEqual({ limit: Number(target.get("limit")), cursor: target.get("cursor") });
    expect((await client.pets.list(page.next ?? {})).items).toEqual(petsExample);
  });

  it("answers a 503 with a Retry-After in seconds, which the client waits before its retry", async () => {
    const { client, attempts } = mockClient((attempt) => (attempt === 1 ? "code=503" : undefined), {
      retry: { baseDelayMs: 0 },
    });

    const page = await client.pets.list();

    expect(page.items).toEqual(petsExample);
    expect(attempts.map((attempt) => attempt.prefer)).toEqual(["code=503", undefined]);
    // Retry-After: 1, and no backoff of its own (baseDelayMs 0): the wait is the mock's second.
    expect((attempts[1]?.at ?? 0) - (attempts[0]?.at ?? 0)).toBeGreaterThanOrEqual(1000);
  });

  it("reports a 503 that lasts with the example's code, its Retry-After and X-Request-Id", async () => {
    const { client } = mockClient(() => "code=503", { retry: { maxAttempts: 1 } });

    const failure = await client.pets.list().catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(PetStoreApiError);
    expect(failure).toMatchObject({
      ...exampleBody("listPets", 503),
      retryAfterMs: 1000,
      requestId: requestIdExample,
      attempts: 1,
    });
  });

  it("reports a 400 and a 404 as PetStoreApiError with the examples' code and message", async () => {
    const listing = mockClient(() => "code=400");
    const getting = mockClient(() => "code=404");

    const invalid = await listing.client.pets.list().catch((error: unknown) => error);
    const missing = await getting.client.pets.get(petExample.id).catch((error: unknown) => error);

    expect(invalid).toBeInstanceOf(PetStoreApiError);
    expect(invalid).toMatchObject({ ...exampleBody("listPets", 400), attempts: 1 });
    expect(missing).toBeInstanceOf(PetStoreApiError);
    expect(missing).toMatchObject({ ...exampleBody("getPet", 404), attempts: 1 });
  });

  it("creates the example pet, and marks the deprecated operation with its own Deprecation: true", async () => {
    const { client, notices } = mockClient();

    const created = await client.pets.create(newPetExample);
    await client.pets.get(petExample.id);

    expect(created).toEqual(petExample);
    // Prism sets `deprecation: true` on every answer of a deprecated operation, over the document's
    // example (https://github.com/stoplightio/prism/blob/master/packages/http/src/mocker/index.ts).
    expect(notices).toEqual([
      expect.objectContaining({
        operation: routes.getPet.operationId,
        deprecation: "true",
        sunset: routes.getPet.deprecation.sunsetAt.toUTCString(),
        successor: routes.getPet.deprecation.successor,
      }),
    ]);
  });

  it("answers as the page says: any token, the optional headers too, CORS, and its own 401 and 404", async () => {
    const create = await fetch(`${baseUrl}/pets`, {
      method: "POST",
      headers: { Authorization: "Bearer any", "Content-Type": "application/json" },
      body: JSON.stringify(newPetExample),
    });
    const anonymous = await fetch(`${baseUrl}/pets`);
    const undocumented = await fetch(`${baseUrl}/pets`, {
      headers: { Authorization: "Bearer any", Prefer: "code=404" },
    });

    expect(create.status).toBe(201);
    expect(create.headers.get("location")).toBe(locationExample);
    expect(create.headers.get("idempotent-replayed")).toBe("true");
    expect(create.headers.get("access-control-allow-origin")).toBe("*");
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual(exampleBody("listPets", 401));
    expect(undocumented.status).toBe(404);
    expect(undocumented.headers.get("content-type")).toBe("application/problem+json");
  });

  it("serves the paths without the servers' /v1: the real API's base URL is a 404 there", async () => {
    const response = await fetch(`${baseUrl}/v1/pets`, { headers: { Authorization: "Bearer any-key" } });

    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ title: "Route not resolved, no path matched" });
  });
});
