/**
 * A stage stack as the rehearsal reads it from a cloud assembly, made by hand from a few resources:
 * for tests of the rehearsal's parts that need a template and a resolver, not a synthesized app.
 */
import type { AssemblyStack, CfnResource } from "../../scripts/rehearse/assembly";
import { REHEARSAL_REGION, STAGING_ACCOUNT } from "../../scripts/rehearse/configurations";
import { Resolver } from "../../scripts/rehearse/resolve";

export function handMadeStack(resources: Record<string, CfnResource>): AssemblyStack {
  return {
    artifactId: "StagingPetStore",
    displayName: "Staging/PetStore",
    stackName: "Staging-PetStore",
    account: STAGING_ACCOUNT,
    region: REHEARSAL_REGION,
    pinned: true,
    template: { Resources: resources },
    templateFile: "/nonexistent/Staging-PetStore.template.json",
    assets: new Map(),
    constructPaths: new Map(),
    dependencies: [],
  };
}

export const handMadeResolver = (resources: Record<string, CfnResource>): Resolver =>
  new Resolver(handMadeStack(resources));
