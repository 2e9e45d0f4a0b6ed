import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import { GLOBAL_STAND_INS } from "../../infra/bundling";
import { ReadableStream as Probe } from "../../infra/shims/readableStreamProbe";

const dir = mkdtempSync(join(tmpdir(), "petstore-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `code`, which names the global ReadableStream, bundled with the stand-ins as the functions are
 * and run in a fresh Node: what it prints, and whether Node loaded its web streams meanwhile.
 */
async function runBundled(code: string): Promise<{ printed: unknown; webStreamsLoaded: boolean }> {
  const entry = join(dir, "entry.mjs");
  const outfile = join(dir, "out.mjs");
  writeFileSync(
    entry,
    `${code}\nconst loaded = process.moduleLoadList.some((name) => name.includes("webstreams/readablestream"));\n` +
      "console.log(JSON.stringify({ printed: globalThis.printed, webStreamsLoaded: loaded }));\n",
  );
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    inject: GLOBAL_STAND_INS.map((file) => join(process.cwd(), file)),
    logLevel: "silent",
  });
  return JSON.parse(execFileSync(process.execPath, [outfile], { encoding: "utf8" }));
}

describe("the ReadableStream stand-in of the bundles", () => {
  it("answers the SDK's question about a Node stream body as the global would, without loading web streams", async () => {
    const result = await runBundled(
      `import { Readable } from "node:stream";
       const body = Readable.from(["{}"]);
       globalThis.printed = [typeof ReadableStream === "function", body instanceof ReadableStream,
         body.constructor.name === ReadableStream.name, "text" instanceof ReadableStream, null instanceof ReadableStream];`,
    );

    expect(result).toEqual({ printed: [true, false, false, false, false], webStreamsLoaded: false });
  });

  it("recognises a real web stream and builds real ones, as the global class does", async () => {
    const result = await runBundled(
      `const real = new globalThis.ReadableStream();
       const built = new ReadableStream({ start(controller) { controller.close(); } });
       globalThis.printed = [real instanceof ReadableStream, built instanceof globalThis.ReadableStream,
         ReadableStream.from(["a"]) instanceof globalThis.ReadableStream, ReadableStream.name, ({}) instanceof ReadableStream];`,
    );

    expect(result.printed).toEqual([true, true, true, "ReadableStream", false]);
  });

  it("gives in this process the answers the global gives", () => {
    const values = [new Readable(), new globalThis.ReadableStream(), {}, "text", 1, null, undefined, () => undefined];
    for (const value of values) expect(value instanceof Probe).toBe(value instanceof globalThis.ReadableStream);
  });
});
