/**
 * Everything that differs between the stages, as one typed object per stage. Constructs receive
 * their stage's object; none reads environment variables.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { SystemLogLevel } from "aws-cdk-lib/aws-lambda";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { LogLevel } from "../lib/observability/logger";
import { type DeployedStage, deployedStages } from "./deployment";
import { type StageSettings, unconfiguredSettings } from "./settings";
import type { EdgeProtectionConfig } from "./stacks/edgeProtection";
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
    /** The functions' own log level; Lambda drops application log lines below it too (JSON log format). */
    readonly logLevel: LogLevel;
    /** Lambda's own lines: INFO keeps START and REPORT (duration, init duration, memory used). */
    readonly systemLogLevel: SystemLogLevel;
  };
  readonly api: {
    /**
     * Requests per second, steady and burst, shared by every client; API Gateway applies the limits
     * to each method separately (GET /pets, POST /pets, …), not to the stage as a whole. Limits per
     * client are the edge firewall's (`edgeProtection`).
     */
    readonly throttlingRateLimit: number;
    readonly throttlingBurstLimit: number;
  };
  /** The edge firewall (AWS WAF) in front of the API; none when undefined. */
  readonly edgeProtection?: EdgeProtectionConfig;
  /** At least a year: AWS Control Tower's proactive control CT.CLOUDWATCH.PR.2 refuses shorter retention. */
  readonly logRetention: RetentionDays;
  /** What happens to log groups when the stage is destroyed. */
  readonly logRemovalPolicy: RemovalPolicy;
  /** CloudFormation refuses to delete the stack while this is on (`cdk destroy` fails). */
  readonly terminationProtection: boolean;
  readonly monitoring: MonitoringConfig;
  /** Account, region and alarm destinations, set per deployment (infra/settings.ts); none by default. */
  readonly settings: StageSettings;
}

export const stageConfigs: Readonly<Record<StageConfig["id"], StageConfig>> = {
  Staging: {
    ...deployedStages.staging,
    table: { removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, pointInTimeRecoveryDays: 35 },
    functions: { memoryMb: 512, timeout: Duration.seconds(10), logLevel: "DEBUG", systemLogLevel: SystemLogLevel.INFO },
    api: { throttlingRateLimit: 20, throttlingBurstLimit: 40 },
    // No firewall in staging: testers and load tests must not be blocked (set it to try the rules there).
    edgeProtection: undefined,
    logRetention: RetentionDays.ONE_YEAR,
    logRemovalPolicy: RemovalPolicy.DESTROY,
    terminationProtection: false,
    monitoring: { alarmEmails: [], serverErrorRate: 0.05, p99LatencyMs: 2000, functionErrors: 5, authFailures: 200 },
    settings: unconfiguredSettings,
  },
  Production: {
    ...deployedStages.prod,
    table: { removalPolicy: RemovalPolicy.RETAIN, deletionProtection: true, pointInTimeRecoveryDays: 35 },
    functions: { memoryMb: 512, timeout: Duration.seconds(10), logLevel: "INFO", systemLogLevel: SystemLogLevel.INFO },
    api: { throttlingRateLimit: 100, throttlingBurstLimit: 200 },
    edgeProtection: {
      rateLimitWindowSeconds: 60,
      // A quarter of one method's stage limit per key: no single key can push everyone into 429s.
      requestsPerApiKey: 1500,
      // Several keys may share an address (offices, NAT), so an address gets more than one key.
      requestsPerIp: 3000,
      blockedRequestsAlarmThreshold: 500,
    },
    logRetention: RetentionDays.ONE_YEAR,
    logRemovalPolicy: RemovalPolicy.RETAIN,
    terminationProtection: true,
    monitoring: { alarmEmails: [], serverErrorRate: 0.01, p99LatencyMs: 1000, functionErrors: 1, authFailures: 100 },
    settings: unconfiguredSettings,
  },
};
