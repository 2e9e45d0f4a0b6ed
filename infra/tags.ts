/**
 * Cost allocation tags: every resource of the app carries `project` and `stage`, so that a bill (or
 * Cost Explorer, once the two tags are activated as cost allocation tags in Billing) tells the stages
 * apart, also when they share an account. Each stack carries them as stack tags, which
 * CloudFormation applies to every resource it creates that supports tags
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-properties-resource-tags.html),
 * and each taggable resource also carries them in the template, where tests can see them. The
 * explicitStackTags flag (cdk.json) keeps the two apart: `Tags.of` no longer sets stack tags.
 */
import { Tags } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

export const PROJECT_TAG_VALUE = "petstore";

/** The tags of what serves these stages: one stage, or an account-wide stack shared by several (`staging+prod`). */
export function costTags(stages: readonly string[]): Record<string, string> {
  return { project: PROJECT_TAG_VALUE, stage: stages.join("+") };
}

/** Tags every taggable resource under `scope` in the synthesized templates. */
export function tagResources(scope: IConstruct, tags: Readonly<Record<string, string>>): void {
  for (const [key, value] of Object.entries(tags)) Tags.of(scope).add(key, value);
}
