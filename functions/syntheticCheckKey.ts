/**
 * Not an API route: the deploy-time custom resource that provisions the synthetic check's API key
 * (lib/synthetic/keyProvisioner.ts), invoked by CloudFormation only (infra/stacks/syntheticCheck.ts).
 */
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DynamoApiKeyStore } from "../lib/auth/dynamoApiKeyStore";
import { createDocumentClient } from "../lib/db/client";
import { createJsonLogger } from "../lib/observability/logger";
import { cloudFormationResourceHandler } from "../lib/synthetic/cloudFormationResource";
import { provisionSyntheticKey } from "../lib/synthetic/keyProvisioner";
import { writeSecretText } from "../lib/synthetic/secrets";

const region = process.env.AWS_REGION || "us-east-1";
// As for the API's functions (lib/config.ts): only ever set locally, never in a deployed stage.
const client = createDocumentClient({ region, endpoint: process.env.DYNAMODB_ENDPOINT || undefined });
const secrets = new SecretsManagerClient({ region });

export const handler = cloudFormationResourceHandler(
  (event) =>
    provisionSyntheticKey(event, {
      storeFor: (tableName) => new DynamoApiKeyStore(client, tableName),
      writeSecret: (secretId, text) => writeSecretText(secrets, secretId, text),
    }),
  { log: createJsonLogger({ level: "INFO", base: { service: "petstore-synthetic-check-key" } }) },
);
