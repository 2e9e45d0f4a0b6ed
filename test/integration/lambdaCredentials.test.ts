/**
 * The deployed bundle finds its DynamoDB credentials where Lambda puts them, and only there: its
 * default credential chain is replaced by the environment variables (infra/shims/lambdaCredentials.ts).
 * Run as Lambda runs it: Node 24, outside the project, with only Lambda's environment, against an
 * https endpoint, answering a real request.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lambdaEsbuildOptions } from "../../infra/bundling";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { SHARED_PETS } from "../../lib/pets/collection";
import { DynamoPetRepository } from "../../lib/pets/repository";
import { routes } from "../../lib/routes";
import { toProxyEvent } from "../../local/proxyEvent";
import { projectRoot } from "../../scripts/bench/build";
import { type DelayedDynamo, runCold, stagingMemoryMb, startDelayedDynamo } from "../../scripts/bench/cold";
import { coldEnvironment } from "../../scripts/bench/lambdaEnvironment";
import { ensureNode, NODE_VERSIONS } from "../../scripts/nodeVersions";

const STAGE = "staging";
const pet = { id: 1, name: "Rex", categoryId: 1, status: "available" } as const;

let dynamo: DelayedDynamo;
let dir: string;
let node: string;
let bundleFile: string;
let env: Record<string, string>;
let apiKey: string;

beforeAll(async () => {
  node = await ensureNode(NODE_VERSIONS.lambda);
  // Outside the project, as /var/task is: nothing left out of the bundle can be found.
  dir = await mkdtemp(join(tmpdir(), "petstore-lambda-credentials-"));
  bundleFile = join(dir, "getPet.mjs");
  await build({
    ...lambdaEsbuildOptions,
    entryPoints: [`${projectRoot}${routes.getPet.handlerFile}`],
    outfile: bundleFile,
    absWorkingDir: projectRoot,
    logLevel: "warning",
  });
  // No added latency: this checks where the credentials come from, not how long a call takes.
  dynamo = await startDelayedDynamo(`test-${randomUUID()}`, 0);
  const documents = DynamoDBDocumentClient.from(dynamo.client);
  ({ key: apiKey } = await issueApiKey(new DynamoApiKeyStore(documents, dynamo.tableName), STAGE, "credentials"));
  await new DynamoPetRepository(documents, dynamo.tableName).insert(pet, SHARED_PETS);
  env = coldEnvironment({
    node,
    functionName: `petstore-${STAGE}-getPet`,
    nodeMajor: NODE_VERSIONS.lambda.split(".")[0] as string,
    taskRoot: dir,
    dynamo,
    stage: STAGE,
    memoryMb: await stagingMemoryMb(),
  });
});

afterAll(async () => {
  await dynamo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function getPetRequest() {
  return toProxyEvent({
    method: "GET",
    path: `/pets/${pet.id}`,
    search: new URLSearchParams(),
    headers: { host: "abcdef1234.execute-api.us-east-1.amazonaws.com", authorization: `Bearer ${apiKey}` },
    body: "",
    resource: "/pets/{petId}",
    pathParameters: { petId: String(pet.id) },
    sourceIp: "198.51.100.7",
  });
}

describe("the deployed getPet bundle, run as Lambda runs it", () => {
  it("answers with the credentials Lambda puts in its environment, and signs its calls with them", async () => {
    const answer = await runCold({ node, file: bundleFile, event: getPetRequest(), env, cwd: dir });

    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body ?? "")).toEqual(pet);
    expect(dynamo.accessKeyIdsSeen()).toContain(env.AWS_ACCESS_KEY_ID);
  });

  it("without credentials in its environment, answers the API's error shape and no stack trace", async () => {
    const { AWS_ACCESS_KEY_ID: _id, AWS_SECRET_ACCESS_KEY: _secret, ...withoutCredentials } = env;

    const answer = await runCold({
      node,
      file: bundleFile,
      event: getPetRequest(),
      env: withoutCredentials,
      cwd: dir,
    });

    expect(answer.statusCode).toBeGreaterThanOrEqual(400);
    const body = JSON.parse(answer.body ?? "") as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["code", "message", "status"]);
    expect(body.status).toBe(answer.statusCode);
    expect(answer.body).not.toMatch(/\bat .+:\d+:\d+|\.mjs\b|credential/i);
  });
});
