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
const [requestsKey, clientErrorsKey, serverErrorsKey, latencyKey, coldStartsKey, petsCreatedKey, authFailuresKey] =
  metricDefinitions.map(({ name }) => `,${JSON.stringify(name)}:`);

const metricValue = (index: number, measurement: RequestMeasurement) =>
  (metricDefinitions[index] as (typeof metricDefinitions)[number]).value(measurement);

/**
 * What follows the timestamp up to the latency's value, for each stage, operation and pair of
 * error counts: `,"CloudWatchMetrics":[…]},"Stage":…,"Operation":…,"Requests":1,…,"Latency":`.
 * A request's record differs from another's of the same function in the timestamp, the latency and
 * a few counts that are each 0 or 1, so every other part is joined once and kept.
 */
const middles = new Map<string, Map<string, string[]>>();

function middleText(stage: string, measurement: RequestMeasurement): string {
  let byOperation = middles.get(stage);
  if (!byOperation) {
    byOperation = new Map();
    middles.set(stage, byOperation);
  }
  let texts = byOperation.get(measurement.operation);
  if (!texts) {
    texts = [];
    byOperation.set(measurement.operation, texts);
  }
  const requests = metricValue(0, measurement);
  const clientErrors = metricValue(1, measurement);
  const serverErrors = metricValue(2, measurement);
  const index = countsIndex(requests, clientErrors, serverErrors);
  return (
    (index === -1 ? undefined : texts[index]) ??
    remember(
      texts,
      index,
      `,"CloudWatchMetrics":${declaration}},"Stage":${JSON.stringify(stage)},"Operation":${JSON.stringify(measurement.operation)}` +
        `${requestsKey}${requests}${clientErrorsKey}${clientErrors}${serverErrorsKey}${serverErrors}${latencyKey}`,
    )
  );
}

/** What follows the latency: the counts of cold starts, pets created and authentication failures, and the end. */
const tails: string[] = [];

function tailText(measurement: RequestMeasurement): string {
  const coldStarts = metricValue(4, measurement);
  const petsCreated = metricValue(5, measurement);
  const authFailures = metricValue(6, measurement);
  const index = countsIndex(coldStarts, petsCreated, authFailures);
  return (
    (index === -1 ? undefined : tails[index]) ??
    remember(
      tails,
      index,
      `${coldStartsKey}${coldStarts}${petsCreatedKey}${petsCreated}${authFailuresKey}${authFailures}}`,
    )
  );
}

const isBit = (count: number) => count === 0 || count === 1;

/** Three counts as the bits of one index when each is 0 or 1 (as every count is); else -1, kept nowhere. */
function countsIndex(first: number, second: number, third: number): number {
  return isBit(first) && isBit(second) && isBit(third) ? first * 4 + second * 2 + third : -1;
}

/** `text`, kept at `index` of `texts` for the next record with the same counts (none at -1). */
function remember(texts: string[], index: number, text: string): string {
  if (index !== -1) texts[index] = text;
  return text;
}

/**
 * One EMF record: `{"_aws":{"Timestamp":…,"CloudWatchMetrics":[…]},"Stage":…,"Operation":…,<metric>:<value>…}`,
 * exactly what JSON.stringify gives for that object (test/unit/telemetry.test.ts checks it), joined
 * from parts serialised once and the request's numbers. `latencyText` is the latency as
 * roundedMsText writes it, when the caller has it already.
 */
export function embeddedMetricRecord(
  stage: string,
  measurement: RequestMeasurement,
  timestamp: number,
  latencyText: string = roundedMsText(measurement.latencyMs),
): string {
  const timestampText = Number.isSafeInteger(timestamp) ? `${timestamp}` : JSON.stringify(timestamp);
  return `{"_aws":{"Timestamp":${timestampText}${middleText(stage, measurement)}${latencyText}${tailText(measurement)}`;
}
