/**
 * git in a repository a test made itself, with a fixed identity (CI machines may have none
 * configured), and copies of the project to make one of.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { projectRoot } from "./processes";

export const gitIn =
  (repository: () => string) =>
  (...args: string[]): string =>
    execFileSync("git", ["-C", repository(), ...args], {
      encoding: "utf8",
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "Pet Store tests",
        GIT_AUTHOR_EMAIL: "tests@example.com",
        GIT_COMMITTER_NAME: "Pet Store tests",
        GIT_COMMITTER_EMAIL: "tests@example.com",
      },
    });

/**
 * A new temporary directory, named from `prefix`, holding the project's own files as they are now
 * (tracked or new, never ignored output) and its installed dependencies by a link: a clean clone
 * after npm ci, without its git history. The caller removes it.
 */
export function copyProject(prefix: string): string {
  const copy = mkdtempSync(join(tmpdir(), prefix));
  const files = execFileSync("git", ["-C", projectRoot, "ls-files", "-co", "--exclude-standard", "-z"], {
    encoding: "utf8",
  })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    try {
      cpSync(join(projectRoot, file), join(copy, file));
    } catch {
      // Deleted in the work tree but still tracked: not part of the project now.
    }
  }
  symlinkSync(join(projectRoot, "node_modules"), join(copy, "node_modules"));
  return copy;
}
