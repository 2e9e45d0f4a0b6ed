/**
 * The calls AWS services make for the stage, evaluated against the template's resource, trust and
 * key policies: API Gateway invoking each alias (the source ARN of each method), EventBridge
 * Scheduler assuming its role and invoking the check, CloudWatch alarms publishing to their topics
 * and using the topics' keys, CloudWatch Logs using the logs key for each log group, CodeDeploy
 * assuming its role, shifting each alias and reading its alarms, Lambda assuming each function's
 * execution role. Each is also made from elsewhere (another account, API, alarm, log group, or
 * service), which must be denied; for a topic's key, whose request carries no documented source to
 * tell accounts apart, that is the topic policy's to refuse, and the key must deny CloudWatch what
 * encrypting a notification does not need.
 *
 * The kinds of call are a table (SERVICE_CALLS): each finds its concrete calls in the stage, and one
 * loop (servicePrincipalChecks) evaluates every call and each of its variants from elsewhere.
 */

import { type CfnResource, type CfnTemplate, resourcesOf } from "./assembly";
import { OTHER_ACCOUNT } from "./configurations";
import { type Decision, evaluate } from "./iam";
import {
  asRole,
  functionPolicyOf,
  keyPolicyOf,
  type NamedPolicy,
  resourcePolicyOf,
  roleGrants,
  roleWithArn,
  trustPolicyOf,
} from "./policies";
import type { Resolver } from "./resolve";

type Expectation = { decision: Decision; expected: "allow" | "deny" };

/** What the checks need of a stage: ./stage.ts's StageRehearsal is one, and so is a hand-made stand-in. */
export interface ServicePrincipalStage {
  readonly resolver: Resolver;
  /** The functions this project writes, with their execution roles. */
  readonly functions: readonly { readonly logicalId: string; readonly roleLogicalId: string | undefined }[];
}

type ServiceRequest = Decision["request"];
/** Who IAM sees calling, and the policies that decide: identity grants, boundaries, resource policy. */
type DecidedBy = Parameters<typeof evaluate>[1];

/** The same call made from elsewhere, or beyond what the service needs: it must be denied. */
interface Elsewhere {
  readonly because: string;
  readonly request?: Partial<Omit<ServiceRequest, "because">>;
  readonly decidedBy?: Partial<DecidedBy>;
}

/** One call a service makes for the stage, which must be allowed, and its variants that must not. */
export interface ServiceCall {
  readonly request: ServiceRequest;
  readonly decidedBy: DecidedBy;
  readonly elsewhere: readonly Elsewhere[];
}

interface ServiceCallKind {
  /** The AWS service making the calls. */
  readonly service: string;
  readonly describe: string;
  readonly find: (stage: ServicePrincipalStage) => ServiceCall[];
}

const LAMBDA = "lambda.amazonaws.com";
/** A principal of another account, which its own account lets assume any role. */
const OTHER_ACCOUNT_ROOT = `arn:aws:iam::${OTHER_ACCOUNT}:root`;
/**
 * A call across accounts is allowed only if the caller's own identity policies allow it as well as
 * the resource's policy (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic-cross-account.html),
 * so the other account's principal gets an identity policy allowing it: the trust policy alone decides.
 */
const OTHER_ACCOUNT_GRANTS: NamedPolicy = {
  name: `${OTHER_ACCOUNT}'s own grant to assume any role`,
  document: { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "sts:AssumeRole", Resource: "*" }] },
};

/**
 * A service assuming a role of the template: its trust policy decides. The same request for another
 * account (the service's aws:SourceAccount, for a service that sends it: the confused-deputy key a
 * trust policy checks, https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html), by a
 * principal of another account, and by a service the role is not for must be denied: a role trusted
 * by the wrong service is a finding.
 */
function roleAssumption(
  resolver: Resolver,
  service: string,
  roleLogicalId: string,
  because: string,
  options: { sendsSourceAccount: boolean; wrongService?: string },
): ServiceCall {
  const { account } = resolver;
  const trust = trustPolicyOf(resolver, roleLogicalId);
  const elsewhere: Elsewhere[] = [];
  if (options.sendsSourceAccount) {
    elsewhere.push({
      because: `${because}, for another account`,
      request: { context: { "aws:SourceAccount": OTHER_ACCOUNT } },
    });
  }
  elsewhere.push({
    because: `${because}, by a principal of another account`,
    request: { caller: OTHER_ACCOUNT_ROOT, context: {} },
    decidedBy: {
      principal: OTHER_ACCOUNT_ROOT,
      principalAccount: OTHER_ACCOUNT,
      identityPolicies: [OTHER_ACCOUNT_GRANTS],
    },
  });
  if (options.wrongService) {
    elsewhere.push({
      because: `${because}, by ${options.wrongService}, which the role is not for`,
      request: { caller: options.wrongService },
      decidedBy: { principal: options.wrongService },
    });
  }
  return {
    request: {
      caller: service,
      action: "sts:AssumeRole",
      resource: resolver.getAtt(roleLogicalId, "Arn"),
      context: options.sendsSourceAccount ? { "aws:SourceAccount": account } : {},
      because,
    },
    decidedBy: { principal: service, principalAccount: account, resourcePolicy: trust },
    elsewhere,
  };
}

/** A service calling with the role it assumed: the role's grants decide. */
function assumedRole(resolver: Resolver, service: string, roleLogicalId: string, resource?: string): DecidedBy {
  // The resource's own policy counts too (a function's permissions can deny its invoker).
  return asRole(resolver, roleGrants(resolver, roleLogicalId), service, resource);
}

/**
 * The method's part of the execute-api ARN the call comes from, `<stage>/GET/pets/*`
 * (`api-id/stage/http-method/resource-path`:
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/arn-format-reference.html), from the
 * template alone, each path parameter a wildcard as the invoke permissions name it: the check does
 * not depend on the scenario having called the method.
 */
function methodPathOf(template: CfnTemplate, stageName: string, method: CfnResource): string {
  const pathOf = (resourceId: unknown): string => {
    const parent = template.Resources[(resourceId as { Ref?: string } | undefined)?.Ref ?? ""];
    return parent?.Type === "AWS::ApiGateway::Resource"
      ? `${pathOf(parent.Properties?.ParentId)}/${String(parent.Properties?.PathPart)}`
      : "";
  };
  const path = pathOf(method.Properties?.ResourceId) || "/";
  return `${stageName}/${method.Properties?.HttpMethod}${path.replace(/\{[^}]+\}/g, "*")}`;
}

/**
 * API Gateway → each alias a proxy method integrates: the alias's Lambda permissions are its
 * resource policy, and the method's ARN the source of the call.
 */
function apiGatewayInvocations({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const { template } = resolver.stack;
  const { account, region } = resolver;
  const [[apiLogicalId] = []] = resourcesOf(template, "AWS::ApiGateway::RestApi");
  const [[, stage] = []] = resourcesOf(template, "AWS::ApiGateway::Stage");
  if (!apiLogicalId || !stage) return [];
  const stageName = String(resolver.resolve(stage.Properties?.StageName));
  // A function with no permission for the ARN invoked has an empty policy: every invocation is denied.
  const policyOfFunction = (functionArn: string): NamedPolicy =>
    functionPolicyOf(resolver, functionArn) ?? {
      name: `Lambda permissions of ${functionArn} (none)`,
      document: { Version: "2012-10-17", Statement: [] },
    };
  const apiId = resolver.ref(apiLogicalId);
  return resourcesOf(template, "AWS::ApiGateway::Method").flatMap(([, method]) => {
    const integration = method.Properties?.Integration as { Type?: string; Uri?: unknown } | undefined;
    if (integration?.Type !== "AWS_PROXY") return [];
    const aliasArn = /functions\/(.+)\/invocations$/.exec(String(resolver.resolve(integration.Uri)))?.[1] ?? "";
    const methodPath = methodPathOf(template, stageName, method);
    const from = (apiAccount: string, id: string) => ({
      "aws:SourceArn": `arn:aws:execute-api:${region}:${apiAccount}:${id}/${methodPath}`,
      "aws:SourceAccount": apiAccount,
    });
    const because = `API Gateway invoking the alias for ${methodPath}`;
    return [
      {
        request: {
          caller: "apigateway.amazonaws.com",
          action: "lambda:InvokeFunction",
          resource: aliasArn,
          context: from(account, apiId),
          because,
        },
        decidedBy: {
          principal: "apigateway.amazonaws.com",
          principalAccount: account,
          resourcePolicy: policyOfFunction(aliasArn),
        },
        elsewhere: [
          { because: `${because}, from another account`, request: { context: from(OTHER_ACCOUNT, apiId) } },
          { because: `${because}, from another API`, request: { context: from(account, "otherapi01") } },
        ],
      },
    ];
  });
}

/**
 * EventBridge Scheduler → each schedule's role, then its target with that role. Scheduler assumes
 * the role with its account as aws:SourceAccount, which AWS documents for the role's trust policy:
 * https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role
 */
function schedulerInvocations({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const service = "scheduler.amazonaws.com";
  return resourcesOf(resolver.stack.template, "AWS::Scheduler::Schedule").flatMap(([logicalId, schedule]) => {
    const target = schedule.Properties?.Target as { Arn?: unknown; RoleArn?: unknown } | undefined;
    const roleLogicalId = roleWithArn(resolver, target?.RoleArn);
    if (!roleLogicalId) return [];
    return [
      roleAssumption(resolver, service, roleLogicalId, `${logicalId} assuming its role`, {
        sendsSourceAccount: true,
        wrongService: LAMBDA,
      }),
      {
        request: {
          caller: service,
          action: "lambda:InvokeFunction",
          resource: String(resolver.resolve(target?.Arn)),
          context: {},
          because: `${logicalId} invoking its target`,
        },
        decidedBy: assumedRole(resolver, service, roleLogicalId, String(resolver.resolve(target?.Arn))),
        elsewhere: [],
      },
    ];
  });
}

/** The SNS topics of the template each alarm notifies (alarm and OK actions). */
function alarmNotifications(resolver: Resolver) {
  const { template } = resolver.stack;
  const topics = new Map(
    resourcesOf(template, "AWS::SNS::Topic").map(([logicalId, topic]) => [
      resolver.ref(logicalId),
      { logicalId, topic },
    ]),
  );
  return resourcesOf(template, "AWS::CloudWatch::Alarm").flatMap(([alarmLogicalId, alarm]) => {
    const actions = resolver.resolve([
      ...((alarm.Properties?.AlarmActions as unknown[]) ?? []),
      ...((alarm.Properties?.OKActions as unknown[]) ?? []),
    ]) as string[];
    return [...new Set(actions)].flatMap((topicArn) => {
      const topic = topics.get(topicArn);
      return topic ? [{ alarmLogicalId, topicArn, topicLogicalId: topic.logicalId, topic: topic.topic }] : [];
    });
  });
}

/**
 * CloudWatch alarms → their SNS topics. CloudWatch publishes over TLS with the alarm as the source,
 * which SNS evaluates in the topic policy
 * (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html,
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-actions.html).
 */
function alarmPublications({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const { account, region } = resolver;
  return alarmNotifications(resolver).map(({ alarmLogicalId, topicArn, topicLogicalId }) => {
    const from = (alarmArn: string, alarmAccount: string) => ({
      "aws:SourceArn": alarmArn,
      "aws:SourceAccount": alarmAccount,
      "aws:SecureTransport": "true",
    });
    const otherAlarmArn = `arn:aws:cloudwatch:${region}:${OTHER_ACCOUNT}:alarm:${resolver.ref(alarmLogicalId)}`;
    const because = `alarm ${alarmLogicalId} notifying ${topicLogicalId}`;
    return {
      request: {
        caller: "cloudwatch.amazonaws.com",
        action: "sns:Publish",
        resource: topicArn,
        context: from(resolver.getAtt(alarmLogicalId, "Arn"), account),
        because,
      },
      decidedBy: {
        principal: "cloudwatch.amazonaws.com",
        principalAccount: account,
        // A topic without a policy has an empty one here: nothing lets CloudWatch publish.
        resourcePolicy: resourcePolicyOf(resolver, topicArn) ?? {
          name: `${topicLogicalId} topic policy (none)`,
          document: { Version: "2012-10-17", Statement: [] },
        },
      },
      elsewhere: [
        {
          because: `${because}, from another account's alarm`,
          request: { context: from(otherAlarmArn, OTHER_ACCOUNT) },
        },
      ],
    };
  });
}

/**
 * The key use a publish to an encrypted topic causes. AWS documents CloudWatch's key policy
 * statement without conditions (kms:Decrypt, kms:GenerateDataKey*:
 * https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services,
 * https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns) and documents the
 * confused-deputy keys for the topic policy only, so the request is modelled without
 * aws:SourceArn or aws:SourceAccount: a key policy that needs them is reported, as it could make
 * every notification fail in AWS. Another account's alarm is refused at the topic policy
 * (alarmPublications). The key must refuse what encrypting a notification does not need.
 */
function alarmTopicKeyUses({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const topicsOfKey = new Map<string, Set<string>>();
  for (const { topicLogicalId, topic } of alarmNotifications(resolver)) {
    const keyId = topic.Properties?.KmsMasterKeyId;
    if (keyId === undefined) continue;
    const keyArn = String(resolver.resolve(keyId));
    topicsOfKey.set(keyArn, (topicsOfKey.get(keyArn) ?? new Set()).add(topicLogicalId));
  }
  return [...topicsOfKey].flatMap(([keyArn, topicIds]) => {
    const keyPolicy = keyPolicyOf(resolver, keyArn);
    if (!keyPolicy) return [];
    const because = `CloudWatch publishing to the encrypted ${[...topicIds].join(" and ")}`;
    const use = (action: string, elsewhere: Elsewhere[]): ServiceCall => ({
      request: { caller: "cloudwatch.amazonaws.com", action, resource: keyArn, context: {}, because },
      decidedBy: {
        principal: "cloudwatch.amazonaws.com",
        principalAccount: resolver.account,
        resourcePolicy: keyPolicy,
      },
      elsewhere,
    });
    // Nothing that reads or re-encrypts other data.
    const beyondNeed = ["kms:Encrypt", "kms:ReEncryptFrom", "kms:CreateGrant"].map((action) => ({
      because: `${because}: ${action} is no part of it`,
      request: { action },
    }));
    return [use("kms:GenerateDataKey", beyondNeed), use("kms:Decrypt", [])];
  });
}

/**
 * CloudWatch Logs → the key of each encrypted log group, with the group in the encryption context:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
 */
function logGroupKeyUses({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const { account, region } = resolver;
  const principal = `logs.${region}.amazonaws.com`;
  return resourcesOf(resolver.stack.template, "AWS::Logs::LogGroup").flatMap(([logicalId, group]) => {
    if (group.Properties?.KmsKeyId === undefined) return [];
    const keyArn = String(resolver.resolve(group.Properties.KmsKeyId));
    const keyPolicy = keyPolicyOf(resolver, keyArn);
    if (!keyPolicy) return [];
    const name = resolver.ref(logicalId);
    const forGroup = (groupAccount: string, groupName: string) => ({
      "kms:EncryptionContext:aws:logs:arn": `arn:aws:logs:${region}:${groupAccount}:log-group:${groupName}`,
      "aws:SourceAccount": account,
    });
    return ["kms:Encrypt", "kms:GenerateDataKey", "kms:Decrypt"].map((action) => ({
      request: {
        caller: principal,
        action,
        resource: keyArn,
        context: forGroup(account, name),
        because: `CloudWatch Logs using the key for ${logicalId}`,
      },
      decidedBy: { principal, principalAccount: account, resourcePolicy: keyPolicy },
      elsewhere: [
        {
          because: `CloudWatch Logs using the key for ${logicalId}'s name in another account`,
          request: { context: forGroup(OTHER_ACCOUNT, name) },
        },
        {
          because: "CloudWatch Logs using the key for a log group of no stage",
          request: { context: forGroup(account, "another-log-group") },
        },
      ],
    }));
  });
}

/** CodeDeploy → each alias it shifts (the alias's UpdatePolicy names the deployment group), with the group's role. */
function codeDeployShifts({ resolver }: ServicePrincipalStage): ServiceCall[] {
  const service = "codedeploy.amazonaws.com";
  const { template } = resolver.stack;
  const { account, region } = resolver;
  const groups = resourcesOf(template, "AWS::CodeDeploy::DeploymentGroup");
  return resourcesOf(template, "AWS::Lambda::Alias").flatMap(([aliasLogicalId, alias]) => {
    const update = (alias as { UpdatePolicy?: { CodeDeployLambdaAliasUpdate?: { DeploymentGroupName?: unknown } } })
      .UpdatePolicy?.CodeDeployLambdaAliasUpdate;
    if (!update) return [];
    const groupName = String(resolver.resolve(update.DeploymentGroupName));
    const [groupLogicalId, group] =
      groups.find(
        ([logicalId, candidate]) =>
          resolver.ref(logicalId) === groupName ||
          String(resolver.resolve(candidate.Properties?.DeploymentGroupName)) === groupName,
      ) ?? [];
    const roleLogicalId = group ? roleWithArn(resolver, group.Properties?.ServiceRoleArn) : undefined;
    if (!groupLogicalId || !group || !roleLogicalId) return [];
    const withRole = assumedRole(resolver, service, roleLogicalId);
    const aliasArn = resolver.ref(aliasLogicalId);
    const call = (action: string, resource: string, because: string, elsewhere: Elsewhere[]): ServiceCall => ({
      request: { caller: service, action, resource, context: {}, because },
      decidedBy: resource.includes(":lambda:") ? assumedRole(resolver, service, roleLogicalId, resource) : withRole,
      elsewhere,
    });
    const alarms = resolver.resolve(
      (group.Properties?.AlarmConfiguration as { Alarms?: { Name: unknown }[] } | undefined)?.Alarms ?? [],
    ) as { Name: string }[];
    return [
      roleAssumption(resolver, service, roleLogicalId, `deployment group ${groupLogicalId} assuming its role`, {
        sendsSourceAccount: true,
        wrongService: LAMBDA,
      }),
      ...["lambda:GetAlias", "lambda:UpdateAlias"].map((action) =>
        call(action, aliasArn, `${groupLogicalId} shifting ${aliasLogicalId}`, [
          {
            because: `${groupLogicalId} shifting an alias of another account`,
            request: { resource: aliasArn.replace(`:${account}:`, `:${OTHER_ACCOUNT}:`) },
          },
        ]),
      ),
      ...alarms.map(({ Name }) =>
        call(
          "cloudwatch:DescribeAlarms",
          `arn:aws:cloudwatch:${region}:${account}:alarm:${Name}`,
          `${groupLogicalId} reading its rollback alarm`,
          [],
        ),
      ),
    ];
  });
}

/**
 * Lambda → each project function's execution role. Lambda assumes the role on every invocation, and
 * the role's trust policy must name the Lambda service principal
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-intro-execution-role.html). That page
 * documents no aws:SourceAccount or aws:SourceArn on the request, and services differ in whether
 * they send them (https://github.com/prowler-cloud/prowler/issues/7021), so the request is
 * modelled without them: a trust policy that needs them is reported, as it could keep every
 * function from starting. Another account is tried as a principal of its own instead.
 */
function executionRoleAssumptions({ resolver, functions }: ServicePrincipalStage): ServiceCall[] {
  const functionsOfRole = new Map<string, string[]>();
  for (const { logicalId, roleLogicalId } of functions) {
    if (roleLogicalId) functionsOfRole.set(roleLogicalId, [...(functionsOfRole.get(roleLogicalId) ?? []), logicalId]);
  }
  return [...functionsOfRole].map(([roleLogicalId, functionIds]) =>
    roleAssumption(
      resolver,
      LAMBDA,
      roleLogicalId,
      `Lambda assuming ${roleLogicalId}, the execution role of ${functionIds.join(" and ")}`,
      { sendsSourceAccount: false },
    ),
  );
}

/** Every kind of call AWS services make for a stage. */
export const SERVICE_CALLS: readonly ServiceCallKind[] = [
  {
    service: "apigateway.amazonaws.com",
    describe: "API Gateway invoking each alias a proxy method integrates",
    find: apiGatewayInvocations,
  },
  {
    service: "scheduler.amazonaws.com",
    describe: "EventBridge Scheduler assuming each schedule's role and invoking its target",
    find: schedulerInvocations,
  },
  {
    service: "cloudwatch.amazonaws.com",
    describe: "CloudWatch alarms publishing to the topics they notify",
    find: alarmPublications,
  },
  {
    service: "cloudwatch.amazonaws.com",
    describe: "CloudWatch using the keys of the encrypted topics alarms notify",
    find: alarmTopicKeyUses,
  },
  {
    service: "logs.<region>.amazonaws.com",
    describe: "CloudWatch Logs using the key of each encrypted log group",
    find: logGroupKeyUses,
  },
  {
    service: "codedeploy.amazonaws.com",
    describe: "CodeDeploy assuming each deployment group's role, shifting its alias and reading its alarms",
    find: codeDeployShifts,
  },
  {
    service: LAMBDA,
    describe: "Lambda assuming each project function's execution role",
    find: executionRoleAssumptions,
  },
];

/** Each call allowed from the stage, and each of its variants from elsewhere denied. */
export async function servicePrincipalChecks(
  stage: ServicePrincipalStage,
  kinds: readonly ServiceCallKind[] = SERVICE_CALLS,
): Promise<Expectation[]> {
  const out: Expectation[] = [];
  for (const kind of kinds) {
    for (const { request, decidedBy, elsewhere } of kind.find(stage)) {
      out.push({ expected: "allow", decision: await evaluate(request, decidedBy) });
      for (const variant of elsewhere) {
        out.push({
          expected: "deny",
          decision: await evaluate(
            { ...request, ...variant.request, because: variant.because },
            { ...decidedBy, ...variant.decidedBy },
          ),
        });
      }
    }
  }
  return out;
}
