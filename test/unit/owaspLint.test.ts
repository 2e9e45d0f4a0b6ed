/** `npm run lint:owasp`: Spectral's OpenAPI and OWASP rules on the document, as the project configures them. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../../lib/contract/openapi";
import { projectRoot, runToEnd } from "../support/processes";

/** Child processes on a busy machine can take longer than the unit tests' default 5 s. */
const CHILD_PROCESS_TIMEOUT_MS = 90_000;
const SCRIPT = "scripts/docs/spectral.ts";
const folder = mkdtempSync(join(tmpdir(), "petstore-spectral-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("npm run lint:owasp", { timeout: CHILD_PROCESS_TIMEOUT_MS }, () => {
  it("passes the document as built, with no error and no warning", async () => {
    const { code, output } = await runToEnd(SCRIPT, [], { cwd: projectRoot });

    expect(output).toContain("No results with a severity of 'warn' or higher found!");
    expect(code).toBe(0);
  });

  it("fails a document with a request string of unbounded length or a public server without TLS", async () => {
    const document = JSON.parse(JSON.stringify(buildOpenApiDocument()));
    delete document.components.schemas.NewPet.properties.name.maxLength;
    document.servers[0].url = "http://pets.example.com/v1";
    const file = join(folder, "openapi.json");
    writeFileSync(file, JSON.stringify(document, null, 2));

    const { code, output } = await runToEnd(SCRIPT, [file], { cwd: projectRoot });

    expect(code).toBe(1);
    expect(output).toMatch(/error +request-string-limit .*components\.schemas\.NewPet\.properties\.name/);
    expect(output).toMatch(/error +owasp:api8:2023-no-server-http .*servers\[0\]\.url/);
    expect(output).toContain("breaks the rules above");
  });

  it("still checks the API-level security requirement names a defined scheme (the operations' scopes are allowed)", async () => {
    const document = JSON.parse(JSON.stringify(buildOpenApiDocument()));
    document.security = [{ apiKeyHeader: [] }];
    // In the project (dist/ is ignored by git): .spectral.yaml's overrides match files relative to it.
    mkdirSync(join(projectRoot, "dist"), { recursive: true });
    const file = join(projectRoot, "dist", `owasp-lint-test-${process.pid}.json`);
    writeFileSync(file, JSON.stringify(document, null, 2));

    const { code, output } = await runToEnd(SCRIPT, [file], { cwd: projectRoot }).finally(() => rmSync(file));

    expect(code).toBe(1);
    expect(output).toMatch(/oas3-operation-security-defined .*security\[0\]\.apiKeyHeader/);
    expect(output).not.toContain("must be listed among scopes");
  });

  it("gives every rule it turns off a reason on the line above", () => {
    const lines = readFileSync(join(projectRoot, ".spectral.yaml"), "utf8").split("\n");
    const turnedOff = lines.flatMap((line, index) => (/:\s*off\s*$/.test(line) ? [index] : []));

    expect(turnedOff.length).toBeGreaterThan(0);
    expect(
      turnedOff.filter((index) => !/^\s*#\s*\S/.test(lines[index - 1] ?? "")).map((index) => lines[index]),
    ).toEqual([]);
  });
});
