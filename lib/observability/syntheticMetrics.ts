/**
 * The synthetic check's metrics, in CloudWatch Embedded Metric Format like the request metrics
 * (./metrics.ts): one line per run, no API call. The alarm on them (infra/stacks/syntheticCheck.ts)
 * reads the names from here.
 */
import { METRICS_NAMESPACE } from "./metrics";

export const syntheticMetricNames = {
  /** 1 when every smoke check passed, 0 otherwise; no value at all when the run did not happen. */
  passed: "SyntheticCheckPassed",
  /** How many smoke checks failed in the run (1 when the run could not start). */
  failedChecks: "SyntheticChecksFailed",
} as const;

/** Published per stage only: a run covers every operation. */
export const SYNTHETIC_METRIC_DIMENSIONS = ["Stage"] as const;

export function embeddedSyntheticRecord(
  stage: string,
  run: { readonly passed: boolean; readonly failedChecks: number },
  timestamp: number,
): string {
  const values = {
    [syntheticMetricNames.passed]: run.passed ? 1 : 0,
    [syntheticMetricNames.failedChecks]: run.failedChecks,
  };
  return JSON.stringify({
    _aws: {
      Timestamp: timestamp,
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [[...SYNTHETIC_METRIC_DIMENSIONS]],
          Metrics: Object.keys(values).map((Name) => ({ Name, Unit: "Count" })),
        },
      ],
    },
    Stage: stage,
    ...values,
  });
}
