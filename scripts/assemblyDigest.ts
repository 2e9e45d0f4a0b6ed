/**
 * `npx tsx scripts/assemblyDigest.ts <directory>`: the SHA-256 of a cloud assembly, so the pipeline
 * (.github/workflows/deploy.yml, docs/delivery.md) deploys to production exactly what staging was smoke-tested with.
 * It covers each file's relative path, size and bytes in sorted-path order: not timestamps, permissions or empty
 * directories (an artifact keeps none); links are followed, as the upload does. Exit 2 on bad arguments, 1 (one line)
 * for a missing or empty directory.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runAsScript } from "./entryPoint";

export class AssemblyDigestError extends Error {}

const usage = "Usage: tsx scripts/assemblyDigest.ts <cloud-assembly-directory>";

/** Relative paths (`/`-separated) of every file under `root`, sorted. */
function filesUnder(root: string): string[] {
  const files: string[] = [];
  const visit = (relative: string) => {
    for (const name of readdirSync(join(root, relative))) {
      const path = relative === "" ? name : `${relative}/${name}`;
      if (statSync(join(root, path)).isDirectory()) visit(path);
      else files.push(path);
    }
  };
  visit("");
  // Code-unit order, the same on every machine and locale.
  return files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The hex SHA-256 digest of the cloud assembly in `directory` (see the file's comment for what it covers). */
export function assemblyDigest(directory: string): string {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(directory).isDirectory();
  } catch {
    throw new AssemblyDigestError(
      `No directory ${directory}: expected the cloud assembly npm run synth writes (cdk.out).`,
    );
  }
  if (!isDirectory) {
    throw new AssemblyDigestError(`${directory} is not a directory: expected a cloud assembly such as cdk.out.`);
  }
  const files = filesUnder(directory);
  if (files.length === 0) throw new AssemblyDigestError(`${directory} holds no files: it is no cloud assembly.`);
  const hash = createHash("sha256");
  for (const path of files) {
    const content = readFileSync(join(directory, path));
    // Path and size delimit each file, so that no two different assemblies feed the same bytes.
    hash.update(`${path}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest("hex");
}

function directoryArgument(argv: readonly string[]): string | undefined {
  try {
    const { positionals } = parseArgs({ args: [...argv], options: {}, allowPositionals: true });
    return positionals.length === 1 ? positionals[0] : undefined;
  } catch {
    return undefined;
  }
}

await runAsScript(
  import.meta.url,
  (argv) => {
    const directory = directoryArgument(argv);
    if (directory === undefined) {
      console.error(usage);
      return 2;
    }
    console.log(assemblyDigest(directory));
  },
  (error) => (error instanceof AssemblyDigestError ? error.message : undefined),
);
