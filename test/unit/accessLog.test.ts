import { describe, expect, it } from "vitest";
import {
  accessLogFormat,
  plainAccessLogFields,
  quotedAccessLogFields,
  uncontrolledAccessLogVariables,
} from "../../infra/stacks/accessLog";

/** Characters that break a JSON line when a value is pasted into it unescaped. */
const HOSTILE = 'say "hi" \\ back\\slash\nnew line\r\t{"braces":[1]} \u0001 ünï 🐾';

/**
 * What API Gateway puts in place of each variable: for the plain fields, a realistic value of the
 * alphabet it builds them from, or "-" when it has none; for the quoted fields, the value already
 * quoted and escaped, as $context.error.messageString is.
 */
const plainValues: Record<keyof typeof plainAccessLogFields, readonly string[]> = {
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

function render(format: string, values: Record<string, string>): string {
  return format.replace(/\$context\.[A-Za-z.]+/g, (variable) => {
    const value = values[variable];
    if (value === undefined) throw new Error(`no value for ${variable}`);
    return value;
  });
}

function variablesOf(format: string): string[] {
  return [...format.matchAll(/\$context\.[A-Za-z.]+/g)].map((match) => match[0]);
}

describe("the API Gateway access log format", () => {
  it("renders valid JSON whatever the error message holds: quotes, backslashes, newlines, braces", () => {
    const format = accessLogFormat();
    for (const message of [HOSTILE, "", "-", "Missing Authentication Token", '"', "\\", "}"]) {
      for (const variant of [0, 1, 2]) {
        const values: Record<string, string> = {};
        for (const [name, variable] of Object.entries(plainAccessLogFields)) {
          const samples = plainValues[name as keyof typeof plainAccessLogFields];
          values[variable] = samples[variant % samples.length] as string;
        }
        for (const variable of Object.values(quotedAccessLogFields)) values[variable] = JSON.stringify(message);

        const line = render(format, values);

        expect(line).not.toContain("\n");
        const parsed = JSON.parse(line) as Record<string, string>;
        expect(parsed.errorMessage).toBe(message);
        expect(parsed.requestId).toBe(plainValues.requestId[0]);
        expect(parsed.resourcePath).toBe(values[plainAccessLogFields.resourcePath]);
      }
    }
  });

  it("writes API Gateway's already-quoted error message without quotes of its own", () => {
    expect(accessLogFormat()).toContain('"errorMessage":$context.error.messageString}');
    expect(accessLogFormat()).not.toContain('"$context.error.messageString"');
  });

  it("has the request, trace, integration and firewall fields an operator looks for", () => {
    const values = Object.fromEntries(variablesOf(accessLogFormat()).map((variable) => [variable, "x"]));
    values["$context.error.messageString"] = '"x"';

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
        "errorMessage",
      ].sort(),
    );
  });

  it("leaves out every value a client or a function controls, which API Gateway would not escape", () => {
    const used = variablesOf(accessLogFormat());

    expect(used.length).toBe(Object.keys(plainAccessLogFields).length + Object.keys(quotedAccessLogFields).length);
    for (const variable of uncontrolledAccessLogVariables) expect(used).not.toContain(variable);
    expect(used).not.toContain("$context.identity.userAgent");
    expect(used).not.toContain("$context.path");
    expect(used).not.toContain("$context.integrationErrorMessage");
  });
});
