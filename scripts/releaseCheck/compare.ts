/**
 * The release check's decisions: each stack's deployed template (the base) against the release's, compared with
 * @aws-cdk/cloudformation-diff (what `cdk diff` uses), as findings: `replace` and `remove` (a stateful resource,
 * ./stateful.ts, replaced or gone, often by a changed logical id), `protection-weakened`, the in-place data losses of
 * ./dataSettings.ts, `moved` (a stack pinned to another account or region: ARNs differing only by that are the move,
 * not a widening), `iam-widening` and `security-group-widening` of a deployed stack (a new stack passes, its whole
 * diff reported), and `unbuildable-base`. Each blocks unless acknowledged (./acknowledgements.ts).
 */
import { fullDiff, ResourceImpact, type TemplateDiff } from "@aws-cdk/cloudformation-diff";
import { dataSettingChanges } from "./dataSettings";
import { type CfnResource, type CfnTemplate, isStateful, keepsData } from "./stateful";

/** One stack of a cloud assembly, as the release check compares it. */
export interface StackTemplate {
  /** Its CloudFormation name (`Production-PetStoreData`): what acknowledgements and people name. */
  readonly stackName: string;
  /** `aws://<account>/<region>`; `aws://unknown-account/unknown-region` when not pinned. */
  readonly environment: string;
  readonly template: CfnTemplate;
  /** Logical id → construct path, so that the report can say where a resource comes from. */
  readonly constructPaths?: Readonly<Record<string, string>>;
}

export const CHANGE_KINDS = [
  "replace",
  "remove",
  "protection-weakened",
  "backup-weakened",
  "index-removed",
  "encryption-changed",
  "ttl-changed",
  "moved",
  "iam-widening",
  "security-group-widening",
  "unbuildable-base",
] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

export interface Finding {
  readonly stack: string;
  readonly logicalId: string;
  readonly resourceType: string;
  readonly change: ChangeKind;
  /** What would happen, in one line. */
  readonly detail: string;
}

export interface StackComparison {
  readonly stackName: string;
  readonly environment: string;
  /** `added`: only in the release; `removed`: only in the base; `moved`: to another account or region. */
  readonly status: "added" | "removed" | "moved" | "changed" | "unchanged";
  /** The deployed stack's environment when the release moves it to another one. */
  readonly movedFrom?: string;
  readonly diff: TemplateDiff;
  readonly findings: Finding[];
  readonly constructPaths: Readonly<Record<string, string>>;
}

/** What `cdk diff` leaves out too: the CDK's own version-reporting resource. */
function comparable(template: CfnTemplate | undefined): CfnTemplate {
  if (!template) return {};
  const { CDKMetadata: _versionReporting, ...resources } = template.Resources ?? {};
  return { ...template, Resources: resources };
}

/**
 * Pairs each stack of the release with its deployed self: the same CloudFormation name in the same environment, or,
 * failing that, the one stack of that name on each side (a stage pinned since).
 */
function pairStacks(
  base: readonly StackTemplate[],
  head: readonly StackTemplate[],
): { base?: StackTemplate; head?: StackTemplate }[] {
  const key = (stack: StackTemplate) => `${stack.environment} ${stack.stackName}`;
  const unmatchedBase = new Map(base.map((stack) => [key(stack), stack]));
  const pairs: { base?: StackTemplate; head?: StackTemplate }[] = [];
  const unmatchedHead: StackTemplate[] = [];
  for (const stack of head) {
    const deployed = unmatchedBase.get(key(stack));
    if (deployed) {
      unmatchedBase.delete(key(stack));
      pairs.push({ base: deployed, head: stack });
    } else {
      unmatchedHead.push(stack);
    }
  }
  for (const stack of unmatchedHead) {
    const sameName = [...unmatchedBase.values()].filter((candidate) => candidate.stackName === stack.stackName);
    const onlyOne = unmatchedHead.filter((candidate) => candidate.stackName === stack.stackName).length === 1;
    const [deployed] = sameName;
    if (deployed && sameName.length === 1 && onlyOne) {
      unmatchedBase.delete(key(deployed));
      pairs.push({ base: deployed, head: stack });
    } else {
      pairs.push({ head: stack });
    }
  }
  for (const stack of unmatchedBase.values()) pairs.push({ base: stack });
  return pairs;
}

export function compareAssemblies(base: readonly StackTemplate[], head: readonly StackTemplate[]): StackComparison[] {
  return pairStacks(base, head)
    .map((pair) => compareStack(pair.base, pair.head))
    .sort((a, b) => a.stackName.localeCompare(b.stackName) || a.environment.localeCompare(b.environment));
}

/** An environment's account and region; undefined where the stack is not pinned to one. */
function environmentParts(environment: string): { account?: string; region?: string } {
  const [, account, region] = /^aws:\/\/([^/]*)\/(.*)$/.exec(environment) ?? [];
  return {
    ...(account && /^\d{12}$/.test(account) ? { account } : {}),
    ...(region && region !== "unknown-region" ? { region } : {}),
  };
}

/**
 * What changes when a deployed stack is pinned to another account or region: both sides name one, and they differ. A
 * stack pinned since (unknown before) is the same stack, not a move.
 */
function movement(base: StackTemplate, head: StackTemplate) {
  const from = environmentParts(base.environment);
  const to = environmentParts(head.environment);
  const account =
    from.account && to.account && from.account !== to.account ? { from: from.account, to: to.account } : undefined;
  const region =
    from.region && to.region && from.region !== to.region ? { from: from.region, to: to.region } : undefined;
  return account || region ? { account, region } : undefined;
}
type Movement = NonNullable<ReturnType<typeof movement>>;

/**
 * The deployed template as if it were in the release's account and region: every account id and region name of the
 * move, in ARNs, principals (`logs.<region>.amazonaws.com`) and conditions alike, replaced by the new one, so that what
 * differs only by the move is no change at all.
 */
function relocated<T>(value: T, move: Movement): T {
  const swap = (text: string) => {
    let result = text;
    if (move.account) result = result.replace(new RegExp(`(?<!\\d)${move.account.from}(?!\\d)`, "g"), move.account.to);
    if (move.region) {
      result = result.replace(new RegExp(`(?<![a-z0-9-])${move.region.from}(?![a-z0-9-])`, "g"), move.region.to);
    }
    return result;
  };
  const walk = (node: unknown): unknown =>
    typeof node === "string"
      ? swap(node)
      : Array.isArray(node)
        ? node.map(walk)
        : typeof node === "object" && node !== null
          ? Object.fromEntries(Object.entries(node).map(([key, child]) => [key, walk(child)]))
          : node;
  return walk(value) as T;
}

const describeMove = (move: Movement, head: StackTemplate) => {
  const to = environmentParts(head.environment);
  const where = [move.account ? `account ${to.account}` : "", move.region ? `region ${to.region}` : ""].filter(Boolean);
  return where.join(", ");
};

export function compareStack(base: StackTemplate | undefined, head: StackTemplate | undefined): StackComparison {
  const stack = (head ?? base) as StackTemplate;
  const move = base && head ? movement(base, head) : undefined;
  // Compared as if the deployed stack were where the release goes: the move is one finding per stateful resource below,
  // and its changed ARNs widen nothing.
  const baseTemplate = comparable(move ? relocated(base?.template, move) : base?.template);
  const headTemplate = comparable(head?.template);
  const diff = fullDiff(baseTemplate, headTemplate);
  const stackName = stack.stackName;
  const findings: Finding[] = [];
  const added = Object.entries(diff.resources.changes).filter(([, change]) => change.isAddition);

  for (const [logicalId, change] of Object.entries(diff.resources.changes)) {
    const before = change.oldValue as CfnResource | undefined;
    const after = change.newValue as CfnResource | undefined;
    if (!before || !isStateful(before)) continue;
    const finding = (kind: ChangeKind, detail: string): Finding => ({
      stack: stackName,
      logicalId,
      resourceType: before.Type,
      change: kind,
      detail,
    });
    const impact = change.changeImpact;
    const policy = `DeletionPolicy ${before.DeletionPolicy ?? "Delete"}`;
    if (impact === ResourceImpact.WILL_REPLACE || impact === ResourceImpact.MAY_REPLACE) {
      const properties = Object.entries(change.propertyUpdates)
        .filter(([, property]) =>
          [ResourceImpact.WILL_REPLACE, ResourceImpact.MAY_REPLACE].includes(property.changeImpact as ResourceImpact),
        )
        .map(([name]) => name);
      const causes =
        before.Type !== after?.Type
          ? `its type changes to ${after?.Type}`
          : properties.length > 0
            ? `${properties.join(", ")} ${properties.length === 1 ? "changes" : "change"}`
            : "what it refers to is replaced";
      const oldOne = keepsData(before.UpdateReplacePolicy)
        ? `leaves the old one outside the stack (UpdateReplacePolicy ${before.UpdateReplacePolicy})`
        : "deletes the old one with its data";
      const verb = impact === ResourceImpact.WILL_REPLACE ? "would be replaced" : "may be replaced";
      findings.push(finding("replace", `${verb} (${causes}): CloudFormation creates a new, empty one and ${oldOne}`));
    } else if (!head) {
      const fate = keepsData(before.DeletionPolicy)
        ? "leaves it in the account, managed by nothing"
        : "deletes it with its data";
      findings.push(
        finding(
          "remove",
          `its stack is no longer in the app: cdk deploy leaves the deployed stack as it is, and deleting that stack ${fate} (${policy})`,
        ),
      );
    } else if (impact === ResourceImpact.WILL_DESTROY || impact === ResourceImpact.WILL_ORPHAN) {
      const fate =
        impact === ResourceImpact.WILL_ORPHAN
          ? `CloudFormation leaves it in the account, outside the stack, managed by nothing (${policy})`
          : `CloudFormation deletes it with its data (${policy})`;
      const renamedTo = added.filter(([, candidate]) => candidate.newResourceType === before.Type).map(([id]) => id);
      const why =
        renamedTo.length > 0
          ? `; ${renamedTo.join(", ")} of the same type ${renamedTo.length === 1 ? "is" : "are"} added instead: a renamed or moved construct gets a new logical id, which CloudFormation creates as a new, empty resource`
          : "";
      findings.push(finding("remove", `removed from the template: ${fate}${why}`));
    } else if (after) {
      const weakened = weakenedProtections(before, after);
      if (weakened.length > 0) findings.push(finding("protection-weakened", weakened.join("; ")));
      for (const { kind, detail } of dataSettingChanges(before, after)) findings.push(finding(kind, detail));
    }
  }

  if (move && base && head) {
    const where = describeMove(move, head);
    for (const [logicalId, resource] of Object.entries(baseTemplate.Resources ?? {})) {
      if (!isStateful(resource) || !headTemplate.Resources?.[logicalId]) continue;
      findings.push({
        stack: stackName,
        logicalId,
        resourceType: resource.Type,
        change: "moved",
        detail: `the stack moves from ${base.environment} to ${head.environment}: the release creates a new, empty ${resource.Type} in ${where}, and the deployed one stays in ${base.environment} with its data`,
      });
    }
  }

  // Only a deployed stack can widen: one that leaves the app takes its permissions with it, and a new one's are all new
  // (the report shows them in its diff).
  if (base && head) {
    findings.push(
      ...widenings(diff, baseTemplate, headTemplate).map((widening) => ({ stack: stackName, ...widening })),
    );
  }

  return {
    stackName,
    environment: stack.environment,
    status: !base ? "added" : !head ? "removed" : move ? "moved" : diff.isEmpty ? "unchanged" : "changed",
    ...(move && base ? { movedFrom: base.environment } : {}),
    diff,
    findings,
    constructPaths: { ...base?.constructPaths, ...head?.constructPaths },
  };
}

/** Deletion protection as the template sets it: DynamoDB's (per replica of a global table), RDS's, … */
function deletionProtected(resource: CfnResource): boolean {
  const properties = resource.Properties ?? {};
  if (resource.Type === "AWS::DynamoDB::GlobalTable") {
    const replicas = Array.isArray(properties.Replicas) ? (properties.Replicas as Record<string, unknown>[]) : [];
    return replicas.length > 0 && replicas.every((replica) => replica.DeletionProtectionEnabled === true);
  }
  return properties.DeletionProtectionEnabled === true || properties.DeletionProtection === true;
}

function weakenedProtections(before: CfnResource, after: CfnResource): string[] {
  const weakened: string[] = [];
  if (keepsData(before.DeletionPolicy) && !keepsData(after.DeletionPolicy)) {
    weakened.push(
      `DeletionPolicy ${before.DeletionPolicy} becomes ${after.DeletionPolicy ?? "Delete"}: removing it from the template or deleting the stack would delete its data`,
    );
  }
  if (keepsData(before.UpdateReplacePolicy) && !keepsData(after.UpdateReplacePolicy)) {
    weakened.push(
      `UpdateReplacePolicy ${before.UpdateReplacePolicy} becomes ${after.UpdateReplacePolicy ?? "Delete"}: a replacement would delete the old one with its data`,
    );
  }
  if (deletionProtected(before) && !deletionProtected(after)) {
    weakened.push("deletion protection is switched off");
  }
  return weakened;
}

type Widening = Omit<Finding, "stack">;

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** An IAM statement as @aws-cdk/cloudformation-diff parses it (its Statement class is not exported). */
type Statement = TemplateDiff["iamChanges"]["statements"]["additions"][number];
type Targets = Statement["actions"];

/** A pattern whose `*` stands for any characters, and every other character for itself, as a RegExp of the whole. */
export const wildcardPattern = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split("*")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );

/** Whether an IAM pattern (`dynamodb:*`, `arn:…/*`) matches a value; exact otherwise. */
const matches = (pattern: string, value: string) =>
  pattern === value || (pattern.includes("*") && wildcardPattern(pattern).test(value));

const sameTargets = (a: Targets, b: Targets) =>
  a.not === b.not && a.values.length === b.values.length && a.values.every((value) => b.values.includes(value));

/**
 * The actions of `statement` that `others` (statements of the same effect, principals and condition) do not already
 * grant on all of its resources: a statement rewritten with fewer actions, or split in two, adds nothing. Negated
 * targets (NotAction, NotResource) are never taken as covered.
 */
function uncoveredActions(statement: Statement, others: readonly Statement[]): string[] {
  const alike = others.filter(
    (other) =>
      other.effect === statement.effect &&
      sameTargets(other.principals, statement.principals) &&
      JSON.stringify(other.condition ?? null) === JSON.stringify(statement.condition ?? null) &&
      !other.actions.not &&
      !other.resources.not,
  );
  if (statement.actions.not || statement.resources.not) return [...statement.actions.values];
  return statement.actions.values.filter(
    (action) =>
      !statement.resources.values.every((resource) =>
        alike.some(
          (other) =>
            other.actions.values.some((pattern) => matches(pattern, action)) &&
            other.resources.values.some((pattern) => matches(pattern, resource)),
        ),
      ),
  );
}

interface WidenedStatement {
  readonly statement: Statement;
  /** What it newly allows (or no longer denies). */
  readonly actions: string[];
}

/**
 * Statements that widen access: allows whose actions no removed allow granted, and denies removed whose actions no
 * added deny keeps denying. (The library's own `permissionsBroadened` counts any changed allow, a narrowed one
 * included.)
 */
function widenedStatements(added: readonly Statement[], removed: readonly Statement[]): WidenedStatement[] {
  const allows = (list: readonly Statement[]) => list.filter((statement) => !statement.isNegativeStatement);
  const denies = (list: readonly Statement[]) => list.filter((statement) => statement.isNegativeStatement);
  return [
    ...allows(added).map((statement) => ({ statement, actions: uncoveredActions(statement, allows(removed)) })),
    ...denies(removed).map((statement) => ({ statement, actions: uncoveredActions(statement, denies(added)) })),
  ].filter((widened) => widened.actions.length > 0);
}

function describeStatement({ statement, actions }: WidenedStatement): string {
  const { effect, resource, principal, condition } = statement.render();
  const removedDeny = statement.isNegativeStatement ? "no longer " : "";
  return oneLine(
    `${removedDeny}${effect} ${actions.join(" ")} on ${resource}${principal ? ` for ${principal}` : ""}${condition ? ` when ${condition}` : ""}`,
  );
}

/**
 * Permissions and security group rules the release adds, by the resource adding them: each changed resource is diffed
 * alone, so a policy merely moved to another logical id adds nothing.
 */
function widenings(diff: TemplateDiff, baseTemplate: CfnTemplate, headTemplate: CfnTemplate): Widening[] {
  const iam = diff.iamChanges;
  const widened = widenedStatements(iam.statements.additions, iam.statements.removals);
  const managedPolicies = iam.managedPolicies.additions;
  const rules = [...diff.securityGroupChanges.ingress.additions, ...diff.securityGroupChanges.egress.additions];
  if (widened.length === 0 && managedPolicies.length === 0 && rules.length === 0) return [];

  const found: Widening[] = [];
  for (const logicalId of diff.resources.logicalIds) {
    const before = baseTemplate.Resources?.[logicalId];
    const after = headTemplate.Resources?.[logicalId];
    const alone = fullDiff(
      { Resources: before ? { [logicalId]: before } : {} },
      { Resources: after ? { [logicalId]: after } : {} },
    );
    const resourceType = (after ?? before)?.Type ?? "";
    // An allow this resource adds, or a deny it drops.
    const statements = widened.filter(({ statement }) =>
      (statement.isNegativeStatement
        ? alone.iamChanges.statements.removals
        : alone.iamChanges.statements.additions
      ).some((own) => own.equal(statement)),
    );
    const policies = alone.iamChanges.managedPolicies.additions.filter((policy) =>
      managedPolicies.some((added) => added.equal(policy)),
    );
    if (statements.length > 0 || policies.length > 0) {
      const described = [
        ...statements.map(describeStatement),
        ...policies.map((policy) => `managed policy ${policy.managedPolicyArn}`),
      ];
      found.push({ logicalId, resourceType, change: "iam-widening", detail: `grants ${described.join("; ")}` });
    }
    const addedRules = [
      ...alone.securityGroupChanges.ingress.additions.map((rule) => ({ rule, direction: "ingress" })),
      ...alone.securityGroupChanges.egress.additions.map((rule) => ({ rule, direction: "egress" })),
    ].filter(({ rule }) => rules.some((added) => added.equal(rule)));
    if (addedRules.length > 0) {
      found.push({
        logicalId,
        resourceType,
        change: "security-group-widening",
        detail: `allows ${addedRules.map(({ rule, direction }) => `${direction} ${rule.describeProtocol()} ${direction === "ingress" ? "from" : "to"} ${rule.describePeer()}`).join("; ")}`,
      });
    }
  }
  if (found.length === 0) {
    // Never expected: the stack widens something no single resource explains. Still a finding.
    found.push({
      logicalId: "*",
      resourceType: "",
      change: widened.length + managedPolicies.length > 0 ? "iam-widening" : "security-group-widening",
      detail: "widens permissions or network access across resources (see the diff)",
    });
  }
  return found;
}
