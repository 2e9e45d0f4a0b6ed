/**
 * The deploy-time provisioner of the synthetic check's key, against dynalite: the key goes only to
 * the secret, its hash record (the keys store's own format) to the table, and every CloudFormation
 * request is answered, failures included.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { PutSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import type { CloudFormationCustomResourceEvent } from "aws-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasApiKeyShape, hashApiKey, isSyntheticApiKey, issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { createJsonLogger } from "../../lib/observability/logger";
import { cloudFormationResourceHandler } from "../../lib/synthetic/cloudFormationResource";
import {
  type KeyProvisionerDependencies,
  provisionSyntheticKey,
  SYNTHETIC_KEY_NAME,
} from "../../lib/synthetic/keyProvisioner";
import { ensureTable } from "../../local/dynamo";
import { documentClient, rawClient, tableName } from "../support/dynamo";

const SECRET_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:synthetic-key-AbCdEf";
const store = () => new DynamoApiKeyStore(documentClient(), tableName());

/** A secret that keeps every version written to it, newest last. */
function fakeSecret() {
  const versions: string[] = [];
  return {
    versions,
    current: () => versions.at(-1),
    write: async (secretId: string, text: string) => {
      expect(secretId).toBe(SECRET_ARN);
      versions.push(text);
    },
  };
}

function deps(secret: ReturnType<typeof fakeSecret>): KeyProvisionerDependencies {
  return { storeFor: (table) => new DynamoApiKeyStore(documentClient(), table), writeSecret: secret.write };
}

const properties = (stage = "staging") => ({
  ServiceToken: "arn:fn",
  TableName: tableName(),
  SecretArn: SECRET_ARN,
  Stage: stage,
});
const common = {
  ServiceToken: "arn:fn",
  ResponseURL: "http://127.0.0.1:1/unused",
  StackId: "arn:aws:cloudformation:eu-west-1:123456789012:stack/Staging-PetStore/1",
  RequestId: "request-1",
  LogicalResourceId: "SyntheticCheckKey",
  ResourceType: "Custom::SyntheticCheckKey",
};
const create = (stage = "staging"): CloudFormationCustomResourceEvent => ({
  ...common,
  RequestType: "Create",
  ResourceProperties: properties(stage),
});
const update = (physicalResourceId: string): CloudFormationCustomResourceEvent => ({
  ...common,
  RequestType: "Update",
  PhysicalResourceId: physicalResourceId,
  ResourceProperties: properties(),
  OldResourceProperties: properties(),
});
const remove = (physicalResourceId: string, table = tableName()): CloudFormationCustomResourceEvent => ({
  ...common,
  RequestType: "Delete",
  PhysicalResourceId: physicalResourceId,
  ResourceProperties: { ...properties(), TableName: table },
});

describe("provisioning the synthetic check's key", () => {
  it("on create, writes a key of the stage to the secret and only its hash record to the keys store", async () => {
    const secret = fakeSecret();

    const outcome = await provisionSyntheticKey(create(), deps(secret));

    const key = secret.current() ?? "";
    expect(secret.versions).toHaveLength(1);
    expect(hasApiKeyShape(key, "staging")).toBe(true);
    // Marked synthetic in its text, as npm run smoke and the check require; no expiry in its record
    // (the stack rotates and revokes it), so it has no expiresAt below.
    expect(isSyntheticApiKey(key)).toBe(true);
    const record = await store().findByHash(hashApiKey(key));
    expect(record).toEqual({
      keyId: outcome.data?.KeyId,
      name: SYNTHETIC_KEY_NAME,
      keyHash: hashApiKey(key),
      createdAt: expect.any(String),
      revokedAt: undefined,
      // It creates pets, so it may write.
      scope: "write",
      // Its pets are its own: no client ever sees the check's test animals (lib/pets/collection.ts).
      synthetic: true,
    });
    expect(outcome).toEqual({
      physicalResourceId: "petstore-staging-synthetic-check-key",
      data: { KeyId: record?.keyId },
    });
    expect(JSON.stringify(outcome)).not.toContain(key);
    const { Items } = await documentClient().send(new ScanCommand({ TableName: tableName() }));
    expect(JSON.stringify(Items)).not.toContain(key);
  });

  it("provisions a key the stage's API accepts, until the resource is deleted", async () => {
    const secret = fakeSecret();
    const verifier = () => createApiKeyVerifier(store(), "staging");
    const { physicalResourceId, data } = await provisionSyntheticKey(create(), deps(secret));

    const accepted = await verifier().verify(secret.current() ?? "");
    await provisionSyntheticKey(remove(physicalResourceId), deps(secret));
    const afterDelete = await verifier().verify(secret.current() ?? "");

    expect(accepted).toEqual({ keyId: data?.KeyId, scope: "write", synthetic: true });
    expect(afterDelete).toEqual({ refused: "revoked" });
  });

  /** The check's keys in the store that still work. */
  const activeSyntheticKeys = async () =>
    (await store().list()).filter((record) => record.name === SYNTHETIC_KEY_NAME && record.revokedAt === undefined);

  it("on update, puts a new key in the secret and only then revokes the earlier one, under the same resource id", async () => {
    const secret = fakeSecret();
    const first = await provisionSyntheticKey(create(), deps(secret));

    const second = await provisionSyntheticKey(update(first.physicalResourceId), deps(secret));

    expect(second.physicalResourceId).toBe(first.physicalResourceId);
    expect(secret.versions).toHaveLength(2);
    expect(secret.versions[0]).not.toBe(secret.versions[1]);
    const [earlier, current] = await Promise.all(secret.versions.map((key) => store().findByHash(hashApiKey(key))));
    expect(earlier?.revokedAt).toEqual(expect.any(String));
    expect(current).toMatchObject({ keyId: second.data?.KeyId, revokedAt: undefined });
    expect(await activeSyntheticKeys()).toEqual([current]);
  });

  it("leaves exactly the key in the secret working after CloudFormation rolls a failed update back", async () => {
    const secret = fakeSecret();
    const { physicalResourceId } = await provisionSyntheticKey(create(), deps(secret));
    await provisionSyntheticKey(update(physicalResourceId), deps(secret));

    // A rollback is another update, back to the earlier properties.
    await provisionSyntheticKey(update(physicalResourceId), deps(secret));

    expect((await activeSyntheticKeys()).map((record) => record.keyHash)).toEqual([hashApiKey(secret.current() ?? "")]);
  });

  it("on update to another table, issues the key there and revokes the check's keys in the earlier one", async () => {
    const secret = fakeSecret();
    const { physicalResourceId } = await provisionSyntheticKey(create(), deps(secret));
    const newTable = `${tableName()}-replacement`;
    await ensureTable(rawClient(), newTable);

    await provisionSyntheticKey(
      { ...update(physicalResourceId), ResourceProperties: { ...properties(), TableName: newTable } },
      deps(secret),
    );

    const inNewTable = await new DynamoApiKeyStore(documentClient(), newTable).findByHash(
      hashApiKey(secret.current() ?? ""),
    );
    expect(inNewTable).toMatchObject({ name: SYNTHETIC_KEY_NAME, revokedAt: undefined });
    expect(await activeSyntheticKeys()).toEqual([]);
  });

  it("on delete, revokes the check's keys", async () => {
    const secret = fakeSecret();
    const { physicalResourceId } = await provisionSyntheticKey(create(), deps(secret));

    const outcome = await provisionSyntheticKey(remove(physicalResourceId), deps(secret));

    expect(outcome).toEqual({ physicalResourceId });
    const record = await store().findByHash(hashApiKey(secret.current() ?? ""));
    expect(record?.revokedAt).toEqual(expect.any(String));
    expect(await activeSyntheticKeys()).toEqual([]);
  });

  it("on delete, leaves every other key alone, and has nothing to do when the table is gone", async () => {
    const secret = fakeSecret();
    await provisionSyntheticKey(create(), deps(secret));
    const { record: someoneElses } = await issueApiKey(store(), "staging", "mobile app");

    await provisionSyntheticKey(remove("SyntheticCheckKey-not-created"), deps(secret));
    await expect(provisionSyntheticKey(remove("x", "no-such-table"), deps(secret))).resolves.toEqual({
      physicalResourceId: "x",
    });

    expect((await store().findByHash(someoneElses.keyHash))?.revokedAt).toBeUndefined();
  });

  it("revokes the key it issued when the secret cannot be written, fails, and keeps the earlier key working", async () => {
    const secret = fakeSecret();
    await provisionSyntheticKey(create(), deps(secret));
    const denied = Object.assign(new Error("not authorized to perform: secretsmanager:PutSecretValue"), {
      name: "AccessDeniedException",
    });
    const issuedBefore = new Set((await store().list()).map((record) => record.keyId));

    await expect(
      provisionSyntheticKey(update("petstore-staging-synthetic-check-key"), {
        ...deps(secret),
        writeSecret: async () => {
          throw denied;
        },
      }),
    ).rejects.toBe(denied);

    const issued = (await store().list()).filter((record) => !issuedBefore.has(record.keyId));
    expect(issued).toEqual([expect.objectContaining({ name: SYNTHETIC_KEY_NAME, revokedAt: expect.any(String) })]);
    expect((await activeSyntheticKeys()).map((record) => record.keyHash)).toEqual([hashApiKey(secret.current() ?? "")]);
  });

  it("refuses properties it cannot use, naming them", async () => {
    const event = create();
    const { Stage: _stage, ...withoutStage } = event.ResourceProperties;

    await expect(
      provisionSyntheticKey(
        { ...event, ResourceProperties: { ...withoutStage, ServiceToken: "arn:fn" } },
        deps(fakeSecret()),
      ),
    ).rejects.toThrow("Property Stage is missing.");
    await expect(
      provisionSyntheticKey(
        { ...event, ResourceProperties: { ...event.ResourceProperties, Stage: "dev" } },
        deps(fakeSecret()),
      ),
    ).rejects.toThrow("Property Stage must be one of local, staging, prod.");
  });
});

describe("answering CloudFormation", () => {
  interface Received {
    readonly method: string | undefined;
    readonly headers: IncomingHttpHeaders;
    readonly body: Record<string, unknown>;
  }
  const received: Received[] = [];
  let responseUrl: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => {
        body += chunk;
      });
      request.on("end", () => {
        received.push({ method: request.method, headers: request.headers, body: JSON.parse(body) });
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    responseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/response?X-Amz-Signature=abc`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });

  afterAll(async () => {
    await close();
  });

  it("puts SUCCESS with the key's public id, without a content type and without the key, to the response URL", async () => {
    const secret = fakeSecret();
    const logs: string[] = [];
    const handler = cloudFormationResourceHandler((event) => provisionSyntheticKey(event, deps(secret)), {
      log: createJsonLogger({ level: "INFO", write: (line) => logs.push(line) }),
    });
    received.length = 0;

    await handler({ ...create(), ResponseURL: responseUrl });

    const [answer] = received;
    const keyId = (await store().findByHash(hashApiKey(secret.current() ?? "")))?.keyId;
    expect(received).toHaveLength(1);
    expect(answer?.method).toBe("PUT");
    expect(answer?.headers["content-type"] ?? "").toBe("");
    expect(answer?.body).toEqual({
      Status: "SUCCESS",
      PhysicalResourceId: "petstore-staging-synthetic-check-key",
      StackId: common.StackId,
      RequestId: common.RequestId,
      LogicalResourceId: common.LogicalResourceId,
      NoEcho: false,
      Data: { KeyId: keyId },
    });
    expect(JSON.stringify(answer?.body)).not.toContain(secret.current());
    expect(logs.join("\n")).not.toContain(secret.current());
    expect(logs.join("\n")).not.toContain("X-Amz-Signature");
  });

  it("is wired in the deployed function: the key to Secrets Manager, the record to the table named in the event", async () => {
    const secrets = mockClient(SecretsManagerClient);
    secrets.on(PutSecretValueCommand, { SecretId: SECRET_ARN }).resolves({});
    received.length = 0;
    try {
      const { handler } = await import("../../functions/syntheticCheckKey");

      await handler({ ...create(), ResponseURL: responseUrl });

      const [written] = secrets.commandCalls(PutSecretValueCommand).map((call) => call.args[0].input.SecretString);
      const record = await store().findByHash(hashApiKey(written ?? ""));
      expect(hasApiKeyShape(written ?? "", "staging")).toBe(true);
      expect(received.map((answer) => answer.body)).toEqual([
        expect.objectContaining({ Status: "SUCCESS", Data: { KeyId: record?.keyId } }),
      ]);
    } finally {
      secrets.restore();
    }
  });

  it("puts FAILED with the reason when provisioning fails, so that the stack does not wait for a timeout", async () => {
    const logs: string[] = [];
    const handler = cloudFormationResourceHandler(
      async () => {
        throw Object.assign(new Error("Requested resource not found"), { name: "ResourceNotFoundException" });
      },
      { log: createJsonLogger({ level: "INFO", write: (line) => logs.push(line) }) },
    );
    received.length = 0;

    await handler({ ...create(), ResponseURL: responseUrl });

    expect(received.map((answer) => answer.body)).toEqual([
      expect.objectContaining({
        Status: "FAILED",
        Reason: "ResourceNotFoundException: Requested resource not found",
        PhysicalResourceId: "SyntheticCheckKey-not-created",
      }),
    ]);
    expect(JSON.parse(logs[0] ?? "{}")).toMatchObject({ level: "ERROR", message: "custom resource failed" });
  });
});
