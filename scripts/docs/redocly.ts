/** Runs the Redocly CLI installed as a dev dependency, offline: no telemetry, no update check. */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { stripVTControlCharacters } from "node:util";

const cli = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");

/** Redocly CLI 2's boxed notices on every run that say nothing of this document (Node 22 needed; Redoc 3 themes). */
export const REDOCLY_NOTICES: readonly RegExp[] = [
  /Node\.js \d+ support is ending/,
  /build-docs now renders docs with Redoc 3/,
];

/**
 * Drops the boxes matching `notices`, and the blank lines around them, from Redocly's stderr; every other line, other
 * boxes included, passes through unchanged.
 */
export function createNoticeFilter(
  notices: readonly RegExp[],
  write: (text: string) => void,
): { push(text: string): void; end(): void } {
  let partial = "";
  let pendingBlanks: string[] = [];
  let box: string[] | undefined;
  let droppedBox = false;
  const emit = (lines: string[]) => {
    if (lines.length > 0) write(lines.map((line) => `${line}\n`).join(""));
  };
  const line = (text: string) => {
    const plain = stripVTControlCharacters(text);
    if (box) {
      box.push(text);
      if (!plain.includes("╚")) return;
      const lines = box;
      box = undefined;
      const boxText = stripVTControlCharacters(lines.join("\n"));
      if (notices.some((notice) => notice.test(boxText))) {
        pendingBlanks = [];
        droppedBox = true;
      } else {
        emit([...pendingBlanks, ...lines]);
        pendingBlanks = [];
      }
      return;
    }
    if (plain.trim() === "") {
      // The one blank line after a dropped box belongs to it.
      if (droppedBox) droppedBox = false;
      else pendingBlanks.push(text);
      return;
    }
    droppedBox = false;
    if (plain.includes("╔")) {
      box = [text];
      return;
    }
    emit([...pendingBlanks, text]);
    pendingBlanks = [];
  };
  return {
    push(text) {
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const each of lines) line(each);
    },
    end() {
      if (partial) line(partial);
      partial = "";
      emit([...pendingBlanks, ...(box ?? [])]);
      pendingBlanks = [];
      box = undefined;
    },
  };
}

export async function redocly(args: readonly string[]): Promise<void> {
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: ["inherit", "inherit", "pipe"],
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: "off",
      REDOCLY_SUPPRESS_NOTIFICATIONS: "true",
      // Its stderr is a pipe now; keep the colours a terminal would have shown.
      ...(process.stderr.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}),
    },
  });
  const filter = createNoticeFilter(REDOCLY_NOTICES, (text) => process.stderr.write(text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => filter.push(text));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  filter.end();
  if (code !== 0) throw new Error(`redocly ${args[0]} failed (exit code ${code}).`);
}
