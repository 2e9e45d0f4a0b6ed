/** The synthetic check's API key in Secrets Manager: the only place the key itself is kept. */
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  type SecretsManagerClient,
} from "@aws-sdk/client-secrets-manager";

export async function readSecretText(client: SecretsManagerClient, secretId: string): Promise<string> {
  const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (!SecretString) throw new Error(`Secret ${secretId} holds no text.`);
  return SecretString;
}

/** Stores a new current version of the secret. */
export async function writeSecretText(client: SecretsManagerClient, secretId: string, text: string): Promise<void> {
  await client.send(new PutSecretValueCommand({ SecretId: secretId, SecretString: text }));
}
