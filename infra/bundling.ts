/**
 * The esbuild options of every Lambda bundle. The CDK stack (NodejsFunction) and the benchmark
 * both build from this object, so the bundle measured is the bundle deployed.
 */
import type { BuildOptions } from "esbuild";

/**
 * Credential providers the Lambda runtime never reaches: a function's credentials are in its
 * environment, which the default chain reads first. The SDK loads these lazily, so leaving them
 * out of the bundle only removes code that would never run there. The last two are the chain's
 * remote fallbacks (container and instance metadata), reached only when the environment has no
 * credentials; they are 17 KB of each bundle (npm run bench checks they stay lazy imports: scripts/bench/build.ts).
 */
export const UNUSED_CREDENTIAL_PROVIDERS = [
  "@aws-sdk/credential-provider-ini",
  "@aws-sdk/credential-provider-process",
  "@aws-sdk/credential-provider-sso",
  "@aws-sdk/credential-provider-web-identity",
  "@aws-sdk/token-providers",
  "@aws-sdk/client-sso",
  "@aws-sdk/client-sso-oidc",
  "@aws-sdk/client-sts",
  "@aws-sdk/credential-provider-http",
  "@smithy/credential-provider-imds",
] as const;

/**
 * SDK code no DynamoDB operation reaches: the SDK imports event-stream support lazily, only for
 * operations with an event stream, and DynamoDB has none. 20 KB of each bundle. A client added
 * later that streams events (Kinesis, Bedrock, …) would need it back.
 */
export const UNREACHED_SDK_MODULES = ["@smithy/core/event-streams"] as const;

/**
 * Modules replaced in the bundles, as paths from the project root (esbuild resolves an alias in
 * its working directory, which is the project root for both CDK and the bench). Only @middy/core
 * imports node:stream/web, for streamed responses these functions never give; the bench fails if
 * anything else starts importing it (scripts/bench/build.ts).
 */
export const MODULE_ALIASES = { "node:stream/web": "./infra/shims/nodeStreamWeb.ts" } as const;

/**
 * The SDK's default credential chain, replaced by its first link: the environment variables the
 * Lambda runtime sets for every function (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN: https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 * The chain reads them first too, and every other link of it is already left out above, so in
 * Lambda the same credentials are found with less code loaded and no chain to walk on the first request.
 */
export const CREDENTIAL_ALIASES = {
  "@aws-sdk/credential-provider-node": "./infra/shims/lambdaCredentials.ts",
} as const;

/** Node version the bundles target: the functions' runtime (infra/stacks/petStoreStack.ts; a test keeps them equal). */
export const LAMBDA_NODE_TARGET = "node24";

/**
 * How every Lambda bundle is built: bundled, minified ESM for the functions' Node, preferring the
 * SDK's ES module builds (they tree-shake better), without the code left out above and with the
 * stand-ins of the aliases. npm run bench builds its floor handler with exactly these options too.
 */
export const lambdaEsbuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: LAMBDA_NODE_TARGET,
  minify: true,
  sourcemap: false,
  legalComments: "none",
  mainFields: ["module", "main"],
  // Some CommonJS dependencies call require(); ESM output needs one defined.
  banner: { js: "import{createRequire as __cr}from'module';const require=__cr(import.meta.url);" },
  external: [...UNUSED_CREDENTIAL_PROVIDERS, ...UNREACHED_SDK_MODULES],
  alias: { ...MODULE_ALIASES, ...CREDENTIAL_ALIASES },
} as const satisfies BuildOptions;
