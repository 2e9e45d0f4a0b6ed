/**
 * The stage's log groups and the KMS key that encrypts them. Every log group of the stage is made
 * here, so each one is encrypted (Control Tower CT.CLOUDWATCH.PR.3), kept at least a year
 * (CT.CLOUDWATCH.PR.2, through the stage config) and removed or retained with the stage's logs.
 */
import { Arn, ArnFormat, type RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";

export interface StageLogsProps {
  readonly stage: string;
  readonly retention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

export class StageLogs extends Construct {
  readonly key: kms.Key;
  private readonly retention: logs.RetentionDays;
  private readonly removalPolicy: RemovalPolicy;

  constructor(scope: Construct, id: string, props: StageLogsProps) {
    super(scope, id);
    this.retention = props.retention;
    this.removalPolicy = props.removalPolicy;
    const stack = Stack.of(this);
    // Logs encrypted with it stay readable only while it exists, so it is kept as long as they are.
    this.key = new kms.Key(this, "Key", {
      enableKeyRotation: true,
      description: `Encrypts the Pet Store ${props.stage} log groups`,
      removalPolicy: props.removalPolicy,
    });
    // Generated log group names start with the stack's name (see logGroup).
    this.allowLogGroups("StackLogGroups", `${stack.stackName}-*`);
  }

  /**
   * Lets CloudWatch Logs use the key for the log groups whose names match: it names the group in the
   * encryption context of every use, so no other log group can be encrypted with this key.
   * https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
   */
  private allowLogGroups(sid: string, namePattern: string): void {
    const arn = Arn.format(
      { service: "logs", resource: "log-group", resourceName: namePattern, arnFormat: ArnFormat.COLON_RESOURCE_NAME },
      Stack.of(this),
    );
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid,
        principals: [new iam.ServicePrincipal(`logs.${Stack.of(this).region}.amazonaws.com`)],
        actions: ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
        resources: ["*"],
        conditions: { ArnLike: { "kms:EncryptionContext:aws:logs:arn": arn } },
      }),
    );
  }

  /**
   * A new, encrypted log group of the stage. It has no fixed name: CloudFormation names it
   * `<stack name>-<logical id>-<random>`, so a retained group never blocks a later deployment.
   */
  logGroup(scope: Construct, id: string): logs.LogGroup {
    return new logs.LogGroup(scope, id, {
      encryptionKey: this.key,
      retention: this.retention,
      removalPolicy: this.removalPolicy,
    });
  }

  /**
   * The log group API Gateway writes a stage's execution logs to. API Gateway creates it on first use,
   * with no retention and no encryption, unless it already exists: so it is made here, beforehand.
   * https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-logging.html
   */
  executionLogGroup(scope: Construct, id: string, restApiId: string, stageName: string): logs.LogGroup {
    const logGroupName = `API-Gateway-Execution-Logs_${restApiId}/${stageName}`;
    this.allowLogGroups("ExecutionLogGroup", logGroupName);
    return new logs.LogGroup(scope, id, {
      logGroupName,
      encryptionKey: this.key,
      retention: this.retention,
      removalPolicy: this.removalPolicy,
    });
  }
}
