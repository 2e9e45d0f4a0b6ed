/**
 * The functions' log and metrics lines go to stdout's descriptor directly (lib/observability/logger.ts):
 * they must still arrive whole and in order with what the rest of the process writes through the
 * stream, whatever stdout is (a pipe, as Lambda's; a file), and a wrapped stdout must see them.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { writeStdout } from "../../lib/observability/logger";
import { projectRoot } from "../support/processes";

const script = `
import { writeStdout } from "./lib/observability/logger.ts";
for (let i = 0; i < 200; i++) {
  writeStdout(JSON.stringify({ line: i, text: "ünï ✓ " + "x".repeat(i * 7) }) + "\\n" + JSON.stringify({ metrics: i }));
  process.stdout.write(JSON.stringify({ stream: i }) + "\\n");
}
`;

const expected = Array.from({ length: 200 }, (_, i) => [
  JSON.stringify({ line: i, text: `ünï ✓ ${"x".repeat(i * 7)}` }),
  JSON.stringify({ metrics: i }),
  JSON.stringify({ stream: i }),
]).flat();

const dir = mkdtempSync(join(tmpdir(), "petstore-stdout-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(stdout: "pipe" | number): string {
  const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: projectRoot,
    stdio: ["ignore", stdout, "pipe"],
    encoding: "utf8",
  });
  expect(child.stderr).toBe("");
  return child.stdout ?? "";
}

describe("lines written to stdout", () => {
  it("arrive whole and in order with the stream's own writes through a pipe", () => {
    expect(run("pipe").trimEnd().split("\n")).toEqual(expected);
  });

  it("arrive whole and in order with the stream's own writes in a file", () => {
    const file = join(dir, "stdout.log");
    run(openSync(file, "w"));
    expect(readFileSync(file, "utf8").trimEnd().split("\n")).toEqual(expected);
  });

  it("go through a wrapped stdout.write, so that whoever wrapped it sees them", () => {
    const seen: string[] = [];
    const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      seen.push(String(chunk));
      return true;
    });
    try {
      writeStdout('{"a":1}\n{"b":2}');
    } finally {
      spy.mockRestore();
    }
    expect(seen).toEqual(['{"a":1}\n{"b":2}\n']);
  });
});
