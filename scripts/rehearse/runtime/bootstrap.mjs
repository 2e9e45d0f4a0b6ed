// The rehearsal's stand-in for Lambda's Node.js runtime: loads the handler from LAMBDA_TASK_ROOT as the runtime
// interface client does (https://github.com/aws/aws-lambda-nodejs-runtime-interface-client), refuses at init what it
// refuses, and invokes it with the events the parent (../lambdaRuntime.ts) sends over IPC. Plain JavaScript importing
// only node:, so nothing of the repository is reachable from the function's process.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

class RuntimeError extends Error {
  constructor(name, message) {
    super(message);
    this.name = name;
  }
}

function packageTypeIsModule(file) {
  let dir = dirname(file);
  for (;;) {
    const manifest = resolve(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        return JSON.parse(readFileSync(manifest, "utf8")).type === "module";
      } catch {
        return false;
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return false;
    dir = parent;
  }
}

// The runtime's order: an extensionless file is required; `.js` is required unless the nearest package.json says
// "type": "module"; then `.js`, `.mjs` are imported and `.cjs` required.
async function loadModule(taskRoot, moduleRoot, moduleName) {
  const base = resolve(taskRoot, moduleRoot, moduleName);
  const require = createRequire(resolve(taskRoot, "index.js"));
  if (existsSync(base)) return require(base);
  if (!packageTypeIsModule(`${base}.js`) && existsSync(`${base}.js`)) return require(`${base}.js`);
  for (const extension of [".js", ".mjs"]) {
    if (existsSync(`${base}${extension}`)) return import(pathToFileURL(`${base}${extension}`).href);
  }
  if (existsSync(`${base}.cjs`)) return require(`${base}.cjs`);
  throw new RuntimeError("Runtime.ImportModuleError", `Error: Cannot find module '${moduleName}'`);
}

async function loadHandler(taskRoot, handlerString) {
  const match = /^([^.]*?\/)?([^./]+)\.(.+)$/.exec(handlerString ?? "");
  if (!match) throw new RuntimeError("Runtime.MalformedHandlerName", `Bad handler ${handlerString}`);
  const [, moduleRoot = "", moduleName, exportPath] = match;
  let loaded;
  try {
    loaded = await loadModule(taskRoot, moduleRoot, moduleName);
  } catch (error) {
    if (error instanceof RuntimeError) throw error;
    if (error?.code === "ERR_MODULE_NOT_FOUND" || error?.code === "MODULE_NOT_FOUND") {
      throw new RuntimeError("Runtime.ImportModuleError", String(error));
    }
    // An error thrown while the module initialises (a configuration check, for example) keeps its name.
    throw error;
  }
  let handler = loaded;
  for (const part of exportPath.split(".")) handler = handler?.[part];
  if (typeof handler !== "function") {
    throw new RuntimeError("Runtime.HandlerNotFound", `${handlerString} is undefined or not exported`);
  }
  return handler;
}

const describe = (error) => ({
  errorType: error?.name ?? "Error",
  errorMessage: error?.message ?? String(error),
});

// The runtime interface client marks a response-streaming handler with this symbol (awslambda.streamifyResponse);
// src/function/user-function-loader.ts, isHandlerStreaming.
const HANDLER_STREAMING = Symbol.for("aws.lambda.runtime.handler.streaming");

// Word for word the runtime interface client's CALLBACK_ERROR_NODEJS24_ABOVE (src/context/constants.ts in
// https://github.com/aws/aws-lambda-nodejs-runtime-interface-client).
const CALLBACK_HANDLER_DEPRECATED =
  "ERROR: AWS Lambda has removed support for callback-based function handlers starting with Node.js 24. You need to modify this function to use a supported handler signature to use Node.js 24 or later. For more information see https://docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html.";

const nodeMajorOfRuntime = () => Number(/^AWS_Lambda_nodejs(\d+)\.x$/.exec(process.env.AWS_EXECUTION_ENV ?? "")?.[1]);

// As the Node 24 runtime interface client (src/function/callback-deprecation.ts): a non-streaming handler declaring
// three or more parameters is a callback handler, refused at init with Runtime.CallbackHandlerDeprecated.
function refuseUnsupportedHandler(handler) {
  const streamingValue = handler[HANDLER_STREAMING];
  if (streamingValue && streamingValue !== "response") {
    throw new RuntimeError("Runtime.MalformedStreamingHandler", "Only response streaming is supported.");
  }
  const streaming = streamingValue === "response";
  if (nodeMajorOfRuntime() >= 24 && handler.length >= 3 && !streaming) {
    throw new RuntimeError("Runtime.CallbackHandlerDeprecated", CALLBACK_HANDLER_DEPRECATED);
  }
  if (streaming) {
    // Lambda would run it; the rehearsal has no response stream to give it, so it says so.
    throw new RuntimeError("Rehearsal.StreamingNotRehearsed", "response streaming handlers are not rehearsed");
  }
}

// The function's architecture, from the template's Architectures (the parent passes it: Lambda tells a function nothing
// of the kind, its processors are simply of that architecture), and this machine's.
const functionArchitecture = process.argv[2] ?? "x86_64";
const machineArchitecture = { x64: "x86_64", arm64: "arm64" }[process.arch] ?? process.arch;

// ELF e_machine values (System V ABI) of the architectures Lambda offers.
const ELF_MACHINES = new Map([
  [0x3e, "x86_64"],
  [0xb7, "arm64"],
]);

/** The architecture an ELF file is built for, or undefined for a file that is not ELF. */
function elfArchitecture(file) {
  const header = Buffer.alloc(20);
  const fd = openSync(file, "r");
  let length;
  try {
    length = readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (length < header.length || header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  // EI_DATA (byte 5) says the byte order of the rest: 2 is big-endian.
  const machine = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
  return ELF_MACHINES.get(machine) ?? `e_machine 0x${machine.toString(16)}`;
}

// Native code runs only on the architecture it was built for; Lambda fails on it only when loaded, the rehearsal at
// init, naming the file. Code for the function's architecture this machine cannot run is not rehearsed.
function refuseForeignNativeCode(taskRoot) {
  for (const entry of readdirSync(taskRoot, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const name = relative(taskRoot, file);
    const builtFor = elfArchitecture(file);
    if (builtFor === undefined && entry.name.endsWith(".node")) {
      throw new RuntimeError(
        "Runtime.InvalidArchitecture",
        `${name} is a native addon but not a Linux ELF binary, so it cannot run on Lambda's ${functionArchitecture}`,
      );
    }
    if (builtFor !== undefined && builtFor !== functionArchitecture) {
      throw new RuntimeError(
        "Runtime.InvalidArchitecture",
        `${name} is built for ${builtFor}, but the function's architecture is ${functionArchitecture}`,
      );
    }
    if (builtFor !== undefined && builtFor !== machineArchitecture) {
      throw new RuntimeError(
        "Rehearsal.NativeCodeNotRehearsed",
        `${name} is built for ${builtFor}, as the function is, which this ${machineArchitecture} machine cannot run`,
      );
    }
  }
}

async function init(taskRoot) {
  refuseForeignNativeCode(taskRoot);
  const handler = await loadHandler(taskRoot, process.env._HANDLER);
  refuseUnsupportedHandler(handler);
  return handler;
}

const handlerPromise = init(process.env.LAMBDA_TASK_ROOT);
handlerPromise.then(
  () => process.send({ type: "ready" }),
  (error) => process.send({ type: "initError", error: describe(error) }),
);

// The context the Node 24 runtime interface client builds (src/context/context-builder.ts): the request id, ARN and
// deadline come with each invoke (Lambda's lambda-runtime-* headers), the rest from the environment. No
// callbackWaitsForEmptyEventLoop: there is no callback any more.
const contextOf = (message) => ({
  awsRequestId: message.requestId,
  invokedFunctionArn: message.invokedFunctionArn,
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
  functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
  memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
  logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
  logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
  getRemainingTimeInMillis: () => message.deadlineMs - Date.now(),
});

process.on("message", async (message) => {
  if (message?.type !== "invoke") return;
  try {
    const handler = await handlerPromise;
    // As the Node 24 runtime invokes it: two arguments, the outcome awaited.
    const result = await handler(message.event, contextOf(message));
    process.send({ type: "result", id: message.id, result: result === undefined ? null : result });
  } catch (error) {
    process.send({ type: "result", id: message.id, error: describe(error) });
  }
});
