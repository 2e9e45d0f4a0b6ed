/**
 * The client package's facts that live in more than one place, held together: its version
 * (package.json, the User-Agent constant, the changelog), what it packs, its metadata, and the
 * figures docs/client.md states about it (supported Node.js, the consumer project's pins, the
 * defaults and the worst-case time of a call).
 */
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { DEFAULT_ATTEMPT_TIMEOUT_MS } from "../../client/src/client";
import { DEFAULT_RETRY, worstCaseCallMs } from "../../client/src/retry";
import { CLIENT_VERSION } from "../../client/src/version";
import { projectRoot } from "../support/processes";

const manifest = JSON.parse(readFileSync(`${projectRoot}client/package.json`, "utf8")) as {
  version: string;
  files: string[];
  engines: { node: string };
  repository: { type: string; url: string; directory: string };
  homepage: string;
  bugs: { url: string };
  keywords: string[];
};
const changelog = readFileSync(`${projectRoot}client/CHANGELOG.md`, "utf8");
const guide = readFileSync(`${projectRoot}docs/client.md`, "utf8");

/** The first match's groups of `pattern` in `text`, failing the test with `what` when there is none. */
function groups(text: string, pattern: RegExp, what: string): string[] {
  const match = pattern.exec(text);
  if (!match) throw new Error(`no ${what} found (${pattern})`);
  return match.slice(1).map((group) => group ?? "");
}

describe("the client package's version", () => {
  it("is the same in package.json and in the User-Agent constant", () => {
    expect(CLIENT_VERSION).toBe(manifest.version);
  });

  it("is the changelog's latest entry, and the changelog is packed", () => {
    const [latest] = groups(changelog, /^## (\d+\.\d+\.\d+)/m, "version heading in client/CHANGELOG.md");

    expect(latest).toBe(manifest.version);
    expect(manifest.files).toContain("CHANGELOG.md");
  });
});

describe("the client package's metadata", () => {
  it("points at its folder of the repository, its readme and its issues", () => {
    expect(manifest.repository).toEqual({
      type: "git",
      url: "git+https://github.com/petstore-api/petstore-api.git",
      directory: "client",
    });
    expect(manifest.homepage).toBe("https://github.com/petstore-api/petstore-api/tree/main/client#readme");
    expect(manifest.bugs.url).toBe("https://github.com/petstore-api/petstore-api/issues");
    expect(manifest.keywords.length).toBeGreaterThan(0);
  });
});

describe("docs/client.md", () => {
  it("states the Node.js versions package.json engines allows", () => {
    const [stated] = groups(guide, /for Node\.js ([\d.]+) or newer/, '"for Node.js X or newer"');

    expect(semver.minVersion(manifest.engines.node)?.version).toBe(semver.coerce(stated)?.version);
    expect(semver.satisfies("20.19.0", manifest.engines.node)).toBe(false);
  });

  it("pins the consumer project's @types/node to the oldest Node.js major the client supports", () => {
    const [typesNode] = groups(guide, /npm install --save-dev [^\n]*@types\/node@(\S+)/, "pinned @types/node");

    expect(semver.valid(typesNode)).not.toBeNull();
    expect(semver.major(typesNode ?? "")).toBe(semver.minVersion(manifest.engines.node)?.major);
  });

  it("gives the defaults the code has", () => {
    const defaultOf = (option: string) =>
      Number(groups(guide, new RegExp(`^\\| \`${option}\` \\| \`(\\d+)\``, "m"), option)[0]);

    expect(defaultOf("retry.maxAttempts")).toBe(DEFAULT_RETRY.maxAttempts);
    expect(defaultOf("retry.baseDelayMs")).toBe(DEFAULT_RETRY.baseDelayMs);
    expect(defaultOf("retry.maxDelayMs")).toBe(DEFAULT_RETRY.maxDelayMs);
    expect(defaultOf("attemptTimeoutMs")).toBe(DEFAULT_ATTEMPT_TIMEOUT_MS);
  });

  it("states the worst-case time of a call with the defaults as the code computes it", () => {
    const [total, attempts, attemptSeconds, waits, waitSeconds] = groups(
      guide.replace(/\s+/g, " "),
      /a call takes at most (\d+) s: (\d+) attempts of at most (\d+) s each, and (\d+) waits of at most (\d+) s/,
      "worst-case sentence",
    ).map(Number);

    expect(total).toBe(worstCaseCallMs(DEFAULT_RETRY, DEFAULT_ATTEMPT_TIMEOUT_MS) / 1000);
    expect(attempts).toBe(DEFAULT_RETRY.maxAttempts);
    expect(attemptSeconds).toBe(DEFAULT_ATTEMPT_TIMEOUT_MS / 1000);
    expect(waits).toBe(DEFAULT_RETRY.maxAttempts - 1);
    expect(waitSeconds).toBe(DEFAULT_RETRY.maxDelayMs / 1000);
  });
});

describe("worstCaseCallMs", () => {
  it("adds every attempt's time limit and the longest wait between each two", () => {
    expect(worstCaseCallMs({ maxAttempts: 1, baseDelayMs: 200, maxDelayMs: 10_000 }, 5_000)).toBe(5_000);
    expect(worstCaseCallMs({ maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 2_000 }, 1_000)).toBe(4_000 + 3 * 2_000);
  });
});
