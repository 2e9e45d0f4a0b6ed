/**
 * The dependencies one Lambda container would build (lib/runtime.ts), on the test table, with
 * fault injection on its DynamoDB client and an injectable clock. Each call is a fresh
 * "process": its own client, so a crash of one leaves the next untouched.
 */

import type { CreatePetDependencies } from "../../functions/createPet";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { createDocumentClient } from "../../lib/db/client";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { DynamoPetRepository } from "../../lib/pets/repository";
import { documentClient, tableName } from "./dynamo";
import { type DynamoFaults, injectFaults } from "./dynamoFaults";

// Keys are read through their own client, so the faults count only the operation's own calls.
const keyClient = documentClient();

export interface TestProcess {
  readonly deps: CreatePetDependencies;
  readonly faults: DynamoFaults;
}

export function startProcess(clock: () => Date = () => new Date()): TestProcess {
  const client = createDocumentClient({ region: "us-east-1", endpoint: process.env.DYNAMODB_ENDPOINT });
  const faults = injectFaults(client);
  return {
    faults,
    deps: {
      pets: new DynamoPetRepository(client, tableName()),
      idempotency: new DynamoIdempotencyStore(client, tableName()),
      keys: createApiKeyVerifier(new DynamoApiKeyStore(keyClient, tableName()), "local"),
      clock,
    },
  };
}
