/**
 * Not an API route: the scheduled synthetic check of a deployed stage (lib/synthetic/check.ts),
 * invoked by EventBridge Scheduler every few minutes (infra/stacks/syntheticCheck.ts).
 */
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { createJsonLogger, writeStdout } from "../lib/observability/logger";
import { loadSyntheticCheckConfig, runSyntheticCheck, type SyntheticRun } from "../lib/synthetic/check";
import { readSecretText } from "../lib/synthetic/secrets";

const config = loadSyntheticCheckConfig();
const secrets = new SecretsManagerClient({ region: config.region });
const log = createJsonLogger({ level: "INFO", base: { service: "petstore-synthetic-check", stage: config.stage } });

export const handler = (): Promise<SyntheticRun> =>
  runSyntheticCheck({
    baseUrl: config.baseUrl,
    stage: config.stage,
    readApiKey: () => readSecretText(secrets, config.apiKeySecretArn),
    log,
    writeMetric: writeStdout,
  });
