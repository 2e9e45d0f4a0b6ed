import { describe, expect, it } from "vitest";
import { accessLogFields, accessLogFormat, excludedAccessLogVariables } from "../../infra/stacks/accessLog";

/** Characters that break a JSON line when a value is pasted into it unescaped. */
const HOSTILE = 'say "hi" \\ back\\slash\nnew line\r\t{"braces":[1]} \u0001 ünï 🐾';

/**
 * What API Gateway puts in place of each variable: realistic values of the alphabet it builds them
 * from, and "-", what it writes for a variable without a value (no integration, no error, no
 * firewall, no trace).
 */
const samples: Record<keyof typeof accessLogFields, readonly string[]> = {
  requestId: ["c3c4b4b0-6b5e-4f6a-9b7a-2f0c1d2e3f40"],
  extendedRequestId: ["Yk1AbGHgIAMEbXw=", "-"],
  xrayTraceId: ["Root=1-67a1b2c3-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1", "-"],
  ip: ["203.0.113.7", "2001:db8::1"],
  requestTime: ["05/Dec/2030:00:00:00 +0000"],
  method: ["GET", "POST", "DELETE"],
  resourcePath: ["/pets", "/pets/{petId}", "/{proxy+}", "/"],
  status: ["200", "413", "429"],
  responseLength: ["0", "16384"],
  responseLatency: ["12"],
  integrationStatus: ["200", "-"],
  integrationLatency: ["9", "-"],
  errorType: ["THROTTLED", "WAF_FILTERED", "-"],
  wafResponse: ["WAF_ALLOW", "WAF_BLOCK", "-"],
};

/** The line API Gateway writes: each variable replaced by its value as it is, unescaped. */
function render(format: string, values: Readonly<Record<string, string>>): string {
  return format.replace(/\$context\.[A-Za-z.]+/g, (variable) => {
    const value = values[variable];
    if (value === undefined) throw new Error(`no value for ${variable}`);
    return value;
  });
}

function variablesOf(format: string): string[] {
  return [...format.matchAll(/\$context\.[A-Za-z.]+/g)].map((match) => match[0]);
}

const valuesOf = (pick: (name: keyof typeof accessLogFields) => string): Record<string, string> =>
  Object.fromEntries(
    Object.entries(accessLogFields).map(([name, variable]) => [variable, pick(name as keyof typeof accessLogFields)]),
  );

describe("the API Gateway access log format", () => {
  it("writes every variable inside quotes, so the format itself is a JSON object of strings", () => {
    const parsed = JSON.parse(accessLogFormat()) as Record<string, unknown>;

    for (const value of Object.values(parsed)) expect(value).toMatch(/^\$context\.[A-Za-z.]+$/);
    expect(variablesOf(accessLogFormat())).toHaveLength(Object.keys(parsed).length);
  });

  it("renders valid JSON for a request with no error, no integration and no firewall: every missing value is -", () => {
    const values = valuesOf((name) => (name === "requestId" ? (samples.requestId[0] as string) : "-"));

    const parsed = JSON.parse(render(accessLogFormat(), values)) as Record<string, string>;

    expect(parsed.requestId).toBe(samples.requestId[0]);
    expect(parsed.errorType).toBe("-");
    expect(parsed.integrationLatency).toBe("-");
  });

  it("renders valid JSON for every sample value of every field", () => {
    const longest = Math.max(...Object.values(samples).map((values) => values.length));
    for (let variant = 0; variant < longest; variant++) {
      const values = valuesOf((name) => samples[name][variant % samples[name].length] as string);

      const line = render(accessLogFormat(), values);

      expect(line).not.toContain("\n");
      const parsed = JSON.parse(line) as Record<string, string>;
      expect(parsed.resourcePath).toBe(values[accessLogFields.resourcePath]);
      expect(parsed.status).toBe(values[accessLogFields.status]);
    }
  });

  it("would break on a hostile value, which is why no field a client controls is in it", () => {
    // The check above is only meaningful if rendering does not escape: a quote must break the line.
    const values = valuesOf(() => "-");
    values[accessLogFields.resourcePath] = HOSTILE;

    expect(() => JSON.parse(render(accessLogFormat(), values))).toThrow(SyntaxError);
    const used = variablesOf(accessLogFormat());
    for (const variable of excludedAccessLogVariables) expect(used).not.toContain(variable);
    expect(used).not.toContain("$context.identity.userAgent");
    expect(used).not.toContain("$context.path");
    expect(used).not.toContain("$context.error.messageString");
  });

  it("has the request, trace, integration and firewall fields an operator looks for", () => {
    const values = Object.fromEntries(variablesOf(accessLogFormat()).map((variable) => [variable, "x"]));

    expect(Object.keys(JSON.parse(render(accessLogFormat(), values))).sort()).toEqual(
      [
        "requestId",
        "extendedRequestId",
        "xrayTraceId",
        "ip",
        "requestTime",
        "method",
        "resourcePath",
        "status",
        "responseLength",
        "responseLatency",
        "integrationStatus",
        "integrationLatency",
        "errorType",
        "wafResponse",
      ].sort(),
    );
  });
});
