/**
 * Runs before each integration test file, in its own module graph: points the handlers'
 * configuration at the shared dynalite and at a table of the file's own.
 */
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { ensureTable } from "../../local/dynamo";
import { rawClient } from "./dynamo";

process.env.DYNAMODB_ENDPOINT = inject("dynamoEndpoint");
process.env.PETS_TABLE_NAME = `test-${randomUUID()}`;
process.env.PETSTORE_STAGE = "local";
process.env.AWS_REGION = "us-east-1";
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";

await ensureTable(rawClient(), process.env.PETS_TABLE_NAME);
