/**
 * The deploy pipeline's smoke key: deploy-stage.yml mints a one-hour synthetic key for each run with
 * the deploy role, masks it before anything else, and hands it to `npm run smoke` only in the
 * step's environment; no GitHub secret holds a key any more. The minting line is read with the
 * keys command's own parser, so the workflow and the command cannot drift apart.
 */
import { describe, expect, it } from "vitest";
import { deployedStages } from "../../infra/deployment";
import { parseKeysArguments } from "../../scripts/keys";
import { jobOf, readWorkflow } from "../support/workflows";

const steps = jobOf("deploy-stage.yml", "deploy").steps;
const smoke = steps.find((step) => step.name === "Smoke checks");
const lines = smoke?.run.split("\n") ?? [];
const MINT = /^key="\$\(npm run -s keys -- (create .+)\)"$/;

/** The words of a shell command line as the shell splits them: double quotes kept together, `$STAGE` filled in. */
function words(commandLine: string, variables: Record<string, string>): string[] {
  return [...commandLine.matchAll(/"([^"]*)"|(\S+)/g)].map((match) =>
    (match[1] ?? match[2] ?? "").replace(/\$([A-Z_]+)/g, (_, name: string) => variables[name] ?? `$${name}`),
  );
}

describe("the deploy pipeline's smoke key", () => {
  it("is minted in the smoke step, for the step's stage, as a quiet synthetic key that expires in an hour", () => {
    const mint = lines.map((line) => MINT.exec(line)?.[1]).find((match) => match !== undefined);
    if (!mint) throw new Error(`deploy-stage.yml's Smoke checks step mints no key: ${smoke?.run}`);

    expect(smoke?.env.STAGE).toBe(`\${{ steps.stage.outputs.stage }}`);
    for (const stage of Object.values(deployedStages)) {
      const parsed = parseKeysArguments(
        words(mint, { STAGE: stage.stage, GITHUB_RUN_ID: "7", GITHUB_RUN_ATTEMPT: "1" }),
      );
      expect(parsed).toMatchObject({
        command: "create",
        synthetic: true,
        quiet: true,
        lifetimeSeconds: 3600,
        name: "deploy smoke, run 7 attempt 1",
        target: { kind: "deployed", stage: stage.stage },
      });
    }
  });

  it("is masked first, then given to smoke only through PETSTORE_API_KEY, never on a command line", () => {
    const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));

    expect(at(MINT)).toBe(0);
    expect(lines[1]).toBe('echo "::add-mask::$key"');
    expect(lines[2]).toBe('export PETSTORE_API_KEY="$key"');
    expect(at(/^npm run smoke -- --base-url "\$BASE_URL"$/)).toBe(3);
    // $key is read on those two lines only.
    expect(lines.filter((line) => line.includes("$key"))).toHaveLength(2);
  });

  it("replaces the PETSTORE_API_KEY secret: the deploy workflow reads no secret and asks for none", () => {
    const workflow = readWorkflow("deploy-stage.yml");

    expect(workflow).not.toContain("secrets.");
    expect(workflow).not.toMatch(/secret PETSTORE_API_KEY/);
  });
});
