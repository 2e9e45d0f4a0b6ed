/** CDK's form of the shared esbuild options (infra/bundling.ts), for every function of the stack. */
import { LogLevel, type NodejsFunctionProps, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { lambdaEsbuildOptions } from "../bundling";

export function cdkBundling(): NonNullable<NodejsFunctionProps["bundling"]> {
  const options = lambdaEsbuildOptions;
  return {
    format: OutputFormat.ESM,
    target: options.target,
    minify: options.minify,
    sourceMap: options.sourcemap,
    mainFields: [...options.mainFields],
    // The SDK is bundled (pinned, tree-shaken), so only what the options name stays external.
    bundleAwsSDK: true,
    externalModules: [...options.external],
    banner: options.banner.js,
    // esbuild's size table and "Done" line, for each function on every synth, say nothing to act on.
    logLevel: LogLevel.WARNING,
    esbuildArgs: {
      "--legal-comments": options.legalComments,
      "--alias": Object.entries(options.alias).map(([from, to]) => `${from}=${to}`),
    },
  };
}
