// One cold start (./cold.ts), run by a bare `node` outside the project: loads the bundle named first as Lambda does
// (.mjs imported, .js required: https://docs.aws.amazon.com/lambda/latest/dg/lambda-nodejs.html#designate-es-module),
// invokes it once with the JSON event given second, reports the answer on fd 3 and exits; with no bundle, at once.
import { writeSync } from "node:fs";
import { createRequire } from "node:module";

const [target, event] = process.argv.slice(2);
let answer = {};
if (target) {
  const { handler } = target.endsWith(".js") ? createRequire(import.meta.url)(target) : await import(target);
  const name = process.env.AWS_LAMBDA_FUNCTION_NAME;
  const deadline = Date.now() + 10_000; // the functions' timeout (infra/config.ts)
  // The context object's fields: https://docs.aws.amazon.com/lambda/latest/dg/nodejs-context.html
  const result = await handler(JSON.parse(event), {
    awsRequestId: "c6af9ac6-7b61-11e6-9a41-93e812345678",
    functionName: name,
    functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION}:000000000000:function:${name}`,
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: "2026/01/01/[$LATEST]cold",
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  });
  answer = { statusCode: result?.statusCode, body: String(result?.body).slice(0, 500) };
}
writeSync(3, `${JSON.stringify(answer)}\n`);
process.exit(0); // the SDK's keep-alive sockets must not hold the next run back
