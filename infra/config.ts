/**
 * Everything that differs between the stages, as one typed object per stage. Constructs receive
 * their stage's object; none reads environment variables.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { LogLevel } from "../lib/observability/logger";
import { type DeployedStage, deployedStages } from "./deployment";
import { type StageSettings, unconfiguredSettings } from "./settings";
import type { MonitoringConfig } from "./stacks/monitoring";

/** `id`, `stage` and `stackName` come from infra/deployment.ts, which the CLIs read too. */
export interface StageConfig extends DeployedStage {
  readonly table: {
    readonly removalPolicy: RemovalPolicy;
    readonly deletionProtection: boolean;
    readonly pointInTimeRecoveryDays: number;
  };
  readonly functions: {
    /** More memory is more CPU: 512 MB keeps cold starts short at a small cost per request. */
    readonly memoryMb: number;
    /** Above the DynamoDB client's worst case (3 attempts × 1.5 s plus back-off, lib/db/client.ts). */
    readonly timeout: Duration;
    readonly logLevel: LogLevel;
  };
  readonly api: {
    /** Requests per second, steady and burst, across all clients. */
    readonly throttlingRateLimit: number;
    readonly throttlingBurstLimit: number;
  };
  readonly logRetention: RetentionDays;
  /** What happens to log groups when the stage is destroyed. */
  readonly logRemovalPolicy: RemovalPolicy;
  readonly monitoring: MonitoringConfig;
  /** Account, region and alarm destinations, set per deployment (infra/settings.ts); none by default. */
  readonly settings: StageSettings;
}

export const stageConfigs: Readonly<Record<StageConfig["id"], StageConfig>> = {
  Staging: {
    ...deployedStages.staging,
    table: { removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, pointInTimeRecoveryDays: 35 },
    functions: { memoryMb: 512, timeout: Duration.seconds(10), logLevel: "DEBUG" },
    api: { throttlingRateLimit: 20, throttlingBurstLimit: 40 },
    logRetention: RetentionDays.TWO_WEEKS,
    logRemovalPolicy: RemovalPolicy.DESTROY,
    monitoring: {
      minimumRequests: 50,
      serverErrorRate: 0.05,
      clientErrorRate: 0.5,
      p99LatencyMs: 2000,
      functionErrors: 5,
      p99DurationOfTimeout: 0.8,
      authFailures: 200,
      tableSystemErrors: 10,
      syntheticCheck: { failedPeriods: 2, outOfPeriods: 3 },
      requireAlarmDestination: false,
    },
    settings: unconfiguredSettings,
  },
  Production: {
    ...deployedStages.prod,
    table: { removalPolicy: RemovalPolicy.RETAIN, deletionProtection: true, pointInTimeRecoveryDays: 35 },
    functions: { memoryMb: 512, timeout: Duration.seconds(10), logLevel: "INFO" },
    api: { throttlingRateLimit: 100, throttlingBurstLimit: 200 },
    logRetention: RetentionDays.THREE_MONTHS,
    logRemovalPolicy: RemovalPolicy.RETAIN,
    monitoring: {
      minimumRequests: 50,
      serverErrorRate: 0.01,
      // The synthetic check alone answers about 11 of its ~22 requests per run with a deliberate 4xx.
      clientErrorRate: 0.3,
      p99LatencyMs: 1000,
      functionErrors: 1,
      p99DurationOfTimeout: 0.8,
      authFailures: 100,
      tableSystemErrors: 5,
      syntheticCheck: { failedPeriods: 2, outOfPeriods: 3 },
      requireAlarmDestination: true,
    },
    settings: unconfiguredSettings,
  },
};
