/**
 * Stands in for `@aws-sdk/credential-provider-node` in the Lambda bundles (see infra/bundling.ts):
 * the SDK's default chain reduced to its first link, the environment variables the Lambda runtime
 * sets for every function. A client given credentials of its own (the local engine's) never calls it.
 */
import { fromEnv } from "@aws-sdk/credential-provider-env";

type FromEnvInit = Parameters<typeof fromEnv>[0];

export const defaultProvider = (init?: FromEnvInit) => fromEnv(init);
