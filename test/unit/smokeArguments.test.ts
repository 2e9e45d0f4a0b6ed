/** How `npm run smoke` reads its base URL and key, and how it names a stage it cannot reach. */
import { describe, expect, it } from "vitest";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { baseUrlProblem, unreachableReason } from "../../lib/smoke/checks";
import { CREATE_SYNTHETIC_KEY, parseSmokeArguments, SmokeUsageError } from "../../scripts/smoke";
import { jobOf } from "../support/workflows";

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

describe("the smoke command's key against a deployed stage", () => {
  const DEPLOYED = "https://abc123.execute-api.eu-west-1.amazonaws.com/v1";
  const refusal = `PETSTORE_API_KEY is an ordinary key, and its pets would stay in every client's listing: against a deployed stage use a synthetic key (${CREATE_SYNTHETIC_KEY}), or pass --allow-ordinary-key "<reason>".`;

  it("must be synthetic: an ordinary key is refused in one line naming the command that makes one", () => {
    const message = usageError(["--base-url", DEPLOYED], { PETSTORE_API_KEY: generateApiKey("staging") });

    expect(CREATE_SYNTHETIC_KEY).toBe("npm run keys -- create --synthetic --name NAME");
    expect(message).toBe(refusal);
    expect(message).not.toContain("\n");
  });

  it.each([
    "https://api.example.com/v1",
    "http://10.0.0.5:3000/v1",
    "http://192.0.2.2:3000/v1",
    "http://127.0.0.1.example.com/v1",
  ])("counts %s as deployed", (url) => {
    expect(usageError(["--base-url", url], { PETSTORE_API_KEY: generateApiKey("prod") })).toBe(refusal);
  });

  it("takes a synthetic key", () => {
    const key = generateApiKey("prod", { synthetic: true });

    expect(parseSmokeArguments(["--base-url", DEPLOYED], { PETSTORE_API_KEY: key })).toEqual({
      baseUrl: DEPLOYED,
      key,
    });
  });

  it.each([BASE, "http://localhost:3000/v1", "http://127.0.0.2:3000/v1", "http://[::1]:3000/v1"])(
    "takes an ordinary key for npm start on loopback (%s), whose data is the developer's own",
    (url) => {
      const key = generateApiKey("local");

      expect(parseSmokeArguments(["--base-url", url], { PETSTORE_API_KEY: key })).toEqual({ baseUrl: url, key });
    },
  );

  it("takes an ordinary key with --allow-ordinary-key and its reason, which it hands on", () => {
    const key = generateApiKey("staging");

    expect(
      parseSmokeArguments(["--base-url", DEPLOYED, "--allow-ordinary-key", " checking a client's view "], {
        PETSTORE_API_KEY: key,
      }),
    ).toEqual({ baseUrl: DEPLOYED, key, ordinaryKeyReason: "checking a client's view" });
  });

  it.each([[["--allow-ordinary-key", ""]], [["--allow-ordinary-key", "  "]]])(
    "wants a reason with --allow-ordinary-key (%j)",
    (flag) => {
      expect(usageError(["--base-url", DEPLOYED, ...flag], { PETSTORE_API_KEY: generateApiKey("staging") })).toBe(
        '--allow-ordinary-key needs a reason, e.g. --allow-ordinary-key "<why>".',
      );
    },
  );

  it("is checked in the pipeline by the smoke command itself, with no way around it", () => {
    const step = jobOf("deploy-stage.yml", "deploy").steps.find((candidate) => candidate.name === "Smoke checks");
    if (!step) throw new Error("deploy-stage.yml has no Smoke checks step");

    expect(step.run).toMatch(/^npm run smoke -- --base-url "\$BASE_URL"$/m);
    expect(step.run).not.toContain("--allow-ordinary-key");
    expect(step.run).not.toContain("--key");
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
