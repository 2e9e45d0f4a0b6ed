/** The synthetic check's key in Secrets Manager (no local engine exists, so the client is mocked). */
import { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, it } from "vitest";
import { readSecretText, writeSecretText } from "../../lib/synthetic/secrets";

const secrets = mockClient(SecretsManagerClient);
const client = new SecretsManagerClient({ region: "eu-west-1" });
const ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:synthetic-AbCdEf";

afterEach(() => {
  secrets.reset();
});

describe("the synthetic check's secret", () => {
  it("reads the current text of the secret", async () => {
    secrets.on(GetSecretValueCommand, { SecretId: ARN }).resolves({ SecretString: "petstore_prod_x" });

    await expect(readSecretText(client, ARN)).resolves.toBe("petstore_prod_x");
  });

  it("refuses a secret without text, naming the secret and not a value", async () => {
    secrets.on(GetSecretValueCommand).resolves({ SecretBinary: new Uint8Array([1, 2]) });

    await expect(readSecretText(client, ARN)).rejects.toThrow(`Secret ${ARN} holds no text.`);
  });

  it("writes a new current version with the text", async () => {
    secrets.on(PutSecretValueCommand).resolves({});

    await writeSecretText(client, ARN, "petstore_prod_y");

    expect(secrets.commandCalls(PutSecretValueCommand).map((call) => call.args[0].input)).toEqual([
      { SecretId: ARN, SecretString: "petstore_prod_y" },
    ]);
  });
});
