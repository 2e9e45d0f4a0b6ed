// The rehearsal's stand-in for the Lambda Node.js runtime: loads the function's handler from
// LAMBDA_TASK_ROOT as the runtime interface client does (UserFunction.js in
// https://github.com/aws/aws-lambda-nodejs-runtime-interface-client) and invokes it with the events
// the parent sends over the IPC channel. Plain JavaScript with no imports outside node:, so that
// nothing of the repository is reachable from the function's process.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
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

// The runtime's order: an extensionless file is required; `.js` is required unless the nearest
// package.json says "type": "module"; then `.js`, `.mjs` are imported and `.cjs` required.
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

const timeoutMs = Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT ?? "3") * 1000;
const handlerPromise = loadHandler(process.env.LAMBDA_TASK_ROOT, process.env._HANDLER);
handlerPromise.then(
  () => process.send({ type: "ready" }),
  (error) => process.send({ type: "initError", error: describe(error) }),
);

let requests = 0;
process.on("message", async (message) => {
  if (message?.type !== "invoke") return;
  requests += 1;
  const started = Date.now();
  const context = {
    awsRequestId: `rehearsal-${process.pid}-${requests}`,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    invokedFunctionArn: message.invokedFunctionArn,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: "rehearsal",
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
  };
  try {
    const handler = await handlerPromise;
    const result = await new Promise((resolvePromise, reject) => {
      const returned = handler(message.event, context, (error, value) =>
        error ? reject(error) : resolvePromise(value),
      );
      if (returned && typeof returned.then === "function") returned.then(resolvePromise, reject);
    });
    process.send({ type: "result", id: message.id, result: result === undefined ? null : result });
  } catch (error) {
    process.send({ type: "result", id: message.id, error: describe(error) });
  }
});
