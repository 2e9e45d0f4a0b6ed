/**
 * Everything that differs between the stages, as one typed object per stage. Constructs receive
 * their stage's object; none reads environment variables.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import { SystemLogLevel } from "aws-cdk-lib/aws-lambda";
import { RetentionDays } from "aws-cdk-lib/aws-logs";
import type { LogLevel } from "../lib/observability/logger";
import { type DeployedStage, type DeployedStageName, deployedStages } from "./deployment";
import { type StageSettings, unconfiguredSettings } from "./settings";
import type { EdgeProtectionConfig } from "./stacks/edgeProtection";
import type { MonitoringConfig } from "./stacks/monitoring";
import type { RolloutConfig } from "./stacks/rollout";

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
    /**
     * Instances Lambda keeps initialised on each function's `live` alias, so that requests meet no
     * cold start; 0 for none. Billed per instance and hour whether used or not, and taken from the
     * account's concurrency.
     */
    readonly provisionedConcurrency: number;
    /**
     * Concurrent executions reserved for each API function: its guaranteed share of the account's
     * concurrency and its ceiling, so that a stage sharing an account with another (a staging load
     * test beside production) can neither take the other's executions nor be starved by it. Sized
     * as the stage's burst limit at one second per request (docs/capacity.md measures tens of
     * milliseconds). The background functions (synthetic check, key provisioner) reserve
     * BACKGROUND_RESERVED_CONCURRENCY each.
     */
    readonly reservedConcurrency: number;
  };
  /** How a new version of the functions reaches clients, and when it is rolled back (./stacks/rollout.ts). */
  readonly rollout: RolloutConfig;
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
  /**
   * CloudFormation refuses to delete the stage's data stack while this is on (`cdk destroy` fails).
   * The service stack never has it: it holds no data, and a stack whose first create failed can only
   * be deleted and created again, which the CDK CLI does by itself unless termination protection
   * refuses the delete (docs/deploy.md, "A first create that fails").
   */
  readonly terminationProtection: boolean;
  readonly monitoring: MonitoringConfig;
  /** Account, region and alarm destinations, set per deployment (infra/settings.ts); none by default. */
  readonly settings: StageSettings;
}

export const stageConfigs: Readonly<Record<StageConfig["id"], StageConfig>> = {
  Staging: {
    ...deployedStages.staging,
    table: { removalPolicy: RemovalPolicy.DESTROY, deletionProtection: false, pointInTimeRecoveryDays: 35 },
    functions: {
      memoryMb: 512,
      timeout: Duration.seconds(10),
      logLevel: "DEBUG",
      systemLogLevel: SystemLogLevel.INFO,
      provisionedConcurrency: 0,
      reservedConcurrency: 40,
    },
    // Staging's traffic is testers and the pipeline's smoke checks: a canary would only slow them.
    rollout: { trafficShifting: { type: "allAtOnce" }, failuresToRollBack: 1 },
    api: { throttlingRateLimit: 20, throttlingBurstLimit: 40 },
    // No firewall in staging: testers and load tests must not be blocked (set it to try the rules there).
    edgeProtection: undefined,
    logRetention: RetentionDays.ONE_YEAR,
    logRemovalPolicy: RemovalPolicy.DESTROY,
    terminationProtection: false,
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
    // Kept when the stack is updated or deleted, removed when its first create rolls back, so that a
    // failed first create (a certificate not yet issued...) can simply be retried (docs/deploy.md).
    // https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html
    table: {
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
      deletionProtection: true,
      pointInTimeRecoveryDays: 35,
    },
    functions: {
      memoryMb: 512,
      timeout: Duration.seconds(10),
      logLevel: "INFO",
      systemLogLevel: SystemLogLevel.INFO,
      provisionedConcurrency: 0,
      reservedConcurrency: 200,
    },
    rollout: {
      // A tenth of the requests meet the new version for 5 minutes; then all do.
      trafficShifting: { type: "canary", percentage: 10, interval: Duration.minutes(5) },
      // One failed request in a minute (when it is also more than 1% of that minute's) stops the
      // deployment: at low traffic the canary sees only a few requests, and a needless rollback
      // costs a re-run where a missed one costs an outage.
      failuresToRollBack: 1,
    },
    api: { throttlingRateLimit: 100, throttlingBurstLimit: 200 },
    edgeProtection: {
      rateLimitWindowSeconds: 60,
      // A quarter of one method's stage limit per key: no single key can push everyone into 429s.
      requestsPerApiKey: 1500,
      // Several keys may share an address (offices, NAT), so an address gets more than one key.
      requestsPerIp: 3000,
      // docs/alarms.md, "What pages and why", says why these values.
      pageOnBlockedShare: { share: 0.1, minimumRequests: 500, periods: 2 },
    },
    logRetention: RetentionDays.ONE_YEAR,
    logRemovalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    terminationProtection: true,
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

/**
 * The table the stage's functions use: the restored table `<stage>:tableName` names (`npm run
 * restore`, docs/deploy.md, "Restoring the table to a point in time"), else the data stack's own.
 */
/** A deployed stage's config by its stage name (`staging`, `prod`). */
export const stageConfigOf = (stage: DeployedStageName): StageConfig => stageConfigs[deployedStages[stage].id];

export function servingTableName(config: Pick<StageConfig, "tableName" | "settings">): string {
  return config.settings.tableName ?? config.tableName;
}

/** Each background function's reserved concurrency: one run of the synthetic check, one deploy's key provisioning. */
export const BACKGROUND_RESERVED_CONCURRENCY = 1;
/** How many background functions a stage has (the synthetic check and its key provisioner). */
const BACKGROUND_FUNCTIONS = 2;

/**
 * The concurrent executions a stage's functions reserve in their account, in all: what the
 * pre-flight check (scripts/preflight) compares with the account's unreserved concurrency.
 */
export function stageReservedConcurrency(config: StageConfig, apiFunctions: number): number {
  return apiFunctions * config.functions.reservedConcurrency + BACKGROUND_FUNCTIONS * BACKGROUND_RESERVED_CONCURRENCY;
}
