/**
 * The esbuild options of every Lambda bundle. The CDK stack (NodejsFunction) and the benchmark
 * both build from this object, so the bundle measured is the bundle deployed.
 */
import type { BuildOptions } from "esbuild";

/**
 * Credential providers the Lambda runtime never reaches: a function's credentials are in its
 * environment, which the default chain reads first. The SDK loads these lazily, so leaving them
 * out of the bundle only removes code that would never run there.
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
] as const;

/** Node version the bundles target: the functions' runtime (infra/stacks/petStoreStack.ts; a test keeps them equal). */
export const LAMBDA_NODE_TARGET = "node24";

export const lambdaEsbuildOptions = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: LAMBDA_NODE_TARGET,
  minify: true,
  sourcemap: false,
  legalComments: "none",
  // Prefer the SDK's ES module builds, which tree-shake better.
  mainFields: ["module", "main"],
  external: [...UNUSED_CREDENTIAL_PROVIDERS],
  // Some CommonJS dependencies call require(); ESM output needs one defined.
  banner: { js: "import{createRequire as __cr}from'module';const require=__cr(import.meta.url);" },
} as const satisfies BuildOptions;
