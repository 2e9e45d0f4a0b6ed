import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { TARGETS } from "../../scripts/bench/report";
import { BENCH_RUNTIMES, nodeOf } from "../../scripts/bench/runtimes";
import { measureWarm } from "../../scripts/bench/warm";

const run = promisify(execFile);
const lambda = BENCH_RUNTIMES.find((runtime) => runtime.name === "lambda") ?? BENCH_RUNTIMES[0];

describe("the warm bench (scripts/bench/warm.ts)", () => {
  it("gives both ratios per operation, judged on their rounds' upper quartile, and p50 and p99 of every side", async () => {
    if (!lambda) throw new Error("no pinned Node");
    const { figures, details } = await measureWarm({
      runtime: lambda,
      node: await nodeOf(lambda),
      iterations: 150,
      rounds: 3,
    });

    const ids = figures.map((f) => f.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const operation of ["listPets", "getPet", "createPet"]) {
      const peer = figures.find((f) => f.id === `middleware.node24.${operation}.peerRatio`);
      expect(peer?.target).toEqual(TARGETS.warmPeerRatio);
      expect(peer?.pass).toBe((peer?.upperQuartile ?? Number.NaN) < TARGETS.warmPeerRatio.value);
      const equal = figures.find((f) => f.id === `middleware.node24.${operation}.equalPeerRatio`);
      expect(equal?.target).toEqual(TARGETS.warmEqualPeerRatio);
      for (const side of ["bare", "ours", "powertools", "powertoolsSame"]) {
        for (const quantile of ["p50", "p99"]) {
          const time = figures.find((f) => f.id === `middleware.node24.${operation}.${side}.${quantile}Us`);
          expect(time?.value).toBeGreaterThan(0);
          expect(time?.runtime).toBe(lambda.version);
        }
      }
      const measured = details.operations[operation];
      expect(measured?.peerRatioByRound).toHaveLength(3);
      // The quiet clock's proof: one key lookup in about 30 of our requests (the child fails otherwise).
      expect(Math.abs((measured?.keyLookups ?? 0) - (measured?.invocations ?? 0) / 30)).toBeLessThanOrEqual(1);
    }
  });

  it("answers bad settings with one line", async () => {
    const failed = await run("npx", ["tsx", "scripts/bench/warm.ts", "--rounds", "none"]).catch((error) => error);
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim().split("\n")).toEqual([
      "warm bench: --iterations and --rounds must be whole numbers, rounds at least 1 and at most iterations",
    ]);
  });
});
