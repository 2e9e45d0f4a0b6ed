/** How `npm start` reads its command line and environment, and the lines it prints per request. */
import { describe, expect, it } from "vitest";
import type { RequestLogEntry } from "../../local/server";
import { createStartLog, requestLine } from "../../local/startLog";
import {
  apiPortNote,
  parseStartArguments,
  START_USAGE,
  type StartOptions,
  StartupError,
} from "../../local/startOptions";

function options(argv: string[], env: NodeJS.ProcessEnv = {}, isTerminal = false): StartOptions {
  const command = parseStartArguments(argv, env, isTerminal);
  if (command.help) throw new Error("expected options, got help");
  return command.options;
}

function usageError(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseStartArguments(argv, env, false);
  } catch (error) {
    expect(error).toBeInstanceOf(StartupError);
    return (error as Error).message;
  }
  throw new Error("expected a StartupError");
}

describe("npm start's options", () => {
  it("asks for help with --help or -h", () => {
    expect(parseStartArguments(["--help"], {}, false)).toEqual({ help: true });
    expect(parseStartArguments(["-h"], {}, false)).toEqual({ help: true });
  });

  it("names every option and environment variable in its help", () => {
    for (const name of [
      "--port",
      "--dynamodb-port",
      "--in-memory",
      "--help",
      "PORT",
      "DYNAMODB_PORT",
      "DYNAMODB_ENDPOINT",
      "PETSTORE_API_KEY",
      "PETS_TABLE_NAME",
      "PETSTORE_LOG_FORMAT",
      "LOG_LEVEL",
    ]) {
      expect(START_USAGE).toMatch(new RegExp(`(^|\\s)${name}\\b`, "m"));
    }
  });

  it("says in its help that an unpinned start makes a new key and revokes the previous one, and keeps no key on disk", () => {
    expect(START_USAGE).toContain("Unset: a new key at each start, and the previous start's key is revoked");
    expect(START_USAGE).toContain("from npm run keys -- create --name me");
    expect(START_USAGE).not.toMatch(/saved|local-api-key/);
  });

  it("defaults to ports 3000 and 8000, the embedded DynamoDB on disk and the table petstore-local", () => {
    expect(options([])).toMatchObject({
      apiPort: 3000,
      dynamoPort: 8000,
      dynamoEndpoint: undefined,
      inMemory: false,
      pinnedKey: undefined,
      tableName: "petstore-local",
    });
  });

  it("takes the API port from --port N or --port=N before PORT", () => {
    expect(options(["--port", "3001"], { PORT: "4000" }).apiPort).toBe(3001);
    expect(options(["--port=3002"], { PORT: "4000" }).apiPort).toBe(3002);
    expect(options([], { PORT: "4000" }).apiPort).toBe(4000);
  });

  it("takes the embedded DynamoDB's port from --dynamodb-port N before DYNAMODB_PORT", () => {
    expect(options(["--dynamodb-port", "8123"], { DYNAMODB_PORT: "9000" }).dynamoPort).toBe(8123);
    expect(options(["--dynamodb-port=8124", "--port", "3001"]).dynamoPort).toBe(8124);
    expect(options([], { DYNAMODB_PORT: "9000" }).dynamoPort).toBe(9000);
    // npm start --dynamodb-port 8125 (without --), and npm start --dynamodb-port=8126
    expect(options(["8125"], { npm_config_dynamodb_port: "true" }).dynamoPort).toBe(8125);
    expect(options([], { npm_config_dynamodb_port: "8126", npm_config_port: "3007" })).toMatchObject({
      dynamoPort: 8126,
      apiPort: 3007,
    });
  });

  it("refuses --dynamodb-port without a port, beside DYNAMODB_ENDPOINT, or with --port where npm mixes up their values", () => {
    expect(usageError(["--dynamodb-port"])).toBe(
      "--dynamodb-port needs a port number, as in --dynamodb-port 8001; see: npm start -- --help",
    );
    expect(usageError(["--dynamodb-port", "dynamo"])).toBe(
      '--dynamodb-port must be a port number (0 to 65535), not "dynamo".',
    );
    expect(usageError(["--dynamodb-port", "8001"], { DYNAMODB_ENDPOINT: "http://127.0.0.1:9000" })).toBe(
      "--dynamodb-port is the port of the embedded DynamoDB, and DYNAMODB_ENDPOINT names another one instead: give one of them.",
    );
    // npm start --port 3001 --dynamodb-port 8001: npm hands on "3001" and "8001", whose is whose unknown.
    expect(usageError(["3001", "8001"], { npm_config_port: "true", npm_config_dynamodb_port: "true" })).toBe(
      "npm took --port and --dynamodb-port as its own settings; give them after --: npm start -- --port N --dynamodb-port N",
    );
  });

  it("honours --port and --in-memory given without --, which npm passes on as its own settings", () => {
    // npm start --port 3005 --in-memory
    expect(options(["3005"], { npm_config_port: "true", npm_config_in_memory: "true" })).toMatchObject({
      apiPort: 3005,
      inMemory: true,
      inMemoryFromNpm: true,
    });
    // npm start --port=3006
    expect(options([], { npm_config_port: "3006" }).apiPort).toBe(3006);
    // npm start --in-memory=false
    expect(options([], { npm_config_in_memory: "" }).inMemory).toBe(false);
    expect(options(["--in-memory"]).inMemoryFromNpm).toBe(false);
  });

  it("says where the API port came from: --port, npm start --port (npm_config_port), PORT, or the default", () => {
    expect(options(["--port", "3001"], { PORT: "4000", npm_config_port: "3002" })).toMatchObject({
      apiPort: 3001,
      apiPortSource: "--port",
    });
    // npm 11: npm start --port 8080 sets npm_config_port=true and passes 8080 on as an argument.
    expect(options(["8080"], { npm_config_port: "true", PORT: "4000" })).toMatchObject({
      apiPort: 8080,
      apiPortSource: "npm_config_port",
    });
    expect(options([], { npm_config_port: "8081" })).toMatchObject({ apiPort: 8081, apiPortSource: "npm_config_port" });
    expect(options([], { PORT: "4000" })).toMatchObject({ apiPort: 4000, apiPortSource: "PORT" });
    expect(options([])).toMatchObject({ apiPort: 3000, apiPortSource: "default" });
    expect(apiPortNote("default")).toBe("(the default port; another: npm start -- --port N)");
    expect(apiPortNote("npm_config_port")).toBe("(port from npm start --port, which npm passes on as npm_config_port)");
  });

  it("refuses npm start --port without a port number, or with something else, in one line", () => {
    // npm start --port
    expect(usageError([], { npm_config_port: "true" })).toBe(
      "--port needs a port number, as in --port 3001; see: npm start -- --help",
    );
    // npm start --port abc, and npm start --port=abc
    expect(usageError(["abc"], { npm_config_port: "true" })).toBe(
      '--port must be a port number (0 to 65535), not "abc".',
    );
    expect(usageError([], { npm_config_port: "abc" })).toBe('--port must be a port number (0 to 65535), not "abc".');
  });

  it("refuses unknown options, stray arguments and bad ports in one line that points to --help", () => {
    expect(usageError(["--verbose"])).toBe("unknown option --verbose; see: npm start -- --help");
    expect(usageError(["-x"])).toBe("unknown option -x; see: npm start -- --help");
    expect(usageError(["now"])).toBe('unexpected argument "now"; see: npm start -- --help');
    expect(usageError(["--port"])).toBe("--port needs a port number, as in --port 3001; see: npm start -- --help");
    expect(usageError(["--port", "http"])).toBe('--port must be a port number (0 to 65535), not "http".');
    expect(usageError([], { PORT: "70000" })).toBe('PORT must be a port number (0 to 65535), not "70000".');
    expect(usageError([], { DYNAMODB_PORT: "x" })).toBe('DYNAMODB_PORT must be a port number (0 to 65535), not "x".');
    expect(usageError(["--in-memory=yes"])).toBe("--in-memory takes no value; see: npm start -- --help");
    expect(usageError([], { DYNAMODB_ENDPOINT: "localhost 8000" })).toMatch(/^DYNAMODB_ENDPOINT must be a URL/);
  });

  it("logs pretty on a terminal and JSON elsewhere, unless PETSTORE_LOG_FORMAT says which", () => {
    expect(options([], {}, true).logFormat).toBe("pretty");
    expect(options([], {}, false).logFormat).toBe("json");
    expect(options([], { PETSTORE_LOG_FORMAT: "json" }, true).logFormat).toBe("json");
    expect(options([], { PETSTORE_LOG_FORMAT: "pretty" }, false).logFormat).toBe("pretty");
    expect(usageError([], { PETSTORE_LOG_FORMAT: "text" })).toBe(
      'PETSTORE_LOG_FORMAT must be pretty or json, not "text".',
    );
  });
});

describe("npm start's request lines", () => {
  const entry: RequestLogEntry = {
    method: "POST",
    path: "/v1/pets",
    status: 201,
    durationMs: 3.0625,
    requestId: "4f0c-request",
  };
  const at = new Date("2027-03-01T12:00:00.000Z");

  it("reads as method, path, status, time and request id on a terminal", () => {
    expect(requestLine(entry, "pretty")).toBe("POST /v1/pets 201 3.1ms 4f0c-request");
  });

  it("names the error code after the status of an error answer", () => {
    expect(requestLine({ ...entry, status: 401, errorCode: "unauthorized" }, "pretty")).toBe(
      "POST /v1/pets 401 unauthorized 3.1ms 4f0c-request",
    );
  });

  it("marks a create answered as an idempotent replay", () => {
    expect(requestLine({ ...entry, replayed: true }, "pretty")).toBe("POST /v1/pets 201 replayed 3.1ms 4f0c-request");
  });

  it("carries the same facts as JSON fields", () => {
    expect(JSON.parse(requestLine({ ...entry, status: 415, errorCode: "unsupported_media_type" }, "json", at))).toEqual(
      {
        timestamp: "2027-03-01T12:00:00.000Z",
        level: "INFO",
        message: "gateway",
        method: "POST",
        path: "/v1/pets",
        status: 415,
        durationMs: 3.0625,
        requestId: "4f0c-request",
        errorCode: "unsupported_media_type",
      },
    );
    expect(JSON.parse(requestLine({ ...entry, replayed: true }, "json", at))).toMatchObject({ replayed: true });
  });
});

describe("npm start's other lines", () => {
  function capture(format: "pretty" | "json") {
    const out: string[] = [];
    const err: string[] = [];
    const log = createStartLog(
      format,
      (line) => out.push(line),
      (line) => err.push(line),
    );
    return { log, out, err };
  }

  it("end with Stopped. on a terminal after saying what it waits for", () => {
    const { log, out } = capture("pretty");

    log.stopping("SIGINT");
    log.stopped();

    expect(out).toEqual(["\nSIGINT: finishing requests in flight, then closing the database...", "Stopped."]);
  });

  it("are JSON events in the JSON format, a failed handler at ERROR on stderr", () => {
    const { log, out, err } = capture("json");

    log.stopping("SIGTERM");
    log.stopped();
    log.handlerFailed(new Error("module not found"));

    expect(out.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: "INFO", message: "stopping", signal: "SIGTERM" }),
      expect.objectContaining({ level: "INFO", message: "stopped" }),
    ]);
    expect(JSON.parse(err[0] ?? "")).toMatchObject({
      level: "ERROR",
      message: "handler failed",
      error: "Error: module not found",
    });
  });

  it("show a failed handler's stack on a terminal", () => {
    const { log, err } = capture("pretty");

    log.handlerFailed(new Error("module not found"));

    expect(err[0]).toMatch(/^ERROR handler failed: Error: module not found\n\s+at /);
  });
});
