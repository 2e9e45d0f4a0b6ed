/**
 * The client as a user gets it from npm: `npm pack` of the workspace (which builds it), installed
 * from the tarball in an empty project outside this repository, used from plain ESM against the
 * local server, and type-checked as TypeScript under the settings of a fresh `tsc --init`.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalApi } from "../../local/server";
import { issueTestKey, startTestApi } from "../support/api";
import { projectRoot } from "../support/processes";

const run = promisify(execFile);
const tsc = `${projectRoot}node_modules/.bin/tsc`;

let api: LocalApi;
let key: string;
let consumer: string;
let tarball: string;
let packedFiles: string[];

/** Plain JavaScript, as a Node user writes it: creates a pet, pages through the list, reports a typed error. */
const ESM_CONSUMER = `import { createPetStoreClient, PetStoreApiError } from "@petstore/client";

const petStore = createPetStoreClient({ baseUrl: process.env.BASE, apiKey: process.env.KEY, onDeprecation() {} });
const name = "packaged-" + Date.now();
const pet = await petStore.pets.create({ name, categoryId: 1 });
const listed = [];
for await (const each of petStore.pets.listAll({ limit: 1 })) if (each.name === name) listed.push(each);
const error = await petStore.pets.create({ name: "", categoryId: 1 }).catch((caught) => caught);
console.log(JSON.stringify({
  pet,
  listed,
  error: { isApiError: error instanceof PetStoreApiError, code: error.code, status: error.status, requestId: error.requestId },
}));
`;

/** TypeScript against the package's declarations: correct uses compile, wrong ones must not. */
const TS_CONSUMER = `import { createPetStoreClient, PetStoreApiError, type Pet, type PetPage } from "@petstore/client";

export async function use(baseUrl: string, apiKey: string): Promise<string[]> {
  const petStore = createPetStoreClient({ baseUrl, apiKey, retry: { maxAttempts: 5 } });
  const pet: Pet = await petStore.pets.create({ name: "Rex", categoryId: 1 }, { idempotencyKey: "order-1" });
  const page: PetPage = await petStore.pets.list({ status: "available", limit: 20 });
  const names = page.items.map((each) => each.name);
  for await (const each of petStore.pets.listAll()) names.push(each.name);
  try {
    await petStore.pets.get(pet.id);
  } catch (error) {
    if (error instanceof PetStoreApiError && error.code === "not_found") names.push(error.requestId ?? "");
  }
  // @ts-expect-error status is available, pending or sold
  await petStore.pets.create({ name: "Rex", categoryId: 1, status: "lost" });
  // @ts-expect-error categoryId is required
  await petStore.pets.create({ name: "Rex" });
  // @ts-expect-error limit is a number
  await petStore.pets.list({ limit: "20" });
  // @ts-expect-error there is no such error code
  if (error instanceof PetStoreApiError && error.code === "no_such_code") names.push("");
  return names;
}
declare const error: unknown;
`;

/** What the examples of docs/client.md take as given: the reader's own values. */
const DOC_EXAMPLES_CONTEXT = `declare const process: { env: Record<string, string | undefined> };
declare const petStore: import("@petstore/client").PetStoreClient;
declare const newPet: import("@petstore/client").NewPet;
declare const order: { id: number };
declare function queueForLater(job: { newPet: import("@petstore/client").NewPet; idempotencyKey: string }): void;
`;
const docExamples = [...readFileSync(`${projectRoot}docs/client.md`, "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map(
  (match) => match[1] as string,
);

beforeAll(async () => {
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  ({ key } = await issueTestKey("client package"));
  consumer = mkdtempSync(join(tmpdir(), "petstore-client-consumer-"));
  // prepack builds the package (tsc) before packing it.
  await run("npm", ["pack", "--workspace", "@petstore/client", "--pack-destination", consumer], { cwd: projectRoot });
  const packed = readdirSync(consumer).find((file) => file.endsWith(".tgz"));
  if (!packed) throw new Error("npm pack wrote no tarball");
  tarball = join(consumer, packed);
  packedFiles = (await run("tar", ["-tzf", tarball])).stdout.trim().split("\n").sort();
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  await run("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline"], { cwd: consumer });
}, 180_000);
afterAll(async () => {
  rmSync(consumer, { recursive: true, force: true });
  await api.close();
});

describe("the packed client package", () => {
  it("holds the built code, its declarations, package.json and README, and nothing else", () => {
    expect(packedFiles).toContain("package/dist/index.js");
    expect(packedFiles).toContain("package/dist/index.d.ts");
    expect(packedFiles).toContain("package/README.md");
    expect(
      packedFiles.filter((file) => !/^package\/(dist\/[\w.]+\.(js|d\.ts)|package\.json|README\.md)$/.test(file)),
    ).toEqual([]);
  });

  it("installs with openapi-fetch as its one dependency", () => {
    const manifest = JSON.parse(readFileSync(join(consumer, "node_modules/@petstore/client/package.json"), "utf8"));

    expect(Object.keys(manifest.dependencies)).toEqual(["openapi-fetch"]);
    expect(manifest.devDependencies).toBeUndefined();
  });

  it("works from plain ESM in a project outside the repository, against the local server", async () => {
    writeFileSync(join(consumer, "main.js"), ESM_CONSUMER);

    const { stdout } = await run(process.execPath, ["main.js"], {
      cwd: consumer,
      env: { ...process.env, BASE: api.baseUrl, KEY: key },
    });
    const result = JSON.parse(stdout);

    expect(result.pet).toEqual({
      id: expect.any(Number),
      name: expect.any(String),
      categoryId: 1,
      status: "available",
    });
    expect(result.listed).toEqual([result.pet]);
    expect(result.error).toEqual({
      isApiError: true,
      code: "invalid_request",
      status: 400,
      requestId: expect.any(String),
    });
  });

  it("type-checks a TypeScript consumer and the examples of docs/client.md under a fresh `tsc --init` (ESM, nodenext), refusing wrong uses", async () => {
    writeFileSync(join(consumer, "consumer.ts"), TS_CONSUMER);
    writeFileSync(join(consumer, "context.d.ts"), DOC_EXAMPLES_CONTEXT);
    for (const [index, example] of docExamples.entries())
      writeFileSync(join(consumer, `docExample${index}.ts`), example);
    await run(tsc, ["--init"], { cwd: consumer });

    const result = await run(tsc, ["--noEmit", "-p", "."], { cwd: consumer }).then(
      () => "",
      (failure: { stdout: string }) => failure.stdout,
    );

    expect(docExamples.length).toBeGreaterThanOrEqual(3);
    expect(result).toBe("");
  });
});
