/** How `npm run smoke` reads its base URL and key, and how it names a stage it cannot reach. */
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { baseUrlProblem, unreachableReason } from "../../lib/smoke/checks";
import { parseSmokeArguments, SmokeUsageError } from "../../scripts/smoke";

function usageError(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseSmokeArguments(argv, env);
  } catch (error) {
    expect(error).toBeInstanceOf(SmokeUsageError);
    return (error as Error).message;
  }
  throw new Error("expected a SmokeUsageError");
}

const BASE = "http://127.0.0.1:3000/v1";

describe("the smoke command's base URL", () => {
  it.each([
    BASE,
    `${BASE}/`,
    "https://abc123.execute-api.eu-west-1.amazonaws.com/v1",
    "https://api.example.com/pets-api/v1",
  ])("takes %s", (url) => {
    expect(baseUrlProblem(url)).toBeUndefined();
  });

  it.each([
    ["http://127.0.0.1:3000", "the base URL must end in /v1, e.g. http://127.0.0.1:3000/v1"],
    ["http://127.0.0.1:3000/", "the base URL must end in /v1, e.g. http://127.0.0.1:3000/v1"],
    ["http://127.0.0.1:3000/v1/pets", "the base URL must end in /v1, e.g. http://127.0.0.1:3000/v1"],
    ["http://127.0.0.1:3000/v2", "the base URL must end in /v1, e.g. http://127.0.0.1:3000/v1"],
    [
      "https://abc123.execute-api.eu-west-1.amazonaws.com/staging",
      "the base URL must end in /v1, e.g. https://abc123.execute-api.eu-west-1.amazonaws.com/staging/v1",
    ],
    [`${BASE}?limit=1`, "the base URL must end in /v1, with no query or fragment"],
    ["127.0.0.1:3000/v1", "the base URL must be an http(s) URL ending in /v1, e.g. http://127.0.0.1:3000/v1"],
    ["ftp://example.com/v1", "the base URL must be an http(s) URL ending in /v1, e.g. http://127.0.0.1:3000/v1"],
  ])("refuses %s in one line", (url, message) => {
    expect(baseUrlProblem(url)).toBe(message);
    expect(usageError(["--base-url", url], { PETSTORE_API_KEY: generateApiKey("local") })).toBe(message);
  });
});

describe("the smoke command's key", () => {
  it("comes from PETSTORE_API_KEY when --key is absent", () => {
    const key = generateApiKey("staging");

    expect(parseSmokeArguments(["--base-url", BASE], { PETSTORE_API_KEY: key })).toEqual({ baseUrl: BASE, key });
  });

  it("comes from --key when given, before PETSTORE_API_KEY", () => {
    const key = generateApiKey("local");

    expect(
      parseSmokeArguments(["--base-url", BASE, "--key", key], { PETSTORE_API_KEY: generateApiKey("local") }),
    ).toEqual({ baseUrl: BASE, key });
  });

  it("is required, and the usage says where to put it", () => {
    const message = usageError(["--base-url", BASE], {});

    expect(message).toMatch(/^an API key is required: set PETSTORE_API_KEY\.\n/);
    expect(message).toContain("Usage: PETSTORE_API_KEY=KEY npm run smoke -- --base-url URL");
    expect(usageError(["--base-url", BASE], { PETSTORE_API_KEY: "" })).toMatch(/^an API key is required/);
  });

  it.each([
    ["PETSTORE_API_KEY", "ends with a newline", (key: string) => [[], { PETSTORE_API_KEY: `${key}\n` }] as const],
    ["--key", "has a space before or after it", (key: string) => [["--key", ` ${key}`], {}] as const],
  ])("in %s is refused, without being shown, when it %s", (source, slip, given) => {
    const key = generateApiKey("local");
    const [argv, env] = given(key);

    const message = usageError(["--base-url", BASE, ...argv], env);

    expect(message).toBe(`${source} is not a valid key: it ${slip}; set it to the key alone.`);
    expect(message).not.toContain(key.slice(-12));
  });

  it("is refused when it is not shaped like a key of any stage", () => {
    expect(usageError(["--base-url", BASE], { PETSTORE_API_KEY: "hunter2" })).toBe(
      "PETSTORE_API_KEY must be an API key (petstore_<local|staging|prod>_<43 letters or digits>).",
    );
  });

  it("typed without --key is not repeated in the message", () => {
    const key = generateApiKey("local");

    const message = usageError(["--base-url", BASE, key], {});

    expect(message).toMatch(/^unexpected argument: smoke takes only the options below\.\n/);
    expect(message).not.toContain(key.slice(-12));
  });

  it("is not needed for --help", () => {
    expect(parseSmokeArguments(["--help"], {})).toBe("help");
    expect(parseSmokeArguments(["-h"], {})).toBe("help");
  });
});

describe("why a stage cannot be reached", () => {
  const fetchFailed = (cause: object) => new TypeError("fetch failed", { cause });

  it.each([
    [{ code: "ECONNREFUSED" }, "connection refused"],
    [{ code: "ENOTFOUND" }, "no such host (DNS lookup failed)"],
    [{ code: "EAI_AGAIN" }, "DNS lookup failed (temporary failure; try again)"],
    [{ code: "UND_ERR_CONNECT_TIMEOUT" }, "connection timed out"],
    [{ code: "UND_ERR_SOCKET", message: "other side closed" }, "connection closed by the server"],
    [{ code: "CERT_HAS_EXPIRED" }, "TLS failed (CERT_HAS_EXPIRED)"],
    [{ code: "ERR_TLS_CERT_ALTNAME_INVALID" }, "TLS failed (ERR_TLS_CERT_ALTNAME_INVALID)"],
    // A host with several addresses: one error per address tried.
    [{ errors: [{ code: "ECONNREFUSED" }, { code: "ECONNREFUSED" }] }, "connection refused"],
    [{ message: "something new\n  at somewhere" }, "something new"],
  ])("names %j in words", (cause, reason) => {
    expect(unreachableReason(fetchFailed(cause))).toBe(reason);
  });

  it("names a request that got no answer in time", () => {
    expect(unreachableReason(new DOMException("The operation was aborted due to timeout", "TimeoutError"))).toBe(
      "no answer within 15 s",
    );
  });

  it("leaves other errors to the check that met them", () => {
    expect(unreachableReason(new TypeError("Invalid header value"))).toBeUndefined();
    expect(unreachableReason(new Error("fetch failed"))).toBeUndefined();
  });
});
