/**
 * `npm run deprecation-report` against dynalite: which keys called the deprecated route within the
 * window, read from the keys' last-use records, and the days left until its sunset by a clock the
 * test sets.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { issueApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { DynamoKeyUsageStore } from "../../lib/auth/dynamoKeyUsageStore";
import { usageDayOf } from "../../lib/auth/keyUsage";
import { GoneError } from "../../lib/errors";
import { deprecationHeaders } from "../../lib/http/middleware/deprecation";
import { routeList } from "../../lib/routes";
import { ensureTable } from "../../local/dynamo";
import { daysUntil, parseReportArguments, runDeprecationReport } from "../../scripts/deprecationReport";
import { parseKeysArguments } from "../../scripts/keys";
import { documentClient, rawClient } from "../support/dynamo";
import { projectRoot, runToEnd } from "../support/processes";

const DAY_MS = 86_400_000;
const deprecatedRoutes = routeList.filter((route) => route.deprecation);
const [route] = deprecatedRoutes;
const sunsetAt = route?.deprecation?.sunsetAt ?? new Date(Number.NaN);

const envFor = (table: string) => ({
  DYNAMODB_ENDPOINT: inject("dynamoEndpoint"),
  PETS_TABLE_NAME: table,
  DYNAMODB_PORT: "",
});

async function freshTable(): Promise<string> {
  const table = `test-${randomUUID()}`;
  await ensureTable(rawClient(), table);
  return table;
}

async function report(table: string, now: Date, args: string[] = []): Promise<string[]> {
  const printed: string[] = [];
  await runDeprecationReport(
    args,
    (line) => printed.push(line),
    () => undefined,
    { env: envFor(table), now: () => now },
  );
  return printed;
}

describe("the deprecated route", () => {
  it("is the one route with a deprecation: GET /pets/{petId}, whose sunset is 5 December 2030", () => {
    expect(deprecatedRoutes.map((each) => `${each.method} ${each.path}`)).toEqual(["GET /pets/{petId}"]);
    expect(sunsetAt.toISOString()).toBe("2030-12-05T00:00:00.000Z");
  });
});

describe("npm run deprecation-report", () => {
  // 100.5 days before the sunset: 101 days left, counting the started day.
  const now = new Date(sunsetAt.getTime() - 100.5 * DAY_MS);
  const daysAgo = (days: number) => usageDayOf(new Date(now.getTime() - days * DAY_MS));
  const header = `GET /pets/{petId} (getPet) is deprecated; it answers 410 Gone from 2030-12-05 (sunset), 101 days from now.`;

  it("lists the keys whose last call of it is within the window, newest first, with their name, scope and state", async () => {
    const table = await freshTable();
    const keys = new DynamoApiKeyStore(documentClient(), table);
    const usage = new DynamoKeyUsageStore(documentClient(), table);
    const make = async (name: string, options: Parameters<typeof issueApiKey>[3] = {}) =>
      (await issueApiKey(keys, "local", name, { now: new Date(now.getTime() - 400 * DAY_MS), ...options })).record
        .keyId;
    const mobile = await make("mobile app");
    await usage.recordUse({ keyId: mobile, operationId: "getPet", lastUsedOn: daysAgo(10) });
    const dashboard = await make("dashboard", { scope: "read" });
    await usage.recordUse({ keyId: dashboard, operationId: "getPet", lastUsedOn: daysAgo(200) });
    await usage.recordUse({ keyId: dashboard, operationId: "listPets", lastUsedOn: daysAgo(1) });
    const revoked = await make("old partner");
    await usage.recordUse({ keyId: revoked, operationId: "getPet", lastUsedOn: daysAgo(5) });
    await keys.revoke(revoked, new Date("2030-08-01T00:00:00Z"));
    const expiring = await make("contractor", { lifetimeSeconds: 380 * 86_400 });
    await usage.recordUse({ keyId: expiring, operationId: "getPet", lastUsedOn: daysAgo(90) });
    const lister = await make("lists only");
    await usage.recordUse({ keyId: lister, operationId: "listPets", lastUsedOn: daysAgo(2) });

    const printed = await report(table, now);
    const rows = printed.slice(3).map((row) => row.split(/ {2,}/));

    expect(printed.slice(0, 3)).toEqual([
      header,
      `3 keys called it since ${daysAgo(90)}:`,
      expect.stringMatching(/^KEY ID +NAME +SCOPE +LAST USED +STATE$/),
    ]);
    expect(rows).toEqual([
      [revoked, "old partner", "write", daysAgo(5), "revoked 2030-08-01T00:00:00.000Z"],
      [mobile, "mobile app", "write", daysAgo(10), "works"],
      [expiring, "contractor", "write", daysAgo(90), `expired ${new Date(now.getTime() - 20 * DAY_MS).toISOString()}`],
    ]);
  });

  it("says no key called it since the window's first day when none did, and takes --since", async () => {
    const table = await freshTable();
    const keyId = (await issueApiKey(new DynamoApiKeyStore(documentClient(), table), "local", "quiet one")).record
      .keyId;
    await new DynamoKeyUsageStore(documentClient(), table).recordUse({
      keyId,
      operationId: "getPet",
      lastUsedOn: daysAgo(40),
    });

    expect(await report(table, now, ["--since", "4w"])).toEqual([
      header,
      `No key called GET /pets/{petId} since ${daysAgo(28)}.`,
    ]);
    expect((await report(table, now, ["--since", "6w"]))[1]).toBe(`1 key called it since ${daysAgo(42)}:`);
  });

  it("after the sunset, says the route answers 410 and still lists who tries it", async () => {
    const table = await freshTable();

    const printed = await report(table, new Date(sunsetAt.getTime() + 3 * DAY_MS));

    expect(printed[0]).toBe(
      "GET /pets/{petId} (getPet) has answered 410 Gone since 2030-12-05 (sunset); keys listed still try it.",
    );
  });

  it("counts a started day as a day left, and none once the sunset has come", () => {
    expect(daysUntil(sunsetAt, new Date(sunsetAt.getTime() - 1))).toBe(1);
    expect(daysUntil(sunsetAt, new Date(sunsetAt.getTime() - DAY_MS))).toBe(1);
    expect(daysUntil(sunsetAt, new Date(sunsetAt.getTime() - DAY_MS - 1))).toBe(2);
    expect(daysUntil(sunsetAt, sunsetAt)).toBe(0);
    expect(daysUntil(sunsetAt, new Date(sunsetAt.getTime() + DAY_MS))).toBe(0);
  });

  it("reads a window of 90 days by default, and refuses a bad one or an argument in one line", () => {
    expect(parseReportArguments([], {})).toMatchObject({ sinceSeconds: 90 * 86_400, target: { stage: "local" } });
    expect(parseReportArguments(["--stage", "prod"], {})).toMatchObject({ target: { stage: "prod" } });
    expect(() => parseReportArguments(["--since", "3 months"], {})).toThrow(
      '--since must be a whole number above 0 and a unit, s, m, h, d or w (for example 1h or 30d), not "3 months".',
    );
    expect(() => parseReportArguments(["getPet"], {})).toThrow('deprecation-report takes no arguments, not "getPet".');
  });

  it("as a command: exits 0 with the report, and 1 with one line for a bad --since", async () => {
    const table = await freshTable();

    const ran = await runToEnd("scripts/deprecationReport.ts", [], { cwd: projectRoot, env: envFor(table) });
    const refused = await runToEnd("scripts/deprecationReport.ts", ["--since", "soon"], {
      cwd: projectRoot,
      env: envFor(table),
    });

    expect(ran.code).toBe(0);
    expect(ran.output).toMatch(/^GET \/pets\/\{petId\} \(getPet\) is deprecated; .+ days? from now\.$/m);
    expect(ran.output).toMatch(/^No key called GET \/pets\/\{petId\} since \d{4}-\d\d-\d\d\.$/m);
    expect(refused.code).toBe(1);
    expect(refused.output.trim()).toBe(
      'deprecation-report: --since must be a whole number above 0 and a unit, s, m, h, d or w (for example 1h or 30d), not "soon".',
    );
  });
});

describe("docs/operations.md, before the sunset", () => {
  const operations = readFileSync(join(projectRoot, "docs/operations.md"), "utf8");
  // One line: the prose wraps anywhere.
  const section = operations.slice(operations.indexOf("## Before the deprecated get's sunset")).replace(/\s+/g, " ");
  const deprecation = route?.deprecation;

  it("names the route's sunset day and what it answers from then, as the API does", () => {
    const day = new Intl.DateTimeFormat("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });

    expect(section).toContain(`\`GET /v1${route?.path}\` (\`${route?.operationId}\`) is deprecated`);
    expect(section).toContain(`its sunset is ${day.format(sunsetAt)}`);
    expect(section).toContain(
      `On ${day.format(sunsetAt)} (00:00 UTC) the route starts answering 410 with code \`gone\``,
    );
    expect(section).toContain(`("${new GoneError(deprecation?.successor ?? "").message}")`);
    expect(section).toContain(`\`Link: ${deprecation ? deprecationHeaders(deprecation).Link : "?"}\``);
    expect(section).toContain(`"No key called ${route?.method} ${route?.path} since …"`);
  });

  it("shows commands the report and keys accept", () => {
    expect(parseReportArguments(["--stage", "prod"], {})).toMatchObject({ target: { stage: "prod" } });
    expect(section).toContain(
      "npm run deprecation-report -- --stage prod # the keys that called it in the last 90 days",
    );
    expect(section).toContain("`npm run keys -- list --unused-for 90d --stage prod`");
    expect(parseKeysArguments(["list", "--unused-for", "90d", "--stage", "prod"], {})).toMatchObject({
      unusedForSeconds: 90 * 86_400,
      target: { stage: "prod" },
    });
  });
});
