/**
 * What each function's AWS callers send it, and what must come back: CloudFormation's custom resource events (Create,
 * Update to a new generation, Delete) answered at a local response URL; the whole API contract over HTTP through the
 * local REST API; the scheduler's event for the synthetic check, which then calls that same API. Every answer is
 * checked.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  CloudFormationCustomResourceCreateSchema,
  CloudFormationCustomResourceDeleteSchema,
  CloudFormationCustomResourceUpdateSchema,
} from "@aws-lambda-powertools/parser/schemas/cloudformation-custom-resource";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { hasApiKeyShape, issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import type { StageName } from "../../lib/config";
import { resourcesOf } from "./assembly";
import type { AwsStandIn } from "./awsStandIn";
import type { StageFunction, StageRehearsal } from "./stage";

const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

const filesUnder = (path: string): string[] =>
  statSync(path).isDirectory() ? readdirSync(path).flatMap((name) => filesUnder(join(path, name))) : [path];

export interface ScenarioCheck {
  readonly caller: string;
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** The scenario step(s) whose answer the check looks at (`POST /v1/pets`), to join a denied call to what its client saw. */
  readonly steps?: readonly string[];
}

/** An AWS call a scenario step must make: without it the step did not exercise what it claims to. */
export interface ExpectedCall {
  readonly step: string;
  readonly caller: string;
  readonly action: string;
}

interface HttpAnswer {
  status: number;
  headers: Headers;
  json: unknown;
  step: string;
}

/** CloudFormation's custom resource events, checked against AWS's published schema (Powertools parser), not our own builder. */
const customResourceSchemas = {
  Create: CloudFormationCustomResourceCreateSchema,
  Update: CloudFormationCustomResourceUpdateSchema,
  Delete: CloudFormationCustomResourceDeleteSchema,
} as const;

export async function runScenario(
  stage: StageRehearsal,
  standIn: AwsStandIn,
): Promise<{ checks: ScenarioCheck[]; expectedCalls: ExpectedCall[] }> {
  const checks: ScenarioCheck[] = [];
  const expectedCalls: ExpectedCall[] = [];
  const check = (caller: string, name: string, ok: boolean, detail = "", steps?: string[]) =>
    checks.push({ caller, name, ok, detail, ...(steps ? { steps } : {}) });
  const begin = (step: string) => {
    standIn.step = step;
    return step;
  };
  const { template } = stage.stack;
  const stageName = (stage.functions
    .map((fn) => fn.spec.environment.PETSTORE_STAGE)
    .find((value) => value !== undefined) ?? "staging") as StageName;

  // The artifact must stand alone: no path of the machine that built it, and never the test-only IAM evaluator
  // (AGPL-3.0), which must not ship.
  for (const fn of stage.functions) {
    const text = filesUnder(fn.spec.assetDir)
      .map((file) => readFileSync(file, "utf8"))
      .join("\n");
    check(
      fn.spec.label,
      "its bundle names no path of the source tree",
      !text.includes(PROJECT_ROOT),
      `the bundle contains ${PROJECT_ROOT}`,
    );
    check(
      fn.spec.label,
      "its bundle holds no test-only package",
      !text.includes("@cloud-copilot"),
      "the bundle contains @cloud-copilot (AGPL-3.0, test-only)",
    );
  }

  for (const { fn, error } of await stage.initErrors()) {
    check(fn.spec.label, "starts (init)", false, `${error.errorType}: ${error.errorMessage}`);
  }

  // The custom resources served by a project function, with the secret their properties name.
  const customResources = Object.entries(template.Resources)
    .filter(
      ([, resource]) => resource.Type.startsWith("Custom::") || resource.Type === "AWS::CloudFormation::CustomResource",
    )
    .map(([logicalId, resource]) => {
      const properties = stage.resolver.resolve(resource.Properties ?? {}) as Record<string, unknown>;
      const target = stage.functionOfArn(String(properties.ServiceToken));
      return { logicalId, type: resource.Type, properties, target };
    })
    .filter((entry): entry is typeof entry & { target: StageFunction } => {
      // Nothing rehearsed is optional: a service token that names no function of the stage fails.
      if (entry.target === undefined) {
        check(
          `custom resource ${entry.logicalId}`,
          "its ServiceToken names a function of the stage",
          false,
          `${String(entry.properties.ServiceToken)} is no function, alias or version of the stage`,
        );
      }
      return entry.target !== undefined;
    });

  const physicalIds = new Map<string, string>();
  const customResourceEvent = async (
    resource: (typeof customResources)[number],
    requestType: "Create" | "Update" | "Delete",
    properties: Record<string, unknown>,
    oldProperties?: Record<string, unknown>,
  ) => {
    const step = begin(`CloudFormation ${requestType} of ${resource.logicalId}`);
    const requestId = randomUUID();
    const responseUrl = standIn.responseUrl();
    const event = {
      RequestType: requestType,
      ServiceToken: properties.ServiceToken,
      ResponseURL: responseUrl,
      StackId: stage.resolver.ref("AWS::StackId"),
      RequestId: requestId,
      LogicalResourceId: resource.logicalId,
      ResourceType: resource.type,
      ResourceProperties: properties,
      ...(oldProperties ? { OldResourceProperties: oldProperties } : {}),
      ...(requestType === "Create" ? {} : { PhysicalResourceId: physicalIds.get(resource.logicalId) }),
    };
    const shape = customResourceSchemas[requestType].safeParse(event);
    check(
      resource.target.spec.label,
      `CloudFormation's ${requestType} event for ${resource.logicalId} has the shape AWS publishes`,
      shape.success,
      shape.success ? "" : JSON.stringify(shape.error.issues).slice(0, 400),
      [step],
    );
    const outcome = await stage.invoke(resource.target, event, String(properties.ServiceToken));
    const path = new URL(responseUrl).pathname;
    const answered = standIn.answers.find((candidate) => candidate.path === path);
    const answer = answered?.refused ? undefined : answered?.body;
    const ok =
      answer?.Status === "SUCCESS" && answer.RequestId === requestId && typeof answer.PhysicalResourceId === "string";
    if (ok) physicalIds.set(resource.logicalId, String(answer.PhysicalResourceId));
    check(
      resource.target.spec.label,
      `CloudFormation ${requestType} of ${resource.logicalId} answers SUCCESS at the response URL`,
      ok,
      answered?.refused
        ? `the pre-signed response URL refused ${answered.refused}`
        : answer
          ? `${answer.Status}${answer.Reason ? `: ${answer.Reason}` : ""}`
          : `no answer (${JSON.stringify(outcome?.error ?? null)})`,
      [step],
    );
  };

  const secretOf = (resource: (typeof customResources)[number]) =>
    Object.values(resource.properties).find(
      (value) => typeof value === "string" && value.startsWith("arn:aws:secretsmanager:"),
    ) as string | undefined;

  let key: string | undefined;
  for (const resource of customResources) {
    await customResourceEvent(resource, "Create", resource.properties);
    const secret = secretOf(resource);
    for (const action of secret ? ["secretsmanager:PutSecretValue", "dynamodb:PutItem"] : [])
      expectedCalls.push({
        step: `CloudFormation Create of ${resource.logicalId}`,
        caller: resource.target.logicalId,
        action,
      });
    const text = secret ? standIn.secretText(secret) : undefined;
    if (text && hasApiKeyShape(text, stageName)) key = text;
    if (secret) check(resource.target.spec.label, "Create leaves a key of the stage in the secret", key !== undefined);
  }

  const api = stage.api;
  if (api && key) {
    // The custom resource's key is synthetic (lib/pets/collection.ts): its pets live apart from clients'. A client's
    // key, made as an operator makes one (`npm run keys`, straight into the table, not a function's call), drives the
    // clients' part of the table through the same contract.
    const keyTable = customResources.map((resource) => resource.properties.TableName).find(Boolean);
    const steps = await apiScenario(
      api.baseUrl,
      key,
      stageName,
      (name, ok, detail, step) => check(`API ${stageName}`, name, ok, detail, [step]),
      begin,
    );
    expectedCalls.push(...apiExpectedCalls(stage, steps));
    const clientKey =
      typeof keyTable === "string" ? await issueClientKey(standIn, stage.stack.region, keyTable, stageName) : undefined;
    check(`API ${stageName}`, "a client's key can be issued into the stage's table", clientKey !== undefined);
    if (clientKey)
      await apiScenario(
        api.baseUrl,
        clientKey,
        stageName,
        (name, ok, detail, step) => check(`API ${stageName}, a client's key`, name, ok, detail, [step]),
        begin,
      );
  } else if (api) {
    // Nothing rehearsed is optional: without a key the whole contract would be skipped unseen.
    check(
      `API ${stageName}`,
      "the API contract runs with the key the custom resource provisioned",
      false,
      customResources.length
        ? "no custom resource left a key of the stage in its secret, so no API method could be driven"
        : "the stage has no custom resource serving it a key, so no API method could be driven",
    );
  }

  // The scheduler's invocation of each scheduled project function, with the target's input.
  for (const [scheduleId, schedule] of resourcesOf(template, "AWS::Scheduler::Schedule")) {
    const target = stage.resolver.resolve(schedule.Properties?.Target ?? {}) as { Arn?: string; Input?: string };
    const fn = stage.functionOfArn(String(target.Arn));
    if (!fn) {
      check(
        `schedule ${scheduleId}`,
        "its target is a function of the stage",
        false,
        `${String(target.Arn)} is no function, alias or version of the stage`,
      );
      continue;
    }
    const step = begin(`the scheduler's run of ${scheduleId}`);
    expectedCalls.push({ step, caller: fn.logicalId, action: "secretsmanager:GetSecretValue" });
    const refused = await stage.authorizeInvocation?.({
      service: "scheduler.amazonaws.com",
      invokedArn: String(target.Arn),
      roleArn: String(
        stage.resolver.resolve((schedule.Properties?.Target as { RoleArn?: unknown } | undefined)?.RoleArn),
      ),
    });
    // A schedule whose invocation is refused never runs its target (it retries, then gives up).
    if (refused) fn.refusedInvocations += 1;
    const outcome = refused
      ? { error: { errorType: "AccessDeniedException", errorMessage: refused } }
      : await stage.invoke(fn, target.Input ? JSON.parse(target.Input) : {}, String(target.Arn));
    const result = (outcome.error ? undefined : outcome.result) as
      | { passed?: boolean; checks?: number; failedChecks?: number }
      | undefined;
    check(
      fn.spec.label,
      "the scheduled run passes against the local API",
      result?.passed === true && (result.checks ?? 0) > 0,
      outcome.error
        ? `${outcome.error.errorType}: ${outcome.error.errorMessage}`
        : `${JSON.stringify(result)}\n${fn.running?.logTail() ?? ""}`,
      [step],
    );
  }

  // A new generation of each key: the earlier key stops working, the new one works; Delete revokes it.
  for (const resource of customResources) {
    const generation = Number(resource.properties.Generation ?? 0) + 1;
    const next = { ...resource.properties, Generation: String(generation) };
    await customResourceEvent(resource, "Update", next, resource.properties);
    const secret = secretOf(resource);
    const newKey = secret ? standIn.secretText(secret) : undefined;
    if (api && key && newKey) {
      // A container keeps a verified key for a while (lib/auth/verifier.ts); new ones see the revocation.
      await stage.coldStart();
      const rotationStep = "GET /v1/pets?limit=1 after a key rotation";
      const status = async (bearer: string) => {
        begin(rotationStep);
        return (await fetch(`${api.baseUrl}/pets?limit=1`, { headers: { authorization: `Bearer ${bearer}` } })).status;
      };
      const [oldStatus, newStatus] = [await status(key), await status(newKey)];
      check(
        `API ${stageName}`,
        "after the Update the new key answers 200, the revoked one 401",
        oldStatus === 401 && newStatus === 200 && newKey !== key,
        `old ${oldStatus}, new ${newStatus}`,
        [rotationStep],
      );
      await customResourceEvent(resource, "Delete", next);
      await stage.coldStart();
      const afterDelete = await status(newKey);
      check(`API ${stageName}`, "after the Delete the key answers 401", afterDelete === 401, `got ${afterDelete}`, [
        rotationStep,
      ]);
    } else {
      await customResourceEvent(resource, "Delete", next);
    }
  }
  standIn.step = undefined;
  return { checks, expectedCalls };
}

/** The DynamoDB call each successful API step must make, by the function behind the operation. */
function apiExpectedCalls(
  stage: StageRehearsal,
  steps: { step: string; method: string; status: number }[],
): ExpectedCall[] {
  // Each operation: the end of its API Gateway method path, and the call it makes.
  const operations: Record<string, [methodPath: string, action: string]> = {
    "POST /pets": ["/POST/pets", "dynamodb:PutItem"],
    "GET /pets": ["/GET/pets", "dynamodb:Query"],
    "GET /pets/{id}": ["/GET/pets/*", "dynamodb:GetItem"],
  };
  const expected: ExpectedCall[] = [];
  const seen = new Set<string>();
  // The first successful request of each operation (a later one may be answered from a cache or an idempotent replay).
  for (const { step, method, status } of steps) {
    if (status >= 300 || seen.has(method)) continue;
    seen.add(method);
    const [methodPath, action] = operations[method] ?? [];
    const alias = methodPath && stage.api?.invocations.find((call) => call.methodPath.endsWith(methodPath))?.aliasArn;
    const caller = alias ? stage.aliases.get(alias) : undefined;
    if (action && caller) expected.push({ step, caller, action });
  }
  return expected;
}

/** A key of the stage for a client, written as `npm run keys -- create` does (not recorded as a call). */
async function issueClientKey(
  standIn: AwsStandIn,
  region: string,
  tableName: string,
  stageName: StageName,
): Promise<string> {
  const client = standIn.setupClient(region);
  try {
    const store = new DynamoApiKeyStore(DynamoDBDocumentClient.from(client), tableName);
    return (await issueApiKey(store, stageName, "rehearsal client")).key;
  } finally {
    client.destroy();
  }
}

/** The API contract, as a client meets it. */
async function apiScenario(
  baseUrl: string,
  key: string,
  stage: StageName,
  check: (name: string, ok: boolean, detail: string, step: string) => void,
  begin: (step: string) => string,
): Promise<{ step: string; method: string; status: number }[]> {
  const steps: { step: string; method: string; status: number }[] = [];
  let lastStep = "";
  const call = async (
    method: string,
    path: string,
    init: { auth?: string | null; body?: string; contentType?: string; headers?: Record<string, string> } = {},
  ): Promise<HttpAnswer> => {
    const step = begin(`${method} /v1${path}`);
    lastStep = step;
    const headers: Record<string, string> = { ...init.headers };
    if (init.auth !== null) headers.authorization = `Bearer ${init.auth ?? key}`;
    if (init.body !== undefined) headers["content-type"] = init.contentType ?? "application/json";
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(init.body !== undefined ? { body: init.body } : {}),
    });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    const route = path.split("?")[0]?.replace(/^\/pets\/[^/]+$/, "/pets/{id}") ?? path;
    steps.push({ step, method: `${method} ${route}`, status: response.status });
    return { status: response.status, headers: response.headers, json, step };
  };
  const expect = (name: string, answer: HttpAnswer, status: number, extra = true) =>
    check(
      name,
      answer.status === status && extra,
      `HTTP ${answer.status} ${JSON.stringify(answer.json).slice(0, 300)}`,
      answer.step,
    );
  const errorCode = (answer: HttpAnswer) => (answer.json as { code?: string }).code;

  const noAuth = await call("GET", "/pets", { auth: null });
  expect(
    "401 without a key, with a Bearer challenge",
    noAuth,
    401,
    /Bearer/.test(noAuth.headers.get("www-authenticate") ?? ""),
  );
  expect("401 with an unknown key", await call("GET", "/pets", { auth: `petstore_${stage}_${"A".repeat(43)}` }), 401);

  const idempotencyKey = randomUUID();
  const newPet = JSON.stringify({ name: "Rehearsal Rex", categoryId: 1 });
  const created = await call("POST", "/pets", { body: newPet, headers: { "idempotency-key": idempotencyKey } });
  const pet = created.json as { id?: number; status?: string };
  expect("create: 201 with Location", created, 201, created.headers.get("location") === `/v1/pets/${pet.id}`);
  const replay = await call("POST", "/pets", { body: newPet, headers: { "idempotency-key": idempotencyKey } });
  expect(
    "idempotent replay: the same pet, Idempotent-Replayed",
    replay,
    201,
    replay.headers.get("idempotent-replayed") === "true" && (replay.json as { id?: number }).id === pet.id,
  );
  const reused = await call("POST", "/pets", {
    body: JSON.stringify({ name: "Other", categoryId: 2 }),
    headers: { "idempotency-key": idempotencyKey },
  });
  expect(
    "an Idempotency-Key reused with another body: 422",
    reused,
    422,
    errorCode(reused) === "idempotency_key_reused",
  );
  const invalid = await call("POST", "/pets", { body: JSON.stringify({ name: "No category" }) });
  expect("an invalid body: 400", invalid, 400);
  expect("a text/plain body: 415", await call("POST", "/pets", { body: "hello", contentType: "text/plain" }), 415);
  const oversize = await call("POST", "/pets", { body: JSON.stringify({ name: "x".repeat(70_000), categoryId: 1 }) });
  expect("a body over the limit: 413", oversize, 413);

  const pending: number[] = [];
  for (let index = 0; index < 3; index += 1) {
    const answer = await call("POST", "/pets", {
      body: JSON.stringify({ name: `Pending ${index}`, categoryId: 1, status: "pending" }),
    });
    expect(`create pending pet ${index + 1}: 201`, answer, 201);
    pending.push((answer.json as { id: number }).id);
  }

  const got = await call("GET", `/pets/${pet.id}`);
  expect(
    "get (deprecated): 200 with Deprecation, Sunset and a successor Link",
    got,
    200,
    Boolean(
      got.headers.get("deprecation") &&
        got.headers.get("sunset") &&
        /successor-version/.test(got.headers.get("link") ?? ""),
    ),
  );
  expect("get a missing pet: 404", await call("GET", "/pets/987654321"), 404);
  expect("list with limit=0: 400", await call("GET", "/pets?limit=0"), 400);

  const walk = async (query: string) => {
    const ids: number[] = [];
    let next: string | undefined = `/pets?${query}`;
    let pages = 0;
    while (next && pages < 50) {
      const page = await call("GET", next);
      pages += 1;
      if (page.status !== 200) return { ids, pages, status: page.status };
      ids.push(...(page.json as { id: number }[]).map((item) => item.id));
      next = /<\/v1([^>]+)>; rel="next"/.exec(page.headers.get("link") ?? "")?.[1];
    }
    return { ids, pages, status: 200 };
  };
  const all = await walk("limit=2");
  const everyId = [pet.id, ...pending];
  check(
    "list every pet, two a page, following Link rel=next to the end",
    all.status === 200 && everyId.every((id) => all.ids.includes(id as number)) && all.pages >= 2,
    `${all.pages} pages: ${all.ids.join(",")}`,
    lastStep,
  );
  const filtered = await walk("limit=1&status=pending");
  check(
    "list by status, following Link rel=next to the end",
    filtered.status === 200 &&
      filtered.ids.length === pending.length &&
      pending.every((id) => filtered.ids.includes(id)),
    `${filtered.pages} pages: ${filtered.ids.join(",")}`,
    lastStep,
  );

  const unknown = await call("GET", "/no-such-route");
  expect("an unknown route: 404 not_found", unknown, 404, errorCode(unknown) === "not_found");
  const wrongMethod = await call("DELETE", "/pets");
  expect(
    "a wrong method: 405 naming GET and POST",
    wrongMethod,
    405,
    /GET/.test(wrongMethod.headers.get("allow") ?? ""),
  );
  const wrongPetMethod = await call("DELETE", `/pets/${pet.id}`);
  expect(
    "a wrong method on a pet: 405 naming GET",
    wrongPetMethod,
    405,
    /GET/.test(wrongPetMethod.headers.get("allow") ?? ""),
  );
  const root = await call("GET", "/");
  expect("the API's root: 404 not_found", root, 404, errorCode(root) === "not_found");
  return steps;
}
