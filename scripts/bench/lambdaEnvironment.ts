/**
 * What Lambda sets in every function's environment
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime),
 * for the bench's processes that run a function as Lambda does: the warm middleware measurement
 * and the cold request. Each adds what its own measurement needs.
 */
import { randomBytes } from "node:crypto";

/** An X-Ray trace header as Lambda sets it for each invocation (_X_AMZN_TRACE_ID). */
export function lambdaTraceHeader(): string {
  const epoch = Math.floor(Date.now() / 1000).toString(16);
  return `Root=1-${epoch}-${randomBytes(12).toString("hex")};Parent=${randomBytes(8).toString("hex")};Sampled=1`;
}

export interface LambdaFunction {
  readonly functionName: string;
  readonly memoryMb: number;
  /** The Node major of the runtime: nodejs<major>.x. */
  readonly nodeMajor: string;
  readonly region: string;
  readonly version: string;
  /** Where the bundle is, as /var/task is in Lambda. */
  readonly taskRoot: string;
}

export function lambdaRuntimeVariables(fn: LambdaFunction): Record<string, string> {
  return {
    TZ: ":UTC",
    LANG: "en_US.UTF-8",
    AWS_REGION: fn.region,
    AWS_DEFAULT_REGION: fn.region,
    AWS_EXECUTION_ENV: `AWS_Lambda_nodejs${fn.nodeMajor}.x`,
    AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
    AWS_LAMBDA_FUNCTION_VERSION: fn.version,
    LAMBDA_TASK_ROOT: fn.taskRoot,
  };
}
