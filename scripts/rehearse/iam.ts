/**
 * Evaluates one IAM request with @cloud-copilot/iam-simulate, as AWS does
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html), naming the deciding
 * statements; a deny carries AWS's AccessDeniedException message. The evaluator is AGPL-3.0 and runs only here.
 */
import { runSimulation, type Simulation } from "@cloud-copilot/iam-simulate";
import { asList, type NamedPolicy } from "./policies";

export interface IamRequest {
  readonly caller: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Record<string, string | string[]>;
  /** Why the request is made: the recorded call it comes from, or the rule it checks. */
  readonly because: string;
  /** The scenario step during which the call was made, when it comes from one. */
  readonly step?: string;
}

export interface PolicyStatementRef {
  readonly policy: string;
  readonly index: number;
  readonly statement: Record<string, unknown>;
}

export interface Decision {
  readonly request: IamRequest;
  /** The principal IAM saw: an assumed-role session ARN or a service principal. */
  readonly principal: string;
  readonly allowed: boolean;
  /** `Allowed`, `ImplicitlyDenied`, `ExplicitlyDenied`, or `SimulationError`. */
  readonly result: string;
  /** The statements that allowed the request (for an allow): the over-grant analysis's evidence. */
  readonly allowedBy: PolicyStatementRef[];
  /** For a deny: the statements that name the action, and why each did not apply. */
  readonly explanation: string;
  /** For a deny: the message of the AccessDeniedException AWS answers. */
  readonly accessDenied?: string;
}

interface Labelled {
  readonly documents: { name: string; policy: { Version: string; Statement: Record<string, unknown>[] } }[];
  readonly statements: Map<string, PolicyStatementRef>;
}

/** Names every statement (policy and position) so that a decision can point at the one to change. */
function labelled(policies: readonly NamedPolicy[], prefix: string): Labelled {
  const statements = new Map<string, PolicyStatementRef>();
  const documents = policies.map((policy, policyIndex) => ({
    name: policy.name,
    policy: {
      Version: policy.document.Version ?? "2012-10-17",
      Statement: asList(policy.document.Statement).map((raw, index) => {
        const statement = raw as Record<string, unknown>;
        const sid = `${prefix}${policyIndex}S${index}`;
        statements.set(sid, { policy: policy.name, index, statement });
        return {
          ...statement,
          Sid: sid,
          ...(statement.Condition ? { Condition: renameConditionKeys(statement.Condition) } : {}),
        };
      }),
    },
  }));
  return { documents, statements };
}

/** `GetPetRoleDefaultPolicy… statement 3 (Allow): {Action, Resource, Condition}`, with principal for a resource policy. */
export function describeStatement(ref: PolicyStatementRef): string {
  const sid = ref.statement.Sid ? ` (Sid ${ref.statement.Sid})` : "";
  const { Effect, Principal, Action, NotAction, Resource, NotResource, Condition } = ref.statement;
  return `${ref.policy} statement ${ref.index + 1}${sid}: ${JSON.stringify({ Effect, Principal, Action, NotAction, Resource, NotResource, Condition })}`;
}

const accountOf = (arn: string, fallback: string) => arn.split(":")[4] || fallback;

/**
 * iam-simulate reads variable condition keys only as `name/variable`, so `kms:EncryptionContext:aws:logs:arn` is renamed
 * alike in request and policies to a `/` form; values and operators are untouched, so the decision is the same.
 */
const ENCRYPTION_CONTEXT = /^kms:EncryptionContext:(.+)$/i;
const renameKey = (key: string) => {
  const match = ENCRYPTION_CONTEXT.exec(key);
  return match ? `aws:RequestTag/kms-EncryptionContext-${(match[1] ?? "").replaceAll(":", ".")}` : key;
};
const originalKey = (key: string) => key.replace(/^aws:RequestTag\/kms-EncryptionContext-/, "kms:EncryptionContext:");
function renameConditionKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(renameConditionKeys) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, item]) => [renameKey(key), renameConditionKeys(item)]),
  ) as T;
}

export interface EvaluationOptions {
  /** An ARN (an assumed-role session) or a service principal (`logs.eu-west-1.amazonaws.com`). */
  readonly principal: string;
  readonly principalAccount: string;
  /** An unsigned request: only a resource policy naming everyone (`*`) can allow it. */
  readonly anonymous?: boolean;
  readonly identityPolicies?: readonly NamedPolicy[];
  readonly permissionBoundaries?: readonly NamedPolicy[];
  /** The resource's own policy (table, secret, topic, key, function, or a role's trust policy). */
  readonly resourcePolicy?: NamedPolicy;
}

interface StatementAnalysis {
  explain?: {
    identifier?: string;
    conditions?: { operator: string; conditionKeyValue: string; unmatchedValues?: string[]; matches?: boolean }[];
  };
  actionMatch?: boolean;
  resourceMatch?: boolean;
}
type Analysis = {
  denyStatements?: StatementAnalysis[];
  allowStatements?: StatementAnalysis[];
  unmatchedStatements?: StatementAnalysis[];
};

/** AWS's AccessDeniedException message (https://docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_access-denied.html). */
function accessDeniedMessage(request: IamRequest, principal: string, reason: string): string {
  // An explicit deny reads "... with an explicit deny in a <policy type>"; an implicit one "... because no <policy
  // type> allows ...".
  return `User: ${principal} is not authorized to perform: ${request.action} on resource: ${request.resource} ${reason.startsWith("with ") ? reason : `because ${reason}`}`;
}

/**
 * The global condition keys AWS puts in every request of a principal, which the evaluator does not derive itself:
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-principalaccount
 * (an assumed-role session's PrincipalArn is its role's).
 */
function principalKeys(options: EvaluationOptions): Record<string, string> {
  if (options.anonymous) return {};
  if (!options.principal.startsWith("arn:")) return { "aws:PrincipalIsAWSService": "true" };
  return {
    "aws:PrincipalAccount": options.principal.split(":")[4] ?? "",
    "aws:PrincipalArn": principalOf(options),
    "aws:PrincipalIsAWSService": "false",
  };
}

/** A principal as policies name it: an assumed-role session is its role. */
export function principalOf({ principal }: { readonly principal: string }): string {
  const session = /^arn:aws:sts::(\d{12}):assumed-role\/([^/]+)\//.exec(principal);
  return session ? `arn:aws:iam::${session[1]}:role/${session[2]}` : principal;
}

export async function evaluate(request: IamRequest, options: EvaluationOptions): Promise<Decision> {
  const identity = labelled(options.identityPolicies ?? [], "I");
  const boundary = labelled(options.permissionBoundaries ?? [], "B");
  const resource = options.resourcePolicy ? labelled([options.resourcePolicy], "P") : undefined;
  const simulation: Simulation = {
    request: {
      principal: options.anonymous ? { type: "Anonymous" } : options.principal,
      action: request.action,
      resource: { resource: request.resource, accountId: accountOf(request.resource, options.principalAccount) },
      contextVariables: Object.fromEntries(
        Object.entries({ ...principalKeys(options), ...request.context }).map(([key, value]) => [
          renameKey(key),
          value,
        ]),
      ),
    },
    identityPolicies: identity.documents,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(boundary.documents.length ? { permissionBoundaryPolicies: boundary.documents } : {}),
    ...(resource ? { resourcePolicy: resource.documents[0]?.policy } : {}),
  };
  const response = await runSimulation(simulation, {});
  const base = { request, principal: options.principal, allowedBy: [] as PolicyStatementRef[] };
  if (response.resultType === "error") {
    const explanation = JSON.stringify(response.errors).slice(0, 600);
    return {
      ...base,
      allowed: false,
      result: "SimulationError",
      explanation,
      accessDenied: accessDeniedMessage(
        request,
        options.principal,
        `the policy could not be evaluated: ${explanation}`,
      ),
    };
  }
  const result = response.overallResult;
  const analysis = (response.resultType === "single" ? response.result.analysis : {}) as unknown as Record<
    string,
    Analysis | undefined
  >;
  const sections = [
    ["identityAnalysis", identity.statements, "identity-based policy"],
    ["permissionBoundaryAnalysis", boundary.statements, "permissions boundary"],
    ["resourceAnalysis", resource?.statements ?? new Map<string, PolicyStatementRef>(), "resource-based policy"],
  ] as const;
  const refs = (section: string, key: keyof Analysis, statements: Map<string, PolicyStatementRef>) =>
    (analysis[section]?.[key] ?? [])
      .map((entry) => ({ entry, ref: statements.get(entry.explain?.identifier ?? "") }))
      .filter((found): found is { entry: StatementAnalysis; ref: PolicyStatementRef } => found.ref !== undefined);
  if (result === "Allowed") {
    return {
      ...base,
      allowed: true,
      result,
      allowedBy: [
        ...refs("identityAnalysis", "allowStatements", identity.statements),
        ...refs("resourceAnalysis", "allowStatements", resource?.statements ?? new Map()),
      ].map(({ ref }) => ref),
      explanation: "",
    };
  }
  const lines: string[] = [];
  let reason = "";
  for (const [section, statements, kind] of sections) {
    for (const { ref } of refs(section, "denyStatements", statements)) {
      lines.push(`explicitly denied by ${describeStatement(ref)}`);
      reason ||= `with an explicit deny in a ${kind}`;
    }
  }
  for (const [section, statements] of sections) {
    for (const { entry, ref } of refs(section, "unmatchedStatements", statements)) {
      if (!entry.actionMatch || ref.statement.Effect !== "Allow") continue;
      const reasons: string[] = [];
      if (!entry.resourceMatch) reasons.push(`its Resource does not match ${request.resource}`);
      for (const condition of entry.explain?.conditions ?? []) {
        if (condition.unmatchedValues?.length || condition.matches === false) {
          const key =
            Object.keys(request.context).find(
              (name) => renameKey(name).toLowerCase() === condition.conditionKeyValue.toLowerCase(),
            ) ?? originalKey(condition.conditionKeyValue);
          reasons.push(
            `its condition ${condition.operator} ${originalKey(key)} does not hold for ${JSON.stringify(request.context[key] ?? "(absent)")}`,
          );
        }
      }
      lines.push(`${describeStatement(ref)} names the action, but ${reasons.join("; ") || "it does not apply"}`);
    }
  }
  if (!reason) {
    const boundaryAllows =
      !options.permissionBoundaries?.length || analysis.permissionBoundaryAnalysis?.allowStatements?.length;
    // A service principal has no identity policies: only a resource-based policy can let it in.
    const servicePrincipal = !options.principal.startsWith("arn:");
    const kind = !boundaryAllows
      ? "permissions boundary"
      : servicePrincipal || (!options.identityPolicies?.length && options.resourcePolicy)
        ? "resource-based policy"
        : "identity-based policy";
    reason = `no ${kind} allows the ${request.action} action`;
  }
  const consulted = [
    ...(options.identityPolicies ?? []),
    ...(options.permissionBoundaries ?? []),
    ...(options.resourcePolicy ? [options.resourcePolicy] : []),
  ];
  return {
    ...base,
    allowed: false,
    result,
    explanation: lines.length
      ? lines.join("\n")
      : `no statement of ${consulted.map((policy) => policy.name).join(", ") || "any policy"} grants ${request.action}`,
    accessDenied: accessDeniedMessage(request, options.principal, reason),
  };
}
