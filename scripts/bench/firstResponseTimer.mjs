// Run by `node` with no loader and no flags, in a fresh process per measurement, outside the project
// (as Lambda runs a function from /var/task): imports the bundle named on the command line and
// invokes its handler once with the event given as JSON, as the first request of a cold start.
// Reports on fd 3, not stdout: the handler writes its own log lines to stdout.
// Nothing is loaded before the bundle, so that the bundle pays for every module it loads. Not even
// the `performance` global: its first use loads 11 internal modules (perf_hooks), which the
// functions' request telemetry would then find loaded and the baseline never needs.
const bootMs = process.uptime() * 1000; // Since the process started: Node's own boot.
const now = () => Number(process.hrtime.bigint()) / 1e6;
const [target, eventJson] = process.argv.slice(2);
const event = JSON.parse(eventJson);
// The functions' timeout (infra/config.ts): what getRemainingTimeInMillis counts down from.
const timeoutMs = 10_000;

const started = now();
const { handler } = await import(target);
const imported = now();
const invokedAt = Date.now();
// The fields of Lambda's context object the Node.js runtime passes:
// https://docs.aws.amazon.com/lambda/latest/dg/nodejs-context.html
const context = {
  awsRequestId: "c6af9ac6-7b61-11e6-9a41-93e812345678",
  functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
  functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
  memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
  invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:000000000000:function:${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
  logGroupName: `/aws/lambda/${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
  logStreamName: "2026/01/01/[$LATEST]firstresponse",
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => Math.max(0, invokedAt + timeoutMs - Date.now()),
};
const result = await handler(event, context);
const answered = now();

const { writeSync } = await import("node:fs");
const importMs = imported - started;
const firstRequestMs = answered - imported;
writeSync(
  3,
  `${JSON.stringify({
    bootMs,
    importMs,
    firstRequestMs,
    firstResponseMs: importMs + firstRequestMs,
    statusCode: result?.statusCode,
    body: typeof result?.body === "string" ? result.body.slice(0, 2000) : null,
  })}\n`,
);
// Whatever the handler left open (the SDK's keep-alive sockets) must not hold the next run back.
process.exit(0);
