import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * By default a test's output (the handlers' request logs and metrics, CDK's bundling lines, console
 * calls) is printed only if that test fails; TEST_LOGS=1 prints everything as it happens.
 */
const showTestLogs = /^(1|true|yes)$/i.test(process.env.TEST_LOGS ?? "");
/** First in every project's setup files: see test/support/quietOutput.ts. */
const quietOutput = showTestLogs ? [] : ["test/support/quietOutput.ts"];
/** Also what test/unit/testOutput.test.ts runs its fixture with. */
export const testOutput = { silent: showTestLogs ? false : ("passed-only" as const), setupFiles: quietOutput };

/**
 * The slowest infrastructure files, which change rarely: each copies the project or synthesizes
 * every deployment shape and runs commands on it. `npm run test:slow` runs them; CI runs it too.
 */
const slowInfra = [
  "test/infra/accessMatrix.test.ts",
  "test/infra/committedSettings.test.ts",
  "test/infra/rehearsal.test.ts",
  "test/infra/releaseCheckCli.test.ts",
];
const infraOptions = {
  setupFiles: [...quietOutput, "test/support/unitEnv.ts"],
  testTimeout: 300_000,
  hookTimeout: 300_000,
};

export default defineConfig({
  test: {
    silent: testOutput.silent,
    // Every core, and at least two: Vitest's default (cores - 1) ran the files one at a time on the
    // project's 2-core machine, where many of them mostly wait for the processes they start.
    maxWorkers: Math.max(2, availableParallelism()),
    // Runs once per run, whichever projects are selected: see test/support/tempDirectory.ts.
    globalSetup: ["test/support/tempDirectory.ts"],
    // Tests are listed one by one only when they fail or take longer than this: integration tests
    // that start processes routinely take seconds, and listing them all buried the summary.
    slowTestThreshold: 10_000,
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          setupFiles: [...quietOutput, "test/support/unitEnv.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/support/globalSetup.ts"],
          setupFiles: [...quietOutput, "test/support/integrationEnv.ts"],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "infra",
          include: ["test/infra/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...slowInfra],
          ...infraOptions,
        },
      },
      { test: { name: "slow", include: slowInfra, ...infraOptions } },
    ],
  },
});
