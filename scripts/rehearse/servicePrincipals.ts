/**
 * The calls AWS services make for the stage, evaluated against the template's resource, trust and
 * key policies: API Gateway invoking each alias (the source ARN of each method), EventBridge
 * Scheduler assuming its role and invoking the check, CloudWatch alarms publishing to their topics
 * and using the topics' keys, CloudWatch Logs using the logs key for each log group, CodeDeploy
 * assuming its role, shifting each alias and reading its alarms. Each is also made from another
 * account (or API, or log group), which must be denied; for a topic's key, whose request carries no
 * documented source to tell accounts apart, that is the topic policy's to refuse, and the key must
 * deny CloudWatch what encrypting a notification does not need.
 */

import { resourcesOf } from "./assembly";
import { OTHER_ACCOUNT } from "./configurations";
import { type Decision, evaluate, keyPolicyOf, type NamedPolicy, rolePolicies } from "./iam";
import type { StageRehearsal } from "./stage";

type Expectation = { decision: Decision; expected: "allow" | "deny" };

export async function servicePrincipalChecks(stage: StageRehearsal): Promise<Expectation[]> {
  const { resolver, stack } = stage;
  const { template } = stack;
  const { account, region } = resolver;
  const out: Expectation[] = [];
  const check = async (
    expected: "allow" | "deny",
    caller: string,
    action: string,
    resource: string,
    context: Record<string, string | string[]>,
    because: string,
    options: { principal: string; identityPolicies?: NamedPolicy[]; resourcePolicy?: NamedPolicy },
  ) => {
    out.push({
      expected,
      decision: await evaluate(
        { caller, action, resource, context, because },
        { principalAccount: account, ...options },
      ),
    });
  };

  // API Gateway → each alias: the Lambda permissions of the alias are its resource policy.
  const permissions = resourcesOf(template, "AWS::Lambda::Permission").map(([logicalId, permission]) => {
    const p = resolver.resolve(permission.Properties ?? {}) as Record<string, string | undefined>;
    return {
      logicalId,
      FunctionName: p.FunctionName,
      Principal: p.Principal,
      Action: p.Action,
      SourceArn: p.SourceArn,
      SourceAccount: p.SourceAccount,
    };
  });
  const policyOfFunction = (functionArn: string): NamedPolicy => ({
    name: `Lambda permissions of ${functionArn}`,
    document: {
      Version: "2012-10-17",
      Statement: permissions
        .filter((p) => p.FunctionName === functionArn)
        .map((p) => ({
          Sid: p.logicalId,
          Effect: "Allow",
          Principal: p.Principal?.includes(".") ? { Service: p.Principal } : { AWS: p.Principal },
          Action: p.Action,
          Resource: functionArn,
          Condition: {
            ...(p.SourceArn ? { ArnLike: { "AWS:SourceArn": p.SourceArn } } : {}),
            ...(p.SourceAccount ? { StringEquals: { "AWS:SourceAccount": p.SourceAccount } } : {}),
          },
        })),
    },
  });
  const [[apiLogicalId] = []] = resourcesOf(template, "AWS::ApiGateway::RestApi");
  if (apiLogicalId && stage.api) {
    const apiId = resolver.ref(apiLogicalId);
    for (const [, method] of resourcesOf(template, "AWS::ApiGateway::Method")) {
      const integration = method.Properties?.Integration as { Type?: string; Uri?: unknown } | undefined;
      if (integration?.Type !== "AWS_PROXY") continue;
      const aliasArn = /functions\/(.+)\/invocations$/.exec(String(resolver.resolve(integration.Uri)))?.[1] ?? "";
      const invoked = stage.api.invocations.find((invocation) => invocation.aliasArn === aliasArn);
      const methodPath = invoked?.methodPath ?? `${stage.api.stageName}/${method.Properties?.HttpMethod}/`;
      const sourceArn = (apiAccount: string, id: string) =>
        `arn:aws:execute-api:${region}:${apiAccount}:${id}/${methodPath}`;
      const options = { principal: "apigateway.amazonaws.com", resourcePolicy: policyOfFunction(aliasArn) };
      const because = `API Gateway invoking the alias for ${methodPath}`;
      await check(
        "allow",
        "apigateway.amazonaws.com",
        "lambda:InvokeFunction",
        aliasArn,
        { "aws:SourceArn": sourceArn(account, apiId), "aws:SourceAccount": account },
        because,
        options,
      );
      await check(
        "deny",
        "apigateway.amazonaws.com",
        "lambda:InvokeFunction",
        aliasArn,
        { "aws:SourceArn": sourceArn(OTHER_ACCOUNT, apiId), "aws:SourceAccount": OTHER_ACCOUNT },
        `${because}, from another account`,
        options,
      );
      await check(
        "deny",
        "apigateway.amazonaws.com",
        "lambda:InvokeFunction",
        aliasArn,
        { "aws:SourceArn": sourceArn(account, "otherapi01"), "aws:SourceAccount": account },
        `${because}, from another API`,
        options,
      );
    }
  }

  // A service assuming a role of the template, then calling with it.
  const assumeRole = async (service: string, roleLogicalId: string, because: string) => {
    const role = template.Resources[roleLogicalId];
    const trust: NamedPolicy = {
      name: `${roleLogicalId} trust policy`,
      document: resolver.resolve(role?.Properties?.AssumeRolePolicyDocument) as NamedPolicy["document"],
    };
    const roleArn = resolver.getAtt(roleLogicalId, "Arn");
    await check("allow", service, "sts:AssumeRole", roleArn, { "aws:SourceAccount": account }, because, {
      principal: service,
      resourcePolicy: trust,
    });
    await check(
      "deny",
      service,
      "sts:AssumeRole",
      roleArn,
      { "aws:SourceAccount": OTHER_ACCOUNT },
      `${because}, for another account`,
      { principal: service, resourcePolicy: trust },
    );
    return {
      principal: `arn:aws:sts::${account}:assumed-role/${resolver.ref(roleLogicalId)}/${service}`,
      identityPolicies: rolePolicies(resolver, roleLogicalId).policies,
    };
  };
  const roleOf = (value: unknown) => {
    const arn = String(resolver.resolve(value));
    return resourcesOf(template, "AWS::IAM::Role").find(
      ([logicalId]) => resolver.getAtt(logicalId, "Arn") === arn,
    )?.[0];
  };

  for (const [logicalId, schedule] of resourcesOf(template, "AWS::Scheduler::Schedule")) {
    const target = schedule.Properties?.Target as { Arn?: unknown; RoleArn?: unknown } | undefined;
    const roleLogicalId = roleOf(target?.RoleArn);
    if (!roleLogicalId) continue;
    const as = await assumeRole("scheduler.amazonaws.com", roleLogicalId, `${logicalId} assuming its role`);
    await check(
      "allow",
      "scheduler.amazonaws.com",
      "lambda:InvokeFunction",
      String(resolver.resolve(target?.Arn)),
      {},
      `${logicalId} invoking its target`,
      as,
    );
  }

  // CloudWatch alarms → SNS topics of the template, and the topics' keys.
  const topicPolicies = resourcesOf(template, "AWS::SNS::TopicPolicy").map(([logicalId, policy]) => ({
    logicalId,
    topics: resolver.resolve(policy.Properties?.Topics) as string[],
    document: resolver.resolve(policy.Properties?.PolicyDocument) as NamedPolicy["document"],
  }));
  const topics = new Map(
    resourcesOf(template, "AWS::SNS::Topic").map(([logicalId, topic]) => [
      resolver.ref(logicalId),
      { logicalId, topic },
    ]),
  );
  /** The key of each encrypted topic some alarm notifies, and those topics. */
  const alarmTopicKeys = new Map<string, string[]>();
  for (const [alarmLogicalId, alarm] of resourcesOf(template, "AWS::CloudWatch::Alarm")) {
    const actions = [
      ...new Set(
        resolver.resolve([
          ...((alarm.Properties?.AlarmActions as unknown[]) ?? []),
          ...((alarm.Properties?.OKActions as unknown[]) ?? []),
        ]) as string[],
      ),
    ];
    for (const topicArn of actions) {
      const topic = topics.get(topicArn);
      if (!topic) continue;
      const alarmArn = resolver.getAtt(alarmLogicalId, "Arn");
      const otherAlarmArn = `arn:aws:cloudwatch:${region}:${OTHER_ACCOUNT}:alarm:${resolver.ref(alarmLogicalId)}`;
      const statements = topicPolicies.filter((p) => p.topics.includes(topicArn)).flatMap((p) => p.document.Statement);
      const topicPolicy: NamedPolicy = {
        name: `${topic.logicalId} topic policy`,
        document: { Version: "2012-10-17", Statement: statements },
      };
      // CloudWatch publishes over TLS with the alarm as the source, which SNS evaluates in the topic
      // policy (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html):
      // https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-actions.html
      const context = (arn: string, from: string) => ({
        "aws:SourceArn": arn,
        "aws:SourceAccount": from,
        "aws:SecureTransport": "true",
      });
      const because = `alarm ${alarmLogicalId} notifying ${topic.logicalId}`;
      const options = { principal: "cloudwatch.amazonaws.com", resourcePolicy: topicPolicy };
      await check(
        "allow",
        "cloudwatch.amazonaws.com",
        "sns:Publish",
        topicArn,
        context(alarmArn, account),
        because,
        options,
      );
      await check(
        "deny",
        "cloudwatch.amazonaws.com",
        "sns:Publish",
        topicArn,
        context(otherAlarmArn, OTHER_ACCOUNT),
        `${because}, from another account's alarm`,
        options,
      );
      const keyId = topic.topic.Properties?.KmsMasterKeyId;
      if (keyId === undefined) continue;
      const keyArn = String(resolver.resolve(keyId));
      alarmTopicKeys.set(keyArn, [...new Set([...(alarmTopicKeys.get(keyArn) ?? []), topic.logicalId])]);
    }
  }
  // The key use a publish to an encrypted topic causes. AWS documents CloudWatch's key policy
  // statement without conditions (kms:Decrypt, kms:GenerateDataKey*:
  // https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services,
  // https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns) and documents the
  // confused-deputy keys for the topic policy only, so the request is modelled without
  // aws:SourceArn or aws:SourceAccount: a key policy that needs them is reported, as it could make
  // every notification fail in AWS. Another account's alarm is refused at the topic policy (above).
  for (const [keyArn, topicIds] of alarmTopicKeys) {
    const keyPolicy = keyPolicyOf(resolver, keyArn);
    if (!keyPolicy) continue;
    const because = `CloudWatch publishing to the encrypted ${topicIds.join(" and ")}`;
    const keyOptions = { principal: "cloudwatch.amazonaws.com", resourcePolicy: keyPolicy };
    for (const action of ["kms:GenerateDataKey", "kms:Decrypt"]) {
      await check("allow", "cloudwatch.amazonaws.com", action, keyArn, {}, because, keyOptions);
    }
    // Only what encrypting a notification needs: nothing that reads or re-encrypts other data.
    for (const action of ["kms:Encrypt", "kms:ReEncryptFrom", "kms:CreateGrant"]) {
      await check(
        "deny",
        "cloudwatch.amazonaws.com",
        action,
        keyArn,
        {},
        `${because}: ${action} is no part of it`,
        keyOptions,
      );
    }
  }

  // CloudWatch Logs → the key of each encrypted log group, with the group in the encryption context:
  // https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
  for (const [logicalId, group] of resourcesOf(template, "AWS::Logs::LogGroup")) {
    if (group.Properties?.KmsKeyId === undefined) continue;
    const keyArn = String(resolver.resolve(group.Properties.KmsKeyId));
    const keyPolicy = keyPolicyOf(resolver, keyArn);
    if (!keyPolicy) continue;
    const name = resolver.ref(logicalId);
    const principal = `logs.${region}.amazonaws.com`;
    const groupArn = (groupAccount: string, groupName: string) =>
      `arn:aws:logs:${region}:${groupAccount}:log-group:${groupName}`;
    for (const action of ["kms:Encrypt", "kms:GenerateDataKey", "kms:Decrypt"]) {
      const ctx = (arn: string) => ({ "kms:EncryptionContext:aws:logs:arn": arn, "aws:SourceAccount": account });
      const options = { principal, resourcePolicy: keyPolicy };
      await check(
        "allow",
        principal,
        action,
        keyArn,
        ctx(groupArn(account, name)),
        `CloudWatch Logs using the key for ${logicalId}`,
        options,
      );
      await check(
        "deny",
        principal,
        action,
        keyArn,
        ctx(groupArn(OTHER_ACCOUNT, name)),
        `CloudWatch Logs using the key for ${logicalId}'s name in another account`,
        options,
      );
      await check(
        "deny",
        principal,
        action,
        keyArn,
        ctx(groupArn(account, "another-log-group")),
        `CloudWatch Logs using the key for a log group of no stage`,
        options,
      );
    }
  }

  // CodeDeploy → each alias it shifts (the alias's UpdatePolicy names the deployment group).
  const groups = resourcesOf(template, "AWS::CodeDeploy::DeploymentGroup");
  for (const [aliasLogicalId, alias] of resourcesOf(template, "AWS::Lambda::Alias")) {
    const update = (alias as { UpdatePolicy?: { CodeDeployLambdaAliasUpdate?: { DeploymentGroupName?: unknown } } })
      .UpdatePolicy?.CodeDeployLambdaAliasUpdate;
    if (!update) continue;
    const groupName = String(resolver.resolve(update.DeploymentGroupName));
    const group = groups.find(
      ([logicalId]) =>
        resolver.ref(logicalId) === groupName ||
        String(resolver.resolve(template.Resources[logicalId]?.Properties?.DeploymentGroupName)) === groupName,
    );
    const roleLogicalId = group ? roleOf(group[1].Properties?.ServiceRoleArn) : undefined;
    if (!group || !roleLogicalId) continue;
    const as = await assumeRole(
      "codedeploy.amazonaws.com",
      roleLogicalId,
      `deployment group ${group[0]} assuming its role`,
    );
    const aliasArn = resolver.ref(aliasLogicalId);
    for (const action of ["lambda:GetAlias", "lambda:UpdateAlias"]) {
      await check(
        "allow",
        "codedeploy.amazonaws.com",
        action,
        aliasArn,
        {},
        `${group[0]} shifting ${aliasLogicalId}`,
        as,
      );
      await check(
        "deny",
        "codedeploy.amazonaws.com",
        action,
        aliasArn.replace(`:${account}:`, `:${OTHER_ACCOUNT}:`),
        {},
        `${group[0]} shifting an alias of another account`,
        as,
      );
    }
    const alarms = resolver.resolve(
      (group[1].Properties?.AlarmConfiguration as { Alarms?: { Name: unknown }[] } | undefined)?.Alarms ?? [],
    ) as { Name: string }[];
    for (const { Name } of alarms) {
      await check(
        "allow",
        "codedeploy.amazonaws.com",
        "cloudwatch:DescribeAlarms",
        `arn:aws:cloudwatch:${region}:${account}:alarm:${Name}`,
        {},
        `${group[0]} reading its rollback alarm`,
        as,
      );
    }
  }
  return out;
}
