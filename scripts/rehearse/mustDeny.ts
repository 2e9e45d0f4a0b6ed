/**
 * The calls each role must never be allowed, whatever the code does today. Roles are told apart by
 * what the template wires their function to: behind the REST API (an API function), a schedule
 * target (the synthetic check), a custom resource's service token (the key provisioner).
 */
import { type AssemblyStack, resourcesOf } from "./assembly";
import type { IamRequest } from "./iam";
import type { StageRehearsal } from "./stage";

export function mustDenyRequests(
  stage: StageRehearsal,
  stageStacks: readonly AssemblyStack[],
  apiKeyPartition: string,
  /** Every stack of the assembly: other stages keep their tables in data stacks of their own. */
  allStacks: readonly AssemblyStack[] = stageStacks,
): { roleLogicalId: string | undefined; request: IamRequest }[] {
  const { resolver, stack } = stage;
  const { template } = stack;
  const tableArns = resolver.tables().map((table) => table.resolver.getAtt(table.logicalId, "Arn"));
  const otherTables = [
    `arn:aws:dynamodb:${stack.region}:${stack.account}:table/another-table`,
    ...stageStacks
      .filter((other) => other !== stack)
      .flatMap((other) => {
        const otherStage = new (resolver.constructor as typeof import("./resolve").Resolver)(other, allStacks);
        return otherStage.tables().map((table) => table.resolver.getAtt(table.logicalId, "Arn"));
      }),
  ];
  const apiAliases = new Set(stage.api ? [...stage.aliases.keys()] : []);
  const apiFunctions = new Set([...apiAliases].map((arn) => stage.aliases.get(arn)));
  const scheduled = new Set(
    resourcesOf(template, "AWS::Scheduler::Schedule").map(
      ([, schedule]) => (resolver.resolve(schedule.Properties?.Target) as { Arn?: string }).Arn,
    ),
  );
  const serviceTokens = new Set(
    Object.values(template.Resources)
      .filter((resource) => resource.Type.startsWith("Custom::"))
      .map((resource) => resolver.resolve(resource.Properties?.ServiceToken)),
  );
  const requests: { roleLogicalId: string | undefined; request: IamRequest }[] = [];
  const deny = (
    fn: (typeof stage.functions)[number],
    action: string,
    resource: string,
    keys: string[] | undefined,
    because: string,
  ) =>
    requests.push({
      roleLogicalId: fn.roleLogicalId,
      request: {
        caller: fn.logicalId,
        action,
        resource,
        context: keys ? { "dynamodb:LeadingKeys": keys } : {},
        because,
      },
    });
  for (const fn of stage.functions) {
    if (apiFunctions.has(fn.logicalId)) {
      for (const table of tableArns) {
        for (const action of ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]) {
          deny(fn, action, table, [apiKeyPartition], "an API function writing an API key record");
        }
        deny(fn, "dynamodb:Scan", table, undefined, "an API function scanning the table");
      }
      for (const table of otherTables) {
        deny(fn, "dynamodb:GetItem", table, ["PET"], "an API function reading another table or stage");
        deny(fn, "dynamodb:GetItem", table, [apiKeyPartition], "an API function reading another stage's keys");
      }
    }
    if (scheduled.has(fn.spec.functionArn)) {
      for (const table of tableArns) {
        for (const action of [
          "dynamodb:PutItem",
          "dynamodb:UpdateItem",
          "dynamodb:DeleteItem",
          "dynamodb:GetItem",
          "dynamodb:Scan",
        ]) {
          deny(
            fn,
            action,
            table,
            action === "dynamodb:Scan" ? undefined : [apiKeyPartition],
            "the synthetic check touching the table",
          );
        }
      }
      for (const [logicalId] of resourcesOf(template, "AWS::SecretsManager::Secret")) {
        deny(
          fn,
          "secretsmanager:PutSecretValue",
          resolver.ref(logicalId),
          undefined,
          "the synthetic check writing its key",
        );
      }
    }
    if (serviceTokens.has(fn.spec.functionArn)) {
      for (const table of tableArns) {
        for (const partition of ["PET", "COUNTER", "IDEMPOTENCY#key"]) {
          for (const action of ["dynamodb:PutItem", "dynamodb:UpdateItem"]) {
            deny(fn, action, table, [partition], "the key provisioner writing outside the API key partition");
          }
        }
        deny(fn, "dynamodb:DeleteItem", table, [apiKeyPartition], "the key provisioner deleting key records");
        deny(fn, "dynamodb:Scan", table, undefined, "the key provisioner scanning the table");
      }
      for (const table of otherTables)
        deny(fn, "dynamodb:PutItem", table, [apiKeyPartition], "the key provisioner writing another table or stage");
    }
  }
  return requests;
}
