import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { monotonicMs } from "../../lib/http/middleware/requestTelemetry";

const dir = mkdtempSync(join(tmpdir(), "petstore-timing-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a request's timing", () => {
  it("reads a monotonic clock in milliseconds, as performance.now does", async () => {
    const [ownStart, peerStart] = [monotonicMs(), performance.now()];
    await new Promise((resolve) => setTimeout(resolve, 30));
    const [own, peer] = [monotonicMs() - ownStart, performance.now() - peerStart];

    expect(own).toBeGreaterThanOrEqual(25);
    expect(Math.abs(own - peer)).toBeLessThan(5);
  });

  it("loads nothing on a cold start: perf_hooks stays unloaded", async () => {
    const entry = join(dir, "entry.ts");
    const outfile = join(dir, "out.mjs");
    writeFileSync(
      entry,
      `import { monotonicMs } from ${JSON.stringify(join(process.cwd(), "lib/http/middleware/requestTelemetry.ts"))};\n` +
        "const elapsed = monotonicMs() - monotonicMs();\n" +
        'console.log(JSON.stringify({ elapsed, perfHooks: process.moduleLoadList.some((name) => name.includes("perf_hooks")) }));\n',
    );
    await build({ entryPoints: [entry], outfile, bundle: true, platform: "node", format: "esm", logLevel: "silent" });

    const result = JSON.parse(execFileSync(process.execPath, [outfile], { encoding: "utf8" }));

    expect(result).toEqual({ elapsed: expect.any(Number), perfHooks: false });
  });
});
