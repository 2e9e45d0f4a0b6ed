/** What code under test prints with console.log and console.error, for tests of a command's lines. */
import { vi } from "vitest";

/** What is printed from now on, line by line: console.log's (`out`) and console.error's (`err`). */
export function captureOutput() {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void out.push(String(line)));
  vi.spyOn(console, "error").mockImplementation((line: unknown) => void err.push(String(line)));
  return { out, err };
}
