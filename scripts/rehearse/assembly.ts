/**
 * Reads a cloud assembly with `aws-cdk-lib/cx-api`, as the CLI does before a deploy
 * (https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.cx_api.CloudAssembly.html). Stacks and resources are found
 * by walking the manifests and by type, never by id, so the rehearsal follows the app as it changes.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Manifest, VERSION_MISMATCH } from "aws-cdk-lib/cloud-assembly-schema";
import {
  AssetManifestArtifact,
  CloudAssembly,
  type CloudFormationStackArtifact,
  UNKNOWN_ACCOUNT,
  UNKNOWN_REGION,
} from "aws-cdk-lib/cx-api";

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
}

export interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, { Value: unknown; Export?: { Name: unknown } }>;
}

export interface AssemblyStack {
  /** The artifact id in the manifest. */
  readonly artifactId: string;
  /** CDK's display name, `Production/PetStore`: what people pass to `cdk deploy`. */
  readonly displayName: string;
  readonly stackName: string;
  /** The pinned account, or `unknown-account` when the stack is environment-agnostic. */
  readonly account: string;
  /** The pinned region, or `unknown-region` when the stack is environment-agnostic. */
  readonly region: string;
  /**
   * Whether the manifest names a real account and region: an environment-agnostic stack's are known only at deploy time
   * (https://docs.aws.amazon.com/cdk/v2/guide/environments.html), so derived ARNs would be made up.
   */
  readonly pinned: boolean;
  readonly template: CfnTemplate;
  /** The template's absolute path (tests that break a template write it back there). */
  readonly templateFile: string;
  /** S3 object key of each file asset → the asset's directory (or file) in the assembly. */
  readonly assets: ReadonlyMap<string, string>;
  /** Logical id → construct path, from the stack's metadata (empty when none was written). */
  readonly constructPaths: ReadonlyMap<string, string>;
  /** Artifact ids of what the CLI deploys before this stack (a stage's data stack, asset manifests). */
  readonly dependencies: readonly string[];
}

/** The assembly cannot be read as one: the input is wrong, not the rehearsal. */
export class AssemblyError extends Error {
  override readonly name = "AssemblyError";
}

const MANIFEST = "manifest.json";

/**
 * `[--assembly DIR] [--help]`, the arguments of npm run rehearse and npm run lint:cfn. A mistake throws an
 * AssemblyArgumentError of one line, without the period, for the command to add its usage.
 */
export function assemblyArguments(argv: readonly string[]): { assembly?: string; help: boolean } {
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: { assembly: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    if (values.assembly === "") throw new AssemblyArgumentError("--assembly needs a directory");
    return { ...(values.assembly === undefined ? {} : { assembly: values.assembly }), help: values.help ?? false };
  } catch (error) {
    if (error instanceof AssemblyArgumentError) throw error;
    const { code, message } = error as Error & { code?: string };
    // `--assembly` last, or followed by another option: parseArgs calls the value missing or ambiguous.
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && message.includes("'--assembly")) {
      throw new AssemblyArgumentError("--assembly needs a directory");
    }
    // parseArgs's own messages ("Unknown option '--bogus'"); a few span lines, the first says it.
    throw new AssemblyArgumentError((message.split("\n")[0] ?? "").replace(/\.$/, ""));
  }
}

export class AssemblyArgumentError extends Error {}

/** Every CloudFormation stack of the assembly, nested stage assemblies included. */
export function readAssembly(directory: string): AssemblyStack[] {
  const root = resolve(directory);
  if (!existsSync(join(root, MANIFEST))) {
    throw new AssemblyError(
      `${directory} is not a cloud assembly (no ${MANIFEST}); synthesize one with npx cdk synth -o ${directory}`,
    );
  }
  const synthCommand = `npx cdk synth -o ${directory}`;
  // In manifest order, as the CLI loads it ("we sort as we deploy"): staging's stacks before production's, so the
  // report follows the pipeline.
  const assembly = reading(join(root, MANIFEST), synthCommand, () => new CloudAssembly(root, { topoSort: false }));
  loadNestedAssemblies(assembly, synthCommand);
  return assembly.stacksRecursively.map((stack) => readStack(stack, synthCommand));
}

/**
 * Loads each nested (stage) assembly once, so that a broken nested manifest is reported by its own path;
 * `stacksRecursively` then walks the loaded ones (cx-api keeps each nested assembly it loads).
 */
function loadNestedAssemblies(assembly: CloudAssembly, synthCommand: string): void {
  for (const nested of assembly.nestedAssemblies) {
    loadNestedAssemblies(
      reading(join(nested.fullPath, MANIFEST), synthCommand, () => nested.nestedAssembly),
      synthCommand,
    );
  }
}

function readStack(stack: CloudFormationStackArtifact, synthCommand: string): AssemblyStack {
  const { account, region } = stack.environment;
  const templateFile = resolve(stack.templateFullPath);
  const template = reading(templateFile, synthCommand, () => stack.template as CfnTemplate);
  if (typeof template?.Resources !== "object" || template.Resources === null) {
    throw new AssemblyError(
      `${templateFile} is not a CloudFormation template (no Resources); synthesize the assembly again (${synthCommand})`,
    );
  }
  // The CDK writes a stack's metadata into a file of its own, which the manifest names.
  const metadataFile = join(stack.assembly.directory, stack.manifest.additionalMetadataFile ?? MANIFEST);
  const constructPaths = new Map(
    reading(resolve(metadataFile), synthCommand, () => stack.findMetadataByType("aws:cdk:logicalId")).map(
      (entry) => [String(entry.data), entry.path] as const,
    ),
  );
  return {
    artifactId: stack.id,
    // cx-api's own `displayName` adds the stack name in parentheses when it differs from the artifact id; the
    // hierarchical id is the name `cdk deploy` selects stacks by.
    displayName: stack.hierarchicalId,
    stackName: stack.stackName,
    account,
    region,
    pinned: account !== UNKNOWN_ACCOUNT && region !== UNKNOWN_REGION,
    template,
    templateFile,
    assets: fileAssets(stack, synthCommand),
    constructPaths,
    dependencies: stack.dependencies.map((dependency) => dependency.id),
  };
}

/**
 * The file assets the CLI publishes before a deploy, from the stack's asset manifest: each source and the S3 key the
 * template's `Code.S3Key` names (https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.cloud_assembly_schema.FileAsset.html).
 */
function fileAssets(stack: CloudFormationStackArtifact, synthCommand: string): Map<string, string> {
  const assets = new Map<string, string>();
  for (const dependency of stack.dependencies) {
    if (!AssetManifestArtifact.isAssetManifestArtifact(dependency)) continue;
    const { files } = reading(dependency.file, synthCommand, () => dependency.contents);
    for (const asset of Object.values(files ?? {})) {
      // An asset an executable produces at publish time has no source in the assembly to run.
      if (!asset.source.path) continue;
      for (const destination of Object.values(asset.destinations)) {
        assets.set(destination.objectKey, resolve(dirname(dependency.file), asset.source.path));
      }
    }
  }
  return assets;
}

/** `read()`, with whatever it throws turned into one AssemblyError line naming `file`. */
function reading<T>(file: string, synthCommand: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof AssemblyError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    if (message.includes(VERSION_MISMATCH)) {
      throw new AssemblyError(
        `${file} was written by a newer CDK than this project's aws-cdk-lib reads (schema up to ${Manifest.version()}): synthesize it again with this project's CDK (${synthCommand}), or upgrade aws-cdk-lib`,
      );
    }
    const { code, path } = error as NodeJS.ErrnoException;
    if (code === "ENOENT" && path) {
      const namedIn = resolve(path) === file ? "" : ` (named in ${file})`;
      throw new AssemblyError(`${path} does not exist${namedIn}: synthesize the assembly again (${synthCommand})`);
    }
    // cx-api appends the whole file to a JSON syntax error, and some of its messages span lines.
    const reason = (message.split(", while parsing ")[0] ?? message).replace(/\s*\n\s*/g, " ");
    throw new AssemblyError(`cannot read ${file}: ${reason}; synthesize the assembly again (${synthCommand})`);
  }
}

/** The resources of a type, as [logicalId, resource] pairs. */
export function resourcesOf(template: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
}
