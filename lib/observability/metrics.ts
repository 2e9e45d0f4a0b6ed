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

/** Milliseconds to the microsecond, as both request lines report them. */
export const roundedMs = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * `JSON.stringify(roundedMs(ms))`, from whole microseconds: turning a fractional double into text
 * is V8's slow path (about a microsecond here), and every request writes its latency twice. Below
 * 10^15 µs the shortest text of k/1000 is k's digits with the point put back and trailing zeros
 * dropped; anything else (negative, huge, not a number) goes through JSON.stringify.
 */
export function roundedMsText(ms: number): string {
  const micros = Math.round(ms * 1000);
  if (!(micros >= 0 && micros < 1e15)) return JSON.stringify(roundedMs(ms));
  const whole = Math.floor(micros / 1000);
  let fraction = micros - whole * 1000;
  if (fraction === 0) return `${whole}`;
  let digits = 3;
  while (fraction % 10 === 0) {
    fraction /= 10;
    digits -= 1;
  }
  return `${whole}.${`${fraction}`.padStart(digits, "0")}`;
}

/** Each metric, its unit and its value for one request, in the order the record lists them. */
const metricDefinitions: readonly {
  readonly name: MetricName;
  readonly unit: "Count" | "Milliseconds";
  readonly value: (measurement: RequestMeasurement) => number;
}[] = [
  { name: metricNames.requests, unit: "Count", value: () => 1 },
  { name: metricNames.clientErrors, unit: "Count", value: ({ status }) => (status >= 400 && status < 500 ? 1 : 0) },
  { name: metricNames.serverErrors, unit: "Count", value: ({ status }) => (status >= 500 ? 1 : 0) },
  { name: metricNames.latency, unit: "Milliseconds", value: ({ latencyMs }) => roundedMs(latencyMs) },
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
/** `,"Stage":…,"Operation":…` for each stage and operation seen, serialised once. */
const dimensionTexts = new Map<string, Map<string, string>>();

function dimensionText(stage: string, operation: string): string {
  let byOperation = dimensionTexts.get(stage);
  if (!byOperation) {
    byOperation = new Map();
    dimensionTexts.set(stage, byOperation);
  }
  let text = byOperation.get(operation);
  if (text === undefined) {
    text = `,"Stage":${JSON.stringify(stage)},"Operation":${JSON.stringify(operation)}`;
    byOperation.set(operation, text);
  }
  return text;
}

const [requestsKey, clientErrorsKey, serverErrorsKey, latencyKey, coldStartsKey, petsCreatedKey, authFailuresKey] =
  metricDefinitions.map(({ name }) => `,${JSON.stringify(name)}:`);

const metricValue = (index: number, measurement: RequestMeasurement) =>
  (metricDefinitions[index] as (typeof metricDefinitions)[number]).value(measurement);

/**
 * One EMF record: `{"_aws":{"Timestamp":…,"CloudWatchMetrics":[…]},"Stage":…,"Operation":…,<metric>:<value>…}`,
 * exactly what JSON.stringify gives for that object (test/unit/telemetry.test.ts checks it), joined
 * from parts serialised once and the request's numbers.
 */
export function embeddedMetricRecord(stage: string, measurement: RequestMeasurement, timestamp: number): string {
  return (
    `{"_aws":{"Timestamp":${Number.isSafeInteger(timestamp) ? `${timestamp}` : JSON.stringify(timestamp)},"CloudWatchMetrics":${declaration}}` +
    dimensionText(stage, measurement.operation) +
    `${requestsKey}${metricValue(0, measurement)}${clientErrorsKey}${metricValue(1, measurement)}${serverErrorsKey}${metricValue(2, measurement)}` +
    `${latencyKey}${roundedMsText(measurement.latencyMs)}` +
    `${coldStartsKey}${metricValue(4, measurement)}${petsCreatedKey}${metricValue(5, measurement)}${authFailuresKey}${metricValue(6, measurement)}}`
  );
}
