/**
 * The handlers' real dependencies, built once per container at module load (the cold start):
 * configuration is read and checked here, and the DynamoDB client is shared by all requests.
 */
import { DynamoApiKeyStore } from "./auth/dynamoApiKeyStore";
import { DynamoKeyUsageStore } from "./auth/dynamoKeyUsageStore";
import { createKeyUseRecorder } from "./auth/keyUsage";
import { createApiKeyVerifier } from "./auth/verifier";
import { loadRuntimeConfig } from "./config";
import { createDocumentClient } from "./db/client";
import type { Dependencies } from "./http/types";
import { createTelemetry } from "./observability/telemetry";
import { DynamoPetRepository } from "./pets/repository";

const config = loadRuntimeConfig();
const client = createDocumentClient({ region: config.region, endpoint: config.dynamodbEndpoint });

/** The shared client and table, for the stores only one function needs (createPet's idempotency records). */
export const runtimeTable = { client, tableName: config.tableName } as const;

const telemetry = createTelemetry({
  service: "petstore",
  stage: config.stage,
  level: config.logLevel,
  format: config.logFormat,
});

export const runtimeDependencies: Dependencies = {
  pets: new DynamoPetRepository(client, config.tableName),
  keys: createApiKeyVerifier(new DynamoApiKeyStore(client, config.tableName), config.stage),
  keyUses: createKeyUseRecorder(new DynamoKeyUsageStore(client, config.tableName), telemetry.log),
  clock: () => new Date(),
  telemetry,
};
