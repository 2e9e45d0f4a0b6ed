/**
 * Reads a cloud assembly (`cdk.out`) the way the CDK CLI does before a deploy: the manifest, the
 * nested stage assemblies, each stack's template, pinned environment and file assets. Nothing here
 * knows a stack id or a logical id: stacks and resources are found by walking the manifests and by
 * resource type, so that the rehearsal follows the app as it changes.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

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
  readonly account: string;
  readonly region: string;
  readonly template: CfnTemplate;
  readonly templateFile: string;
  /** S3 object key of each file asset → the asset's directory (or file) in the assembly. */
  readonly assets: ReadonlyMap<string, string>;
  /** Logical id → construct path, from the stack's metadata (empty when none was written). */
  readonly constructPaths: ReadonlyMap<string, string>;
  /** Artifact ids of what the CLI deploys before this stack (a stage's data stack, asset manifests). */
  readonly dependencies: readonly string[];
}

export class AssemblyError extends Error {
  override readonly name = "AssemblyError";
}

interface Manifest {
  artifacts?: Record<
    string,
    {
      type: string;
      environment?: string;
      displayName?: string;
      dependencies?: string[];
      properties?: Record<string, unknown>;
      additionalMetadataFile?: string;
      metadata?: Record<string, { type: string; data: unknown }[]>;
    }
  >;
}

function readJson<T>(file: string): T {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch (error) {
    throw new AssemblyError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Every CloudFormation stack of the assembly, nested stage assemblies included. */
export function readAssembly(directory: string): AssemblyStack[] {
  const root = resolve(directory);
  if (!existsSync(join(root, "manifest.json"))) {
    throw new AssemblyError(
      `${directory} is not a cloud assembly (no manifest.json); synthesize one with npx cdk synth`,
    );
  }
  return readStacks(root);
}

function readStacks(dir: string): AssemblyStack[] {
  const manifest = readJson<Manifest>(join(dir, "manifest.json"));
  const stacks: AssemblyStack[] = [];
  const artifacts = Object.entries(manifest.artifacts ?? {});
  const assetFiles = new Map<string, string>();
  for (const [id, artifact] of artifacts) {
    if (artifact.type === "cdk:asset-manifest") assetFiles.set(id, join(dir, String(artifact.properties?.file)));
  }
  for (const [id, artifact] of artifacts) {
    if (artifact.type === "cdk:cloud-assembly") {
      stacks.push(...readStacks(join(dir, String(artifact.properties?.directoryName))));
    }
    if (artifact.type !== "aws:cloudformation:stack") continue;
    const properties = artifact.properties ?? {};
    const environment = /^aws:\/\/([^/]+)\/(.+)$/.exec(artifact.environment ?? "");
    const templateFile = join(dir, String(properties.templateFile));
    const assets = new Map<string, string>();
    for (const dependency of (properties.additionalDependencies as string[] | undefined) ?? []) {
      const file = assetFiles.get(dependency);
      if (!file) continue;
      const assetManifest = readJson<{
        files?: Record<string, { source: { path?: string }; destinations: Record<string, { objectKey: string }> }>;
      }>(file);
      for (const asset of Object.values(assetManifest.files ?? {})) {
        if (!asset.source.path) continue;
        for (const destination of Object.values(asset.destinations)) {
          assets.set(destination.objectKey, resolve(dirname(file), asset.source.path));
        }
      }
    }
    const constructPaths = new Map<string, string>();
    const metadata =
      artifact.metadata ??
      (artifact.additionalMetadataFile && existsSync(join(dir, artifact.additionalMetadataFile))
        ? readJson<Record<string, { type: string; data: unknown }[]>>(join(dir, artifact.additionalMetadataFile))
        : {});
    for (const [path, entries] of Object.entries(metadata)) {
      for (const entry of entries) {
        if (entry.type === "aws:cdk:logicalId") constructPaths.set(String(entry.data), path);
      }
    }
    stacks.push({
      artifactId: id,
      displayName: artifact.displayName ?? id,
      stackName: String(properties.stackName ?? id),
      account: environment?.[1] ?? "unknown-account",
      region: environment?.[2] ?? "unknown-region",
      template: readJson<CfnTemplate>(templateFile),
      templateFile,
      assets,
      constructPaths,
      dependencies: artifact.dependencies ?? [],
    });
  }
  return stacks;
}

/** The resources of a type, as [logicalId, resource] pairs. */
export function resourcesOf(template: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
}
