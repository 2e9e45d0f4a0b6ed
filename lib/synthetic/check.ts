/**
 * The deployed synthetic check. Every few minutes (EventBridge Scheduler, infra/stacks/syntheticCheck.ts)
 * it runs the smoke checks (lib/smoke/checks.ts) through the stage's public URL with the key the
 * stack provisioned for it (./keyProvisioner.ts), logs the outcome and publishes one metric line
 * per run. The alarm on that metric fires when runs fail or stop arriving, so a stage that answers
 * nothing at all alarms too.
 */
import { hasApiKeyShape, isSyntheticApiKey } from "../auth/apiKeys";
import { ConfigError, type StageName, stages } from "../config";
import { describeError, type LineWriter, type Logger } from "../observability/logger";
import { embeddedSyntheticRecord } from "../observability/syntheticMetrics";
import { runSmoke } from "../smoke/checks";

/**
 * Pages a listing is followed for (1, 1, 1, then 100 at a time): paging and links are checked on
 * every run, and a stage with many pets costs a bounded number of requests.
 */
export const SYNTHETIC_MAX_PAGES = 5;

export interface SyntheticCheckConfig {
  /** The stage's public base URL, ending in /v1. */
  readonly baseUrl: string;
  /** The Secrets Manager secret holding the check's API key. */
  readonly apiKeySecretArn: string;
  readonly stage: StageName;
  readonly region: string;
}

/** Read once at cold start; a missing or malformed value stops it with a message naming the variable. */
export function loadSyntheticCheckConfig(env: NodeJS.ProcessEnv = process.env): SyntheticCheckConfig {
  const problems: string[] = [];
  const baseUrl = env.PETSTORE_BASE_URL ?? "";
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    problems.push("PETSTORE_BASE_URL is not an http(s) URL");
  }
  const apiKeySecretArn = env.PETSTORE_API_KEY_SECRET_ARN ?? "";
  if (!/^arn:aws[a-z-]*:secretsmanager:/.test(apiKeySecretArn)) {
    problems.push("PETSTORE_API_KEY_SECRET_ARN is not a Secrets Manager ARN");
  }
  const stage = env.PETSTORE_STAGE ?? "";
  if (!stages.includes(stage as StageName)) problems.push(`PETSTORE_STAGE must be one of ${stages.join(", ")}`);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration: ${problems.join("; ")}.`);
  return { baseUrl, apiKeySecretArn, stage: stage as StageName, region: env.AWS_REGION || "us-east-1" };
}

export interface SyntheticCheckDependencies {
  readonly baseUrl: string;
  readonly stage: StageName;
  /** Reads the key afresh on every run: a redeploy may have replaced it. */
  readonly readApiKey: () => Promise<string>;
  readonly log: Logger;
  /** Where the metric line goes: stdout in Lambda, where CloudWatch turns it into metrics. */
  readonly writeMetric: LineWriter;
  readonly fetch?: typeof fetch;
  readonly clock?: () => Date;
}

export interface SyntheticRun {
  readonly passed: boolean;
  /** Checks that ran (0 when the run could not start). */
  readonly checks: number;
  /** Checks that failed (1 when the run could not start). */
  readonly failedChecks: number;
}

export async function runSyntheticCheck(deps: SyntheticCheckDependencies): Promise<SyntheticRun> {
  const clock = deps.clock ?? (() => new Date());
  let run: SyntheticRun;
  try {
    const key = await deps.readApiKey();
    // The key itself is never part of a message: only whether it has the right shape.
    if (!hasApiKeyShape(key, deps.stage)) {
      throw new Error(`The API key secret does not hold a ${deps.stage} key (was it provisioned?).`);
    }
    // The smoke checks write; with anything but a synthetic key their pets would reach clients.
    if (!isSyntheticApiKey(key)) {
      throw new Error(`The API key secret holds an ordinary ${deps.stage} key, not a synthetic one.`);
    }
    const report = await runSmoke({
      baseUrl: deps.baseUrl,
      key,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      print: () => undefined,
      maxPages: SYNTHETIC_MAX_PAGES,
      now: clock,
    });
    for (const result of report.results.filter((candidate) => !candidate.passed)) {
      deps.log.error("synthetic check failed", { check: result.name, detail: result.detail });
    }
    run = { passed: report.failed === 0, checks: report.results.length, failedChecks: report.failed };
    deps.log.info("synthetic check run", { ...run, petsCreated: report.created.map((pet) => pet.id) });
  } catch (error) {
    deps.log.error("synthetic check could not run", { error: describeError(error) });
    run = { passed: false, checks: 0, failedChecks: 1 };
  }
  deps.writeMetric(embeddedSyntheticRecord(deps.stage, run, clock().getTime()));
  return run;
}
