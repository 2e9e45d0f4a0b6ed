/**
 * The client as a user gets it from npm: `npm pack` of the workspace (which builds it), installed
 * from the tarball in a new project outside this repository set up exactly as docs/client.md's
 * Install section says (its commands run one by one, its pinned TypeScript and @types/node from the
 * npm registry), used from plain ESM and CommonJS against the local server, and type-checked as
 * TypeScript, the guide's examples included, under that project's fresh `tsc --init`.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalApi } from "../../local/server";
import { issueTestKey, startTestApi } from "../support/api";
import { projectRoot } from "../support/processes";
import { newRegistryProject, type RegistryProject } from "../support/registryProject";

const run = promisify(execFile);

let api: LocalApi;
let key: string;
let consumer: RegistryProject;
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
const TS_CONSUMER = `import {
  createPetStoreClient,
  type CreatedPet,
  type Pet,
  type PetPage,
  PetStoreAbortError,
  PetStoreApiError,
  PetStoreNetworkError,
} from "@petstore/client";

export async function use(baseUrl: string, apiKey: string): Promise<string[]> {
  const petStore = createPetStoreClient({ baseUrl, apiKey, retry: { maxAttempts: 5 } });
  const pet: Pet = await petStore.pets.create({ name: "Rex", categoryId: 1 }, { idempotencyKey: "order-1" });
  const created: CreatedPet = await petStore.pets.createWithResponse({ name: "Tom", categoryId: 2 });
  const replayed: boolean = created.response.replayed;
  const key: string = created.response.idempotencyKey;
  const page: PetPage = await petStore.pets.list({ status: "available", limit: 20 });
  const names = page.items.map((each) => each.name);
  names.push(page.response.requestId ?? "", created.response.location ?? "", key, String(replayed));
  // @ts-expect-error a page's answer has no Location
  names.push(page.response.location);
  try {
    await petStore.pets.create(pet);
  } catch (failure) {
    if (failure instanceof PetStoreNetworkError || failure instanceof PetStoreAbortError)
      names.push(failure.idempotencyKey ?? "", String(failure.attempts));
  }
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

/** The same from CommonJS: `require()` of the ES module, which docs/client.md says works on every supported Node.js. */
const CJS_CONSUMER = `const { createPetStoreClient, PetStoreApiError, PetStoreAbortError } = require("@petstore/client");
console.log(JSON.stringify([typeof createPetStoreClient, typeof PetStoreApiError, typeof PetStoreAbortError]));
`;

/** What the examples of docs/client.md take as given: the reader's own values, and nothing the setup provides. */
const DOC_EXAMPLES_CONTEXT = `declare const petStore: import("@petstore/client").PetStoreClient;
declare const newPet: import("@petstore/client").NewPet;
declare const order: { id: number };
declare function queueForLater(job: { newPet: import("@petstore/client").NewPet; idempotencyKey: string }): void;
`;
const guide = readFileSync(`${projectRoot}docs/client.md`, "utf8");
const docExamples = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] as string);

/**
 * The commands of the guide's TypeScript project setup (the shell block that runs `tsc --init`, which
 * the generated-types recipe shares), comments removed, then its Install section's `npm install`.
 */
function setupCommands(): string[][] {
  const blocks = [...guide.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
  const block = blocks.find((text) => /\btsc --init\b/.test(text));
  if (!block) throw new Error("docs/client.md has no shell block with `tsc --init`");
  if (!blocks.some((text) => /^npm install @petstore\/client\b/m.test(text)))
    throw new Error("docs/client.md has no shell block with `npm install @petstore/client`");
  return [
    ...block
      .split("\n")
      .map((line) => line.replace(/#.*$/, "").trim())
      .filter((line) => line !== "")
      .map((line) => line.split(/\s+/)),
    ["npm", "install", "@petstore/client"],
  ];
}

/**
 * Runs one command of the guide's setup in the consumer project. `npm init -y` was done when the
 * project was made; `npm install @petstore/client` installs the tarball (the package is not on the
 * registry); `npm install` of anything else goes through the project's install, from the registry.
 */
async function runSetupCommand([command, ...args]: string[]): Promise<void> {
  const line = [command, ...args].join(" ");
  if (line === "npm init -y") return;
  if (line === "npm install @petstore/client") return consumer.install([tarball]);
  if (command === "npm" && args[0] === "install") {
    const dev = args.includes("--save-dev");
    return consumer.install(
      args.slice(1).filter((arg) => arg !== "--save-dev"),
      { dev },
    );
  }
  await consumer.run(command ?? "", args);
}

beforeAll(async () => {
  process.env.PETSTORE_LOG_FORMAT = "pretty";
  api = await startTestApi();
  ({ key } = await issueTestKey("client package"));
  consumer = await newRegistryProject("petstore-client-consumer");
  // prepack builds the package (tsc) before packing it.
  await run("npm", ["pack", "--workspace", "@petstore/client", "--pack-destination", consumer.dir], {
    cwd: projectRoot,
  });
  const packed = readdirSync(consumer.dir).find((file) => file.endsWith(".tgz"));
  if (!packed) throw new Error("npm pack wrote no tarball");
  tarball = join(consumer.dir, packed);
  packedFiles = (await run("tar", ["-tzf", tarball])).stdout.trim().split("\n").sort();
  for (const command of setupCommands()) await runSetupCommand(command);
}, 300_000);
afterAll(async () => {
  consumer?.remove();
  await api?.close();
});

describe("the packed client package", () => {
  it("holds the built code, its declarations, package.json, README and CHANGELOG, and nothing else", () => {
    expect(packedFiles).toContain("package/dist/index.js");
    expect(packedFiles).toContain("package/dist/index.d.ts");
    expect(packedFiles).toContain("package/README.md");
    expect(packedFiles).toContain("package/CHANGELOG.md");
    expect(
      packedFiles.filter(
        (file) => !/^package\/(dist\/[\w.]+\.(js|d\.ts)|package\.json|README\.md|CHANGELOG\.md)$/.test(file),
      ),
    ).toEqual([]);
  });

  it("installs with openapi-fetch as its one dependency", () => {
    const manifest = JSON.parse(readFileSync(join(consumer.dir, "node_modules/@petstore/client/package.json"), "utf8"));

    expect(Object.keys(manifest.dependencies)).toEqual(["openapi-fetch"]);
    expect(manifest.devDependencies).toBeUndefined();
  });

  it("works from plain ESM in a project outside the repository, against the local server", async () => {
    writeFileSync(join(consumer.dir, "main.js"), ESM_CONSUMER);

    const { stdout } = await consumer.run(process.execPath, ["main.js"], {
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

  it("loads with require() from CommonJS", async () => {
    writeFileSync(join(consumer.dir, "main.cjs"), CJS_CONSUMER);

    const { stdout } = await consumer.run(process.execPath, ["main.cjs"]);

    expect(JSON.parse(stdout)).toEqual(["function", "function", "function"]);
  });

  it("type-checks a TypeScript consumer and the examples of docs/client.md in the project the guide sets up, refusing wrong uses", async () => {
    writeFileSync(join(consumer.dir, "consumer.ts"), TS_CONSUMER);
    writeFileSync(join(consumer.dir, "context.d.ts"), DOC_EXAMPLES_CONTEXT);
    for (const [index, example] of docExamples.entries())
      writeFileSync(join(consumer.dir, `docExample${index}.ts`), example);

    // As the guide says to check: `npx tsc --noEmit`, the project's own pinned TypeScript.
    const result = await consumer.run("npx", ["tsc", "--noEmit"]).then(
      () => "",
      (failure: Error) => failure.message,
    );

    expect(docExamples.length).toBeGreaterThanOrEqual(4);
    expect(result).toBe("");
  });
});
