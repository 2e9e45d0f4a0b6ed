/**
 * Turns each recorded AWS call into the request IAM evaluates (action, resource ARN, condition
 * keys) and evaluates it with a real IAM policy evaluator, @cloud-copilot/iam-simulate, against the
 * calling function's role policies from the same template. The evaluator is AGPL-3.0 and only ever
 * runs here, in the rehearsal: no function bundle imports it.
 */
import { runSimulation, type Simulation } from "@cloud-copilot/iam-simulate";
import { resourcesOf } from "./assembly";
import type { RecordedCall } from "./awsStandIn";
import type { Resolver } from "./resolve";

export interface IamRequest {
  readonly caller: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Record<string, string | string[]>;
  /** Why the request is made: the recorded call it comes from, or the rule it checks. */
  readonly because: string;
}

export interface PolicyStatementRef {
  readonly policy: string;
  readonly index: number;
  readonly statement: Record<string, unknown>;
}

export interface Decision {
  readonly request: IamRequest;
  readonly allowed: boolean;
  readonly result: string;
  /** For a deny: the statements that name the action, and why each did not apply. */
  readonly explanation: string;
}

export interface NamedPolicy {
  readonly name: string;
  readonly document: { Version?: string; Statement: Record<string, unknown>[] };
}

/** The identity policies of a role in the template: its inline policies and the AWS::IAM::Policy resources attached to it. */
export function rolePolicies(
  resolver: Resolver,
  roleLogicalId: string,
): { policies: NamedPolicy[]; unresolved: string[] } {
  const { template } = resolver.stack;
  const role = template.Resources[roleLogicalId];
  const policies: NamedPolicy[] = [];
  const unresolved: string[] = [];
  for (const inline of (role?.Properties?.Policies as { PolicyName: string; PolicyDocument: unknown }[] | undefined) ??
    []) {
    policies.push({
      name: `${roleLogicalId} inline ${inline.PolicyName}`,
      document: resolver.resolve(inline.PolicyDocument) as NamedPolicy["document"],
    });
  }
  for (const arn of (resolver.resolve(role?.Properties?.ManagedPolicyArns ?? []) as string[]) ?? [])
    unresolved.push(String(arn));
  for (const type of ["AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"]) {
    for (const [logicalId, policy] of resourcesOf(template, type)) {
      const roles = (policy.Properties?.Roles as { Ref?: string }[] | undefined) ?? [];
      if (!roles.some((ref) => ref.Ref === roleLogicalId)) continue;
      policies.push({
        name: logicalId,
        document: resolver.resolve(policy.Properties?.PolicyDocument) as NamedPolicy["document"],
      });
    }
  }
  return { policies, unresolved };
}

const asList = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

/** Names every statement (policy and position) so that a deny can point at the one to change. */
function labelled(policies: readonly NamedPolicy[], prefix = "R") {
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

export function describeStatement(ref: PolicyStatementRef): string {
  const sid = ref.statement.Sid ? ` (Sid ${ref.statement.Sid})` : "";
  return `${ref.policy} statement ${ref.index + 1}${sid}: ${JSON.stringify({ Action: ref.statement.Action, Resource: ref.statement.Resource, Condition: ref.statement.Condition })}`;
}

const accountOf = (arn: string, fallback: string) => arn.split(":")[4] || fallback;

/**
 * iam-simulate recognises condition keys with a variable part only in the `name/variable` form
 * (`aws:PrincipalTag/team`), so it would ignore `kms:EncryptionContext:aws:logs:arn` and every
 * condition on it would fail. Such keys are renamed alike in the request and in the policies, to a
 * `/` form the evaluator accepts; the values and operators are untouched, so the decision is the same.
 */
const ENCRYPTION_CONTEXT = /^kms:EncryptionContext:(.+)$/i;
const renameKey = (key: string) => {
  const match = ENCRYPTION_CONTEXT.exec(key);
  return match ? `aws:RequestTag/kms-EncryptionContext-${(match[1] ?? "").replaceAll(":", ".")}` : key;
};
function renameConditionKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(renameConditionKeys) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, item]) => [renameKey(key), renameConditionKeys(item)]),
  ) as T;
}

/**
 * Evaluates one request. `principal` is an ARN or a service principal (`logs.eu-west-1.amazonaws.com`);
 * `resourcePolicy` is the resource's own policy (topic policy, key policy, trust policy) when it has one.
 */
export async function evaluate(
  request: IamRequest,
  options: {
    principal: string;
    principalAccount: string;
    identityPolicies?: readonly NamedPolicy[];
    resourcePolicy?: NamedPolicy;
  },
): Promise<Decision> {
  const identity = labelled(options.identityPolicies ?? []);
  const resource = options.resourcePolicy ? labelled([options.resourcePolicy], "P") : undefined;
  const simulation: Simulation = {
    request: {
      principal: options.principal,
      action: request.action,
      resource: { resource: request.resource, accountId: accountOf(request.resource, options.principalAccount) },
      contextVariables: Object.fromEntries(
        Object.entries(request.context).map(([key, value]) => [renameKey(key), value]),
      ),
    },
    identityPolicies: identity.documents,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(resource ? { resourcePolicy: resource.documents[0]?.policy } : {}),
  };
  const response = await runSimulation(simulation, {});
  if (response.resultType === "error") {
    return {
      request,
      allowed: false,
      result: "SimulationError",
      explanation: JSON.stringify(response.errors).slice(0, 600),
    };
  }
  const result = response.overallResult;
  const allowed = result === "Allowed";
  let explanation = "";
  if (!allowed && response.resultType === "single") {
    const analysis = response.result.analysis as unknown as Record<
      string,
      { denyStatements?: unknown[]; unmatchedStatements?: unknown[] } | undefined
    >;
    const lines: string[] = [];
    const statementsOf = (section: string, key: "denyStatements" | "unmatchedStatements") =>
      (analysis[section]?.[key] ?? []) as {
        // The evaluator's statement objects answer their Sid as the explanation's identifier.
        explain?: {
          identifier?: string;
          conditions?: { operator: string; conditionKeyValue: string; unmatchedValues?: string[] }[];
        };
        actionMatch?: boolean;
        resourceMatch?: boolean;
        conditionMatch?: string;
      }[];
    for (const [section, refs] of [
      ["identityAnalysis", identity.statements],
      ["resourceAnalysis", resource?.statements ?? new Map()],
    ] as const) {
      for (const denied of statementsOf(section, "denyStatements")) {
        const ref = refs.get(denied.explain?.identifier ?? "");
        if (ref) lines.push(`explicitly denied by ${describeStatement(ref)}`);
      }
      for (const unmatched of statementsOf(section, "unmatchedStatements")) {
        if (!unmatched.actionMatch) continue;
        const ref = refs.get(unmatched.explain?.identifier ?? "");
        if (!ref) continue;
        const reasons: string[] = [];
        if (!unmatched.resourceMatch) reasons.push(`its Resource does not match ${request.resource}`);
        for (const condition of unmatched.explain?.conditions ?? []) {
          if (condition.unmatchedValues?.length || (condition as { matches?: boolean }).matches === false) {
            const key =
              Object.keys(request.context).find(
                (name) => renameKey(name).toLowerCase() === condition.conditionKeyValue.toLowerCase(),
              ) ?? condition.conditionKeyValue;
            reasons.push(
              `its condition ${condition.operator} ${key.replace(/^aws:RequestTag\/kms-EncryptionContext-/, "kms:EncryptionContext:")} does not hold for ${JSON.stringify(request.context[key] ?? "(absent)")}`,
            );
          }
        }
        lines.push(`${describeStatement(ref)} names the action, but ${reasons.join("; ") || "it does not apply"}`);
      }
    }
    explanation = lines.length
      ? lines.join("\n")
      : `no statement of ${[...(options.identityPolicies ?? []), ...(options.resourcePolicy ? [options.resourcePolicy] : [])].map((policy) => policy.name).join(", ") || "any policy"} grants ${request.action}`;
  }
  return { request, allowed, result, explanation };
}

/** The partition key attribute of a table, from the template. */
function hashKeyOf(
  resolver: Resolver,
  tableName: string,
  indexName?: string,
): { key?: string; tableLogicalId?: string } {
  for (const { logicalId, resource: table, resolver: owner } of resolver.tables()) {
    if (owner.ref(logicalId) !== tableName) continue;
    const schema = indexName
      ? (
          table.Properties?.GlobalSecondaryIndexes as
            | { IndexName: string; KeySchema: { AttributeName: string; KeyType: string }[] }[]
            | undefined
        )?.find((index) => index.IndexName === indexName)?.KeySchema
      : (table.Properties?.KeySchema as { AttributeName: string; KeyType: string }[] | undefined);
    return { key: schema?.find((entry) => entry.KeyType === "HASH")?.AttributeName, tableLogicalId: logicalId };
  }
  return {};
}

const attributeText = (value: unknown): string | undefined => {
  const typed = value as { S?: string; N?: string; B?: string } | undefined;
  return typed?.S ?? typed?.N ?? typed?.B;
};

/** The partition key values of a Query, from its key condition (`pk = :pk`, `#pk = :v`). */
function queryLeadingKeys(body: Record<string, unknown>, hashKey: string): string[] {
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (body.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  const keys: string[] = [];
  for (const match of String(body.KeyConditionExpression ?? "").matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
    const [, name = "", placeholder = ""] = match;
    if ((names[name] ?? name) === hashKey) {
      const text = attributeText(values[placeholder]);
      if (text !== undefined) keys.push(text);
    }
  }
  return keys;
}

/** The IAM requests one recorded call makes; `unmodelled` when the rehearsal cannot say. */
export function requestsOf(
  call: RecordedCall,
  caller: string,
  resolver: Resolver,
): { requests: IamRequest[]; unmodelled?: string } {
  const { region, account } = resolver;
  const because = `${call.service}:${call.operation}`;
  if (call.service === "dynamodb") {
    const tableName = String(call.body.TableName ?? "");
    const indexName = call.body.IndexName === undefined ? undefined : String(call.body.IndexName);
    const tableArn = `arn:aws:dynamodb:${region}:${account}:table/${tableName}`;
    const resource = indexName ? `${tableArn}/index/${indexName}` : tableArn;
    const { key } = hashKeyOf(resolver, tableName, indexName);
    const action = `dynamodb:${call.operation}`;
    // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html:
    // dynamodb:LeadingKeys holds the partition key values an item request or a Query names.
    let leadingKeys: string[] | undefined;
    if (["GetItem", "DeleteItem", "UpdateItem"].includes(call.operation)) {
      leadingKeys = [attributeText((call.body.Key as Record<string, unknown>)?.[key ?? ""])].filter(
        (v): v is string => v !== undefined,
      );
    } else if (call.operation === "PutItem") {
      leadingKeys = [attributeText((call.body.Item as Record<string, unknown>)?.[key ?? ""])].filter(
        (v): v is string => v !== undefined,
      );
    } else if (call.operation === "Query") {
      leadingKeys = queryLeadingKeys(call.body, key ?? "");
    } else if (call.operation !== "Scan" && call.operation !== "DescribeTable") {
      return {
        requests: [],
        unmodelled: `dynamodb:${call.operation} (batch and transaction requests are not modelled)`,
      };
    }
    return {
      requests: [
        { caller, action, resource, context: leadingKeys ? { "dynamodb:LeadingKeys": leadingKeys } : {}, because },
      ],
    };
  }
  if (call.service === "secretsmanager") {
    const secretId = String(call.body.SecretId ?? "");
    const requests: IamRequest[] = [
      { caller, action: `secretsmanager:${call.operation}`, resource: secretId, context: {}, because },
    ];
    // A secret encrypted with a customer managed key is read (and written) through KMS on the
    // caller's behalf: https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html
    for (const [logicalId, secret] of resourcesOf(resolver.stack.template, "AWS::SecretsManager::Secret")) {
      if (resolver.ref(logicalId) !== secretId || secret.Properties?.KmsKeyId === undefined) continue;
      const keyArn = String(resolver.resolve(secret.Properties.KmsKeyId));
      const kmsAction = call.operation === "GetSecretValue" ? "kms:Decrypt" : "kms:GenerateDataKey";
      requests.push({
        caller,
        action: kmsAction,
        resource: keyArn,
        context: { "kms:ViaService": `secretsmanager.${region}.amazonaws.com`, "kms:CallerAccount": account },
        because: `${because} of a secret encrypted with ${logicalId}'s key`,
      });
    }
    return { requests };
  }
  return { requests: [], unmodelled: `${call.service}:${call.operation} (no stand-in models this service)` };
}

/** The key policy of a KMS key ARN of the template, if it is one. */
export function keyPolicyOf(resolver: Resolver, keyArn: string): NamedPolicy | undefined {
  for (const [logicalId, key] of resourcesOf(resolver.stack.template, "AWS::KMS::Key")) {
    if (resolver.getAtt(logicalId, "Arn") === keyArn || resolver.ref(logicalId) === keyArn) {
      return {
        name: `${logicalId} key policy`,
        document: resolver.resolve(key.Properties?.KeyPolicy) as NamedPolicy["document"],
      };
    }
  }
  return undefined;
}
