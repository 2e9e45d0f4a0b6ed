/**
 * The AWS-related lines the stage commands print (missing or expired credentials, no region) are
 * worded once, in scripts/awsErrors.ts, and every command says them in those words. The commands'
 * own tests hold each full line (preflight, alarmsVerify, restore, stageUrl, keysCli).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { failedCallLine, noRegionLine, signInLine } from "../../scripts/awsErrors";
import { explainFailure } from "../../scripts/keys";
import { projectRoot } from "../support/processes";

const noCredentials = Object.assign(new Error("Could not load credentials from any providers"), {
  name: "CredentialsProviderError",
});

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("AWS-related command messages", () => {
  it("say no credentials in the same words in keys and in the commands that name a failed call", () => {
    const words = signInLine("no credentials");

    expect(words).toBe(
      "No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).",
    );
    expect(explainFailure(noCredentials)).toBe(words);
    expect(failedCallLine("sts:GetCallerIdentity", noCredentials, () => "")).toBe(
      `sts:GetCallerIdentity failed: CredentialsProviderError: Could not load credentials from any providers. ${words}`,
    );
  });

  it("say no region in the same words in keys and in the commands built on scripts/stageCommand.ts", () => {
    expect(noRegionLine("staging:region", "staging")).toBe(
      `No AWS region: pin staging:region in cdk.json's "context", or set AWS_REGION to the region staging is deployed to.`,
    );
    expect(explainFailure(new Error("Region is missing"))).toBe(
      noRegionLine("staging:region or prod:region", "the stage", "--region"),
    );
  });

  it("are spelled nowhere else under scripts/", () => {
    const wording = /AWS credentials found|No AWS credentials|expired or not valid|no region:|No AWS region/i;
    const elsewhere = sources(join(projectRoot, "scripts"))
      .filter((file) => !file.endsWith(join("scripts", "awsErrors.ts")))
      .filter((file) => wording.test(readFileSync(file, "utf8")))
      .map((file) => relative(projectRoot, file));

    expect(elsewhere).toEqual([]);
  });
});
