/**
 * `npm start --port N` as a newcomer types it, through the real npm: npm 11 keeps --port (and
 * --in-memory) as its own settings and passes them on as npm_config_*; npm start serves on that port
 * and says where the port came from, or refuses a port that is not a number in one line.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CLEAN_LOCAL_SERVER_ENV, freePort, projectRoot, type RunningProcess, runCommand } from "../support/processes";

const started: RunningProcess[] = [];
afterEach(() => {
  for (const run of started.splice(0)) if (run.child.exitCode === null) run.killGroup("SIGTERM");
});

/** `npm <args>` in the project, its own process group, with none of the outer npm's settings. */
async function npm(args: string[]): Promise<RunningProcess> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_config_/i.test(name)));
  const run = runCommand("npm", args, {
    cwd: projectRoot,
    env: {
      ...env,
      ...CLEAN_LOCAL_SERVER_ENV,
      npm_config_port: undefined,
      npm_config_in_memory: undefined,
      PORT: "",
      DYNAMODB_PORT: String(await freePort()),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
    },
  });
  started.push(run);
  return run;
}

describe("npm start --port N, without --", { timeout: 90_000 }, () => {
  it("serves on that port and says it came from npm start --port", async () => {
    const port = await freePort();
    const run = await npm(["start", "--port", String(port), "--in-memory"]);

    const [, baseUrl, note] = await run.waitFor(/^Pet Store API on (\S+) (.*)$/m, 60_000);

    expect(baseUrl).toBe(`http://127.0.0.1:${port}/v1`);
    expect(note).toBe("(port from npm start --port, which npm passes on as npm_config_port)");
    expect((await fetch(`${baseUrl}/pets`)).status).toBe(401);
  });

  it("refuses a port that is not a number in one line, exit 1, and binds nothing", async () => {
    const run = await npm(["start", "--port", "http", "--in-memory"]);

    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('npm start: --port must be a port number (0 to 65535), not "http".\n');
    expect(run.output()).not.toMatch(/Pet Store API on|^\s+at /m);
  });
});
