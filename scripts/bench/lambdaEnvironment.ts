/**
 * What Lambda sets in every function's environment
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime), for the
 * bench's processes that run a function as Lambda does: the warm middleware measurement and the cold request. Each adds
 * what its own measurement needs.
 */
import { randomBytes } from "node:crypto";
import { dirname } from "node:path";

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

/**
 * A deployed function's process environment, and nothing else: PATH to its `node`, what Lambda sets, and what the stack
 * adds (infra/stacks/petStoreStack.ts: table, stage, log level).
 */
export function functionEnvironment(
  fn: LambdaFunction & { node: string; tableName: string; stage: string },
): Record<string, string> {
  return {
    PATH: `${dirname(fn.node)}:/usr/local/bin:/usr/bin:/bin`,
    ...lambdaRuntimeVariables(fn),
    PETS_TABLE_NAME: fn.tableName,
    PETSTORE_STAGE: fn.stage,
    LOG_LEVEL: "INFO",
  };
}

/**
 * `nodePath` only for a bundle that leaves the SDK to the runtime (Lambda's NODE_PATH includes
 * /var/runtime/node_modules, where its SDK is, link above); `dynamo.caFile` makes `endpoint` trusted.
 */
type ColdEnvironmentOptions = Omit<LambdaFunction, "region" | "version"> & {
  node: string;
  dynamo: { endpoint: string; caFile: string; tableName: string };
  stage: string;
  nodePath?: string;
};

/**
 * A cold function's environment: Lambda's variables, the stack's, and AWS_ENDPOINT_URL_DYNAMODB for the local endpoint
 * (https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html); not DYNAMODB_ENDPOINT, which gives
 * static local credentials, as Lambda never does.
 */
export function coldEnvironment(options: ColdEnvironmentOptions): Record<string, string> {
  const { tableName } = options.dynamo;
  return {
    ...functionEnvironment({ ...options, tableName, region: "us-east-1", version: "1" }),
    ...(options.nodePath ? { NODE_PATH: options.nodePath } : {}),
    // Where the bundle is; no ~/.aws within reach.
    HOME: options.taskRoot,
    // The execution role's temporary credentials, as Lambda hands them over (fake: dynalite accepts any).
    AWS_ACCESS_KEY_ID: "ASIABENCHCOLDSTART",
    AWS_SECRET_ACCESS_KEY: "bench-cold-start-secret",
    AWS_SESSION_TOKEN: "bench-cold-start-session-token",
    _X_AMZN_TRACE_ID: lambdaTraceHeader(),
    AWS_ENDPOINT_URL_DYNAMODB: options.dynamo.endpoint,
    NODE_EXTRA_CA_CERTS: options.dynamo.caFile,
  };
}
