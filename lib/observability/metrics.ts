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

type MetricName = (typeof metricNames)[keyof typeof metricNames];

/** Each metric, its unit and its value for one request, in the order the record lists them. */
const metricDefinitions: readonly {
  readonly name: MetricName;
  readonly unit: "Count" | "Milliseconds";
  readonly value: (measurement: RequestMeasurement) => number;
}[] = [
  { name: metricNames.requests, unit: "Count", value: () => 1 },
  { name: metricNames.clientErrors, unit: "Count", value: ({ status }) => (status >= 400 && status < 500 ? 1 : 0) },
  { name: metricNames.serverErrors, unit: "Count", value: ({ status }) => (status >= 500 ? 1 : 0) },
  { name: metricNames.latency, unit: "Milliseconds", value: ({ latencyMs }) => Math.round(latencyMs * 1000) / 1000 },
  { name: metricNames.coldStarts, unit: "Count", value: ({ coldStart }) => (coldStart ? 1 : 0) },
  { name: metricNames.petsCreated, unit: "Count", value: ({ petCreated }) => (petCreated ? 1 : 0) },
  { name: metricNames.authFailures, unit: "Count", value: ({ status }) => (status === 401 ? 1 : 0) },
];

/**
 * What every record declares, the same for every request: serialised once, at module load, as
 * are the members' keys; a record then only joins the request's values to them.
 */
const declaration = JSON.stringify([
  {
    Namespace: METRICS_NAMESPACE,
    Dimensions: [[...METRIC_DIMENSIONS]],
    Metrics: metricDefinitions.map(({ name, unit }) => ({ Name: name, Unit: unit })),
  },
]);
const valueKeys = metricDefinitions.map(({ name }) => `,${JSON.stringify(name)}:`);

/**
 * One EMF record: `{"_aws":{"Timestamp":…,"CloudWatchMetrics":[…]},"Stage":…,"Operation":…,<metric>:<value>…}`,
 * exactly what JSON.stringify gives for that object (test/unit/telemetry.test.ts checks it).
 */
export function embeddedMetricRecord(stage: string, measurement: RequestMeasurement, timestamp: number): string {
  let record = `{"_aws":{"Timestamp":${JSON.stringify(timestamp)},"CloudWatchMetrics":${declaration}},"Stage":${JSON.stringify(stage)},"Operation":${JSON.stringify(measurement.operation)}`;
  for (let index = 0; index < metricDefinitions.length; index++) {
    record += `${valueKeys[index]}${JSON.stringify((metricDefinitions[index] as (typeof metricDefinitions)[number]).value(measurement))}`;
  }
  return `${record}}`;
}
