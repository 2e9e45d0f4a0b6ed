/**
 * Turns each recorded AWS call into the requests IAM evaluates for it (action, resource ARN, condition keys), as the
 * services document them. What cannot be read with certainty is reported as unmodelled, which fails the rehearsal: a
 * condition key the rehearsal could not fill would make `ForAllValues` conditions hold vacuously (fail-open), so it
 * never guesses.
 */
import { resourcesOf } from "./assembly";
import type { RecordedCall } from "./awsStandIn";
import type { IamRequest } from "./iam";
import type { Resolver } from "./resolve";

/** The partition key attribute of a table or one of its indexes, from the template. */
function hashKeyOf(resolver: Resolver, tableName: string, indexName?: string): string | undefined {
  for (const { logicalId, resource: table, resolver: owner } of resolver.tables()) {
    if (owner.ref(logicalId) !== tableName) continue;
    type KeySchema = { AttributeName: string; KeyType: string }[];
    const schema = indexName
      ? (table.Properties?.GlobalSecondaryIndexes as { IndexName: string; KeySchema: KeySchema }[] | undefined)?.find(
          (index) => index.IndexName === indexName,
        )?.KeySchema
      : (table.Properties?.KeySchema as KeySchema | undefined);
    return schema?.find((entry) => entry.KeyType === "HASH")?.AttributeName;
  }
  return undefined;
}

const attributeText = (value: unknown): string | undefined => {
  const typed = value as { S?: string; N?: string; B?: string } | undefined;
  return typed?.S ?? typed?.N ?? typed?.B;
};

export class KeyConditionError extends Error {
  override readonly name = "KeyConditionError";
}

/**
 * The partition key value a Query names: one equality of `pk`/`#pk` with a placeholder among `AND`ed clauses
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Query.KeyConditionExpressions.html), or legacy
 * `KeyConditions`. Anything else throws, never an empty list, which `ForAllValues` conditions would accept.
 */
export function queryPartitionKey(body: Record<string, unknown>, hashKey: string): string {
  const values = (body.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
  if (body.KeyConditionExpression === undefined && body.KeyConditions !== undefined) {
    const condition = (
      body.KeyConditions as Record<string, { ComparisonOperator?: string; AttributeValueList?: unknown[] }>
    )[hashKey];
    const value = condition?.ComparisonOperator === "EQ" ? attributeText(condition.AttributeValueList?.[0]) : undefined;
    if (value === undefined)
      throw new KeyConditionError(`its KeyConditions name no EQ on the partition key ${hashKey}`);
    return value;
  }
  const expression = String(body.KeyConditionExpression ?? "");
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const attribute = (operand: string) =>
    operand.startsWith("#") ? names[operand] : /^[A-Za-z_]\w*$/.test(operand) ? operand : undefined;
  const found: string[] = [];
  for (const raw of expression.split(/\s+AND\s+/i)) {
    const clause = raw
      .trim()
      .replace(/^\((.*)\)$/s, "$1")
      .trim();
    const equality = /^([#:]?\w+)\s*=\s*([#:]?\w+)$/.exec(clause);
    const mentions = [...clause.matchAll(/[#:]?\w+/g)]
      .map(([token]) => token)
      .filter((token) => attribute(token) === hashKey);
    if (!equality) {
      if (mentions.length)
        throw new KeyConditionError(
          `its clause "${clause}" uses the partition key ${hashKey} other than in an equality`,
        );
      continue;
    }
    const [, left = "", right = ""] = equality;
    const [keySide, valueSide] =
      attribute(left) === hashKey ? [left, right] : attribute(right) === hashKey ? [right, left] : [];
    if (!keySide || !valueSide) continue;
    const value = valueSide.startsWith(":") ? attributeText(values[valueSide]) : undefined;
    if (value === undefined)
      throw new KeyConditionError(
        `its clause "${clause}" compares ${hashKey} with ${valueSide}, which is no value placeholder of the request`,
      );
    found.push(value);
  }
  if (found.length !== 1) {
    throw new KeyConditionError(
      `its KeyConditionExpression "${expression}" names the partition key ${hashKey} ${found.length === 0 ? "in no" : "in more than one"} equality`,
    );
  }
  return found[0] as string;
}

/** The IAM requests one recorded call makes; `unmodelled` (a failure) when the rehearsal cannot say. */
export function requestsOf(
  call: RecordedCall,
  caller: string,
  resolver: Resolver,
): { requests: IamRequest[]; unmodelled?: string } {
  const { region, account } = resolver;
  const because = `${call.service}:${call.operation}`;
  const step = call.step;
  const at = step === undefined ? {} : { step };
  if (call.service === "dynamodb") {
    const tableName = String(call.body.TableName ?? "");
    const indexName = call.body.IndexName === undefined ? undefined : String(call.body.IndexName);
    const tableArn = `arn:aws:dynamodb:${region}:${account}:table/${tableName}`;
    const resource = indexName ? `${tableArn}/index/${indexName}` : tableArn;
    const key = hashKeyOf(resolver, tableName, indexName);
    const action = `dynamodb:${call.operation}`;
    // dynamodb:LeadingKeys holds the partition key values an item request or a Query names:
    // https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html
    let leadingKey: string | undefined;
    try {
      if (["GetItem", "DeleteItem", "UpdateItem", "PutItem"].includes(call.operation)) {
        if (!key) throw new KeyConditionError(`${tableName} is no table of the stage`);
        const item = (call.operation === "PutItem" ? call.body.Item : call.body.Key) as
          | Record<string, unknown>
          | undefined;
        leadingKey = attributeText(item?.[key]);
        if (leadingKey === undefined)
          throw new KeyConditionError(
            `its ${call.operation === "PutItem" ? "Item" : "Key"} has no partition key ${key}`,
          );
      } else if (call.operation === "Query") {
        if (!key)
          throw new KeyConditionError(
            `${indexName ? `index ${indexName} of ` : ""}${tableName} is no table or index of the stage`,
          );
        leadingKey = queryPartitionKey(call.body, key);
      } else if (call.operation !== "Scan" && call.operation !== "DescribeTable") {
        return {
          requests: [],
          unmodelled: `dynamodb:${call.operation} (batch, PartiQL and transaction requests are not modelled)`,
        };
      }
    } catch (error) {
      if (!(error instanceof KeyConditionError)) throw error;
      return {
        requests: [],
        unmodelled: `dynamodb:${call.operation} on ${resource}, whose partition key cannot be read: ${error.message}`,
      };
    }
    return {
      requests: [
        {
          caller,
          action,
          resource,
          context: leadingKey === undefined ? {} : { "dynamodb:LeadingKeys": [leadingKey] },
          because,
          ...at,
        },
      ],
    };
  }
  if (call.service === "secretsmanager") {
    const secretId = String(call.body.SecretId ?? "");
    const requests: IamRequest[] = [
      { caller, action: `secretsmanager:${call.operation}`, resource: secretId, context: {}, because, ...at },
    ];
    // A secret encrypted with a customer managed key is read (and written) through KMS on the caller's behalf:
    // https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html
    for (const [logicalId, secret] of resourcesOf(resolver.stack.template, "AWS::SecretsManager::Secret")) {
      if (resolver.ref(logicalId) !== secretId || secret.Properties?.KmsKeyId === undefined) continue;
      const keyArn = String(resolver.resolve(secret.Properties.KmsKeyId));
      requests.push({
        caller,
        action: call.operation === "GetSecretValue" ? "kms:Decrypt" : "kms:GenerateDataKey",
        resource: keyArn,
        context: { "kms:ViaService": `secretsmanager.${region}.amazonaws.com`, "kms:CallerAccount": account },
        because: `${because} of a secret encrypted with ${logicalId}'s key`,
        ...at,
      });
    }
    return { requests };
  }
  return { requests: [], unmodelled: `${call.service}:${call.operation} (no stand-in models this service)` };
}
