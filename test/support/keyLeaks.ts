/** Searching output and files for API keys, whole or in pieces (test/integration/secrets.test.ts). */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const SECRET_PIECE = 12;

/** Each key, and each 12-character piece of its secret part, that `text` contains. */
export function leaksOf(text: string, keys: readonly string[]): string[] {
  const found: string[] = [];
  for (const key of keys) {
    const secret = key.slice(key.lastIndexOf("_") + 1);
    if (text.includes(key)) found.push(key);
    for (let start = 0; start + SECRET_PIECE <= secret.length; start++) {
      const piece = secret.slice(start, start + SECRET_PIECE);
      if (text.includes(piece)) found.push(`${piece} (from ${key.slice(0, 20)}…)`);
    }
  }
  return found;
}

/**
 * The same search over every file under `folder`, read byte for byte (a database's files are not
 * text); each finding is prefixed with the file it is in. Also returns how many files were read,
 * so that a test can show the search was not vacuous.
 */
export function leaksInFolder(folder: string, keys: readonly string[]): { leaks: string[]; filesRead: number } {
  const files = readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
  const leaks = files.flatMap((file) =>
    leaksOf(readFileSync(file).toString("latin1"), keys).map((leak) => `${relative(folder, file)}: ${leak}`),
  );
  return { leaks, filesRead: files.length };
}
