/**
 * The bundles measured must also work: each function bundle, copied outside the project so that
 * nothing left external can be found, answers one real request against an in-memory dynalite.
 * A lazily imported module that a request did need would fail here, not in Lambda.
 */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { ensureTable, startEmbeddedDynamo } from "../../local/dynamo";
import { toProxyEvent } from "../../local/proxyEvent";
import type { Bundle } from "./build";
import { runJsonChild } from "./jsonChild";

const invoker = fileURLToPath(new URL("./invokeBundle.mjs", import.meta.url));
const TABLE = "petstore-bench-smoke";

export interface SmokeResult {
  readonly answers: Record<string, { statusCode: number; body: string }>;
  readonly failures: number;
}

/** One request per function, in an order where each finds what it needs (create before get). */
const requests: Record<string, { method: string; path: string; resource: string; body: string }> = {
  createPet: {
    method: "POST",
    path: "/pets",
    resource: "/pets",
    body: JSON.stringify({ name: "Rex", categoryId: 1 }),
  },
  getPet: { method: "GET", path: "/pets/1", resource: "/pets/{petId}", body: "" },
  listPets: { method: "GET", path: "/pets", resource: "/pets", body: "" },
};

/** `node`: the binary that runs the bundles (this process's by default). */
export async function smokeTestBundles(bundles: readonly Bundle[], node = process.execPath): Promise<SmokeResult> {
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-smoke-"));
  try {
    const client = new DynamoDBClient({
      region: "us-east-1",
      endpoint: dynamo.endpoint,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    await ensureTable(client, TABLE);
    const { key } = await issueApiKey(
      new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), TABLE),
      "local",
      "smoke",
    );
    const answers: SmokeResult["answers"] = {};
    let failures = 0;
    for (const [name, request] of Object.entries(requests)) {
      const bundle = bundles.find((candidate) => candidate.name === name);
      if (!bundle) throw new Error(`no bundle for ${name}`);
      const file = join(dir, basename(bundle.file));
      await copyFile(bundle.file, file);
      const event = toProxyEvent({
        method: request.method,
        path: request.path,
        search: new URLSearchParams(),
        headers: {
          authorization: `Bearer ${key}`,
          ...(request.body ? { "content-type": "application/json" } : {}),
        },
        body: request.body,
        resource: request.resource,
        pathParameters: request.resource.includes("{petId}") ? { petId: request.path.split("/").at(-1) ?? "" } : null,
        sourceIp: "127.0.0.1",
      });
      // spawnSync would block this event loop, and with it the dynalite the child talks to.
      const answer = await invoke(node, file, JSON.stringify(event), dir, dynamo.endpoint);
      answers[name] = answer;
      if (answer.statusCode < 200 || answer.statusCode >= 300) failures += 1;
    }
    return { answers, failures };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await dynamo.close();
  }
}

async function invoke(
  node: string,
  file: string,
  event: string,
  cwd: string,
  endpoint: string,
): Promise<{ statusCode: number; body: string }> {
  return runJsonChild(
    node,
    [invoker, file, event],
    {
      cwd,
      env: {
        PATH: process.env.PATH ?? "",
        PETS_TABLE_NAME: TABLE,
        PETSTORE_STAGE: "local",
        AWS_REGION: "us-east-1",
        DYNAMODB_ENDPOINT: endpoint,
        LOG_LEVEL: "ERROR",
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
      },
    },
    `${basename(file)} failed`,
  );
}
