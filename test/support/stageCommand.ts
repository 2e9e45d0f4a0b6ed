/**
 * Testing a command run for one deployed stage (scripts/stageCommand.ts: preflight, alarms:verify):
 * its usage errors, and the command as npm runs it (its lines: ./consoleOutput.ts).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect } from "vitest";
import { StageUsageError } from "../../scripts/stageCommand";
import { projectRoot } from "./processes";

/** Arguments every stage command refuses, with what its usage line starts with. */
export const refusedStageArguments: [string[], string][] = [
  [[], "--stage is required."],
  [["--stage"], "Option '--stage <value>' argument missing."],
  [["--stage", "production"], 'unknown stage "production".'],
  [["--stage", "prod", "--region", "eu-west-1"], "Unknown option '--region'."],
  [["prod"], "Unexpected argument 'prod'."],
];

/** The message of the usage error `parse` throws ("" when it throws none). */
export function usageRefusal(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(StageUsageError);
    return (error as Error).message;
  }
  return "";
}

/**
 * The command in `script` as npm runs it, with only the environment given (no AWS_*, PETSTORE_* or
 * GITHUB_* variables): its exit code and output.
 */
export async function runStageScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(AWS_|PETSTORE_|GITHUB_)/.test(name)),
  );
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", script, ...args], {
      cwd: projectRoot,
      env: { ...inherited, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

/**
 * runStageScript with no AWS credentials to find: an empty HOME and no instance metadata, so the
 * SDK gives up at once.
 */
export async function runWithoutCredentials(script: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const home = mkdtempSync(join(tmpdir(), "stage-command-home-"));
  try {
    return await runStageScript(script, args, {
      HOME: home,
      USERPROFILE: home,
      AWS_EC2_METADATA_DISABLED: "true",
      ...env,
    });
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
