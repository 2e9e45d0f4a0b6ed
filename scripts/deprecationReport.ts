/**
 * `npm run deprecation-report -- [--stage local|staging|prod] [--since 90d]`: who still calls the deprecated operation,
 * from the per-key, per-day last-used records (lib/auth/keyUsage.ts): two Queries of a few KB, exact and available
 * locally, where Logs Insights would bill every scanned GB (https://aws.amazon.com/cloudwatch/pricing/).
 */
import { parseArgs } from "node:util";
import { type ApiKeyRecord, isExpired, scopeOf } from "../lib/auth/apiKeys";
import { type KeyUse, usageDayOf } from "../lib/auth/keyUsage";
import { type RouteDefinition, routeList } from "../lib/routes";
import { parseDuration } from "./duration";
import { runAsScript } from "./entryPoint";
import {
  explainFailure,
  type KeysOptions,
  openStore,
  parseTarget,
  table,
  targetOptions,
  targetUsage,
  UsageError,
} from "./keys";

const COMMAND = "deprecation-report";
const DEFAULT_SINCE = "90d";
const DAY_MS = 86_400_000;

const usage = `Usage:
  npm run ${COMMAND} -- [--since DURATION] [--stage STAGE]
    The keys that called a deprecated operation within DURATION (default ${DEFAULT_SINCE}; s, m, h, d, w): id, name,
    scope, last day used and whether the key still works; and the days left until the operation's sunset.
Options:
${targetUsage}`;

export interface ReportArguments {
  readonly sinceSeconds: number;
  readonly target: ReturnType<typeof parseTarget>;
}

export function parseReportArguments(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ReportArguments | "help" {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { since: { type: "string" }, ...targetOptions, help: { type: "boolean", default: false } },
  });
  if (values.help) return "help";
  if (positionals.length > 0) throw new UsageError(`${COMMAND} takes no arguments, not "${positionals.join(" ")}".`);
  return {
    sinceSeconds: parseDuration(values.since ?? DEFAULT_SINCE, "--since"),
    target: parseTarget(values, env),
  };
}

/** `GET /pets/{petId}`: how a person names the route. */
export function routeName(route: Pick<RouteDefinition, "method" | "path">): string {
  return `${route.method} ${route.path}`;
}

/** The days from `now` until `at`, counting a started day as a day: 0 once `at` has come. */
export function daysUntil(at: Date, now: Date): number {
  return Math.max(0, Math.ceil((at.getTime() - now.getTime()) / DAY_MS));
}

function stateOf(record: ApiKeyRecord | undefined, now: Date): string {
  // A synthetic key's record (and later its uses) go by TTL after it expires.
  if (!record) return "deleted";
  const synthetic = record.synthetic ? ", synthetic" : "";
  if (record.revokedAt) return `revoked ${record.revokedAt}${synthetic}`;
  if (isExpired(record, now.getTime())) return `expired ${record.expiresAt}${synthetic}`;
  return `${record.expiresAt ? `works until ${record.expiresAt}` : "works"}${synthetic}`;
}

/**
 * The report's lines for one deprecated route: a header (the route, its sunset, the days left), then the keys whose
 * last call of it is on or after the window's first day, the latest first.
 */
export function reportLines(
  route: RouteDefinition & { readonly deprecation: NonNullable<RouteDefinition["deprecation"]> },
  records: readonly ApiKeyRecord[],
  uses: readonly KeyUse[],
  now: Date,
  sinceSeconds: number,
): string[] {
  const { sunsetAt } = route.deprecation;
  const sunsetDay = usageDayOf(sunsetAt);
  const daysLeft = daysUntil(sunsetAt, now);
  const header =
    daysLeft > 0
      ? `${routeName(route)} (${route.operationId}) is deprecated; it answers 410 Gone from ${sunsetDay} (sunset), ${daysLeft} day${daysLeft === 1 ? "" : "s"} from now.`
      : `${routeName(route)} (${route.operationId}) has answered 410 Gone since ${sunsetDay} (sunset); keys listed still try it.`;
  // Days are UTC days: a use on the window's first day may be within the window, so it counts.
  const sinceDay = usageDayOf(new Date(now.getTime() - sinceSeconds * 1000));
  const recent = uses
    .filter((use) => use.operationId === route.operationId && use.lastUsedOn >= sinceDay)
    .sort((a, b) => b.lastUsedOn.localeCompare(a.lastUsedOn) || a.keyId.localeCompare(b.keyId));
  if (recent.length === 0) return [header, `No key called ${routeName(route)} since ${sinceDay}.`];
  const byId = new Map(records.map((record) => [record.keyId, record]));
  const rows = recent.map((use) => {
    const record = byId.get(use.keyId);
    return [use.keyId, record?.name ?? "-", record ? scopeOf(record) : "-", use.lastUsedOn, stateOf(record, now)];
  });
  return [
    header,
    `${recent.length} key${recent.length === 1 ? "" : "s"} called it since ${sinceDay}:`,
    ...table([["KEY ID", "NAME", "SCOPE", "LAST USED", "STATE"], ...rows]),
  ];
}

/** Runs the report; `print` receives each line of output, `warn` each notice for stderr. */
export async function runDeprecationReport(
  argv: readonly string[],
  print: (line: string) => void = console.log,
  warn: (line: string) => void = console.error,
  options: KeysOptions = {},
): Promise<void> {
  const parsed = parseReportArguments(argv, options.env ?? process.env);
  if (parsed === "help") {
    print(usage);
    return;
  }
  const deprecated = routeList.filter(
    (route): route is RouteDefinition & { deprecation: NonNullable<RouteDefinition["deprecation"]> } =>
      route.deprecation !== undefined,
  );
  if (deprecated.length === 0) {
    print("No operation is deprecated.");
    return;
  }
  const opened = await openStore(parsed.target, options, warn, COMMAND);
  try {
    const [records, uses] = await Promise.all([opened.store.list(), opened.usage.list()]);
    const now = (options.now ?? (() => new Date()))();
    deprecated.forEach((route, index) => {
      if (index > 0) print("");
      for (const line of reportLines(route, records, uses, now, parsed.sinceSeconds)) print(line);
    });
  } finally {
    await opened.close();
  }
}

await runAsScript(
  import.meta.url,
  (argv) => runDeprecationReport(argv),
  (error) => explainFailure(error)?.replace(/^/, `${COMMAND}: `),
);
