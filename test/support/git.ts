/** git in a repository a test made itself, with a fixed identity (CI machines may have none configured). */
import { execFileSync } from "node:child_process";

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
