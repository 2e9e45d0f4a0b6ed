/**
 * `npm start --in-memory` as a child process for the load run: its own process (so the server and the load generator
 * each get a core), on free ports, with a pinned key.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { generateApiKey } from "../../lib/auth/apiKeys";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no free port");
  return address.port;
}

export interface LoadTarget {
  readonly baseUrl: string;
  readonly key: string;
  /** Lines the server logged at level ERROR (a 5xx, a failed handler), for the report. */
  readonly errorLines: string[];
  stop(): Promise<void>;
}

export async function startServer(): Promise<LoadTarget> {
  const key = generateApiKey("local");
  const child = spawn(`${projectRoot}node_modules/.bin/tsx`, [`${projectRoot}local/main.ts`, "--in-memory"], {
    cwd: projectRoot,
    // Its own process group, so that stopping it also ends the node process tsx starts.
    detached: true,
    env: {
      ...process.env,
      PORT: String(await freePort()),
      DYNAMODB_PORT: String(await freePort()),
      DYNAMODB_ENDPOINT: "",
      PETSTORE_API_KEY: key,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const errorLines: string[] = [];
  let banner = "";
  let pending = "";
  const read = (chunk: Buffer) => {
    const text = pending + chunk.toString("utf8");
    const lines = text.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (banner.length < 4096) banner += `${line}\n`;
      if (line.includes('"level":"ERROR"') || line.startsWith("Error")) errorLines.push(line);
    }
  };
  child.stdout.on("data", read);
  child.stderr.on("data", read);
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));

  const baseUrl = await new Promise<string>((resolve, reject) => {
    const check = setInterval(() => {
      const match = /Pet Store API on (\S+)/.exec(banner);
      if (match?.[1]) {
        clearInterval(check);
        resolve(match[1]);
      }
    }, 50);
    exited.then((code) => {
      clearInterval(check);
      reject(new Error(`npm start exited ${code} before serving:\n${banner}`));
    });
  });

  return {
    baseUrl,
    key,
    errorLines,
    stop: async () => {
      if (child.exitCode !== null) return;
      // Ctrl-C, as a developer would (tsx relays it): main.ts finishes requests in flight and closes the database.
      child.kill("SIGINT");
      await exited;
    },
  };
}
