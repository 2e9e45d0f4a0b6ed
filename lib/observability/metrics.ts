/**
 * Per-request metrics in CloudWatch Embedded Metric Format: a log line that CloudWatch turns into
 * metrics, with no API call and no extra latency. The names are shared with the CDK alarms and
 * dashboard, which read them from here.
 */
export const METRICS_NAMESPACE = "PetStore";

export const metricNames = {
  requests: "Requests",
  clientErrors: "ClientErrors",
  serverErrors: "ServerErrors",
  latency: "Latency",
  coldStarts: "ColdStarts",
  petsCreated: "PetsCreated",
  authFailures: "AuthFailures",
} as const;

/** Every metric is published per stage and operation. */
export const METRIC_DIMENSIONS = ["Stage", "Operation"] as const;

export interface RequestMeasurement {
  readonly operation: string;
  readonly status: number;
  readonly latencyMs: number;
  readonly coldStart: boolean;
  readonly petCreated: boolean;
}

export function embeddedMetricRecord(stage: string, measurement: RequestMeasurement, timestamp: number): string {
  const { status } = measurement;
  const values: Record<string, number> = {
    [metricNames.requests]: 1,
    [metricNames.clientErrors]: status >= 400 && status < 500 ? 1 : 0,
    [metricNames.serverErrors]: status >= 500 ? 1 : 0,
    [metricNames.latency]: Math.round(measurement.latencyMs * 1000) / 1000,
    [metricNames.coldStarts]: measurement.coldStart ? 1 : 0,
    [metricNames.petsCreated]: measurement.petCreated ? 1 : 0,
    [metricNames.authFailures]: status === 401 ? 1 : 0,
  };
  return JSON.stringify({
    _aws: {
      Timestamp: timestamp,
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [[...METRIC_DIMENSIONS]],
          Metrics: Object.keys(values).map((Name) => ({
            Name,
            Unit: Name === metricNames.latency ? "Milliseconds" : "Count",
          })),
        },
      ],
    },
    Stage: stage,
    Operation: measurement.operation,
    ...values,
  });
}
