/**
 * The cold peer ratio compares ours with a bare handler "bundled the way CDK's NodejsFunction
 * bundles by default" (scripts/bench/build.ts, cdkDefaultEsbuildOptions). This holds that claim:
 * NodejsFunction itself, given only the entry and the functions' runtime under this project's
 * cdk.json feature flags, bundles the bare handler into the very bytes the bench measures.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { Runtime } from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { committedFeatureFlags } from "../../infra/app";
import { cdkDefaultEsbuildOptions, projectRoot } from "../../scripts/bench/build";

const entry = join(projectRoot, "scripts/bench/bareHandler.ts");
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "petstore-peer-bundle-"));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("the bench's peer bundle", () => {
  it("is byte for byte what NodejsFunction makes of the bare handler by default", async () => {
    const outdir = join(dir, "cdk.out");
    const app = new App({ outdir, context: committedFeatureFlags() });
    new NodejsFunction(new Stack(app, "Peer"), "Bare", { entry, runtime: Runtime.NODEJS_24_X, projectRoot });
    app.synth();
    const assets = (await readdir(outdir)).filter((name) => name.startsWith("asset."));
    expect(assets).toHaveLength(1);
    const cdks = await readFile(join(outdir, assets[0] as string, "index.js"), "utf8");

    const ours = join(dir, "peer/index.js");
    await build({
      ...cdkDefaultEsbuildOptions,
      entryPoints: [entry],
      outfile: ours,
      absWorkingDir: projectRoot,
      logLevel: "warning",
    });

    expect(await readFile(ours, "utf8")).toBe(cdks);
    // The SDK is left to the runtime, as the bench's NODE_PATH provides it.
    expect(cdks).toMatch(/require\("@aws-sdk\/client-dynamodb"\)/);
  });
});
