/** Starts one in-memory dynalite for the integration run; each test file gets its own table. */
import type { TestProject } from "vitest/node";
import { startEmbeddedDynamo } from "../../local/dynamo";

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

export default async function setup(project: TestProject) {
  const dynamo = await startEmbeddedDynamo({ host: "127.0.0.1", port: 0 });
  project.provide("dynamoEndpoint", dynamo.endpoint);
  return () => dynamo.close();
}
