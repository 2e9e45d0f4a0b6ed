/** Runs a measurement in a process of its own and reads its result: the last line it prints, as JSON. */
import { type SpawnOptions, spawn } from "node:child_process";

export function runJsonChild<T>(
  command: string,
  args: readonly string[],
  options: Pick<SpawnOptions, "cwd" | "env">,
  failure: string,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      try {
        resolve(JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as T);
      } catch {
        reject(new Error(`${failure} (exit ${code}): ${stderr.slice(-2000)}`));
      }
    });
  });
}
