/**
 * AWS Control Tower's proactive controls, checked at synth time. Organisations that enable them
 * refuse, at deploy time, a stack that violates one; `@cdklabs/cdk-validator-cfnguard` runs the same
 * CloudFormation Guard rules on the synthesized templates, so `cdk synth` (and `npm test`) fail first.
 * Two of the controls concern resources CDK generates for us, so aspects add what they ask for:
 * - CT.LAMBDA.PR.2: a Lambda permission for an AWS service names the account it must come from;
 * - CT.KMS.PR.3: a KMS key lets only AWS services (for AWS resources) create grants on it.
 * https://docs.aws.amazon.com/controltower/latest/controlreference/proactive-controls.html
 */
import { CfnGuardValidator } from "@cdklabs/cdk-validator-cfnguard";
import { Aspects, type IAspect, Stack, Stage, Validations } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import type { IConstruct } from "constructs";

/** The name cdk-validator-cfnguard reports its findings under (`<plugin>::<rule>`). */
export const CONTROL_TOWER_PLUGIN = "cdk-validator-cfnguard";

/**
 * API Gateway's invoke permissions (LambdaIntegration) name the API as SourceArn only; SourceAccount
 * makes the permission hold only for a caller in this account (CT.LAMBDA.PR.2).
 */
export class LambdaPermissionsFromOwnAccount implements IAspect {
  visit(node: IConstruct): void {
    if (!(node instanceof lambda.CfnPermission)) return;
    if (node.sourceAccount !== undefined || !/\.amazonaws\.com$/.test(String(node.principal))) return;
    node.sourceAccount = Stack.of(node).account;
  }
}

/**
 * Denies kms:CreateGrant unless an AWS service asks for it, for an AWS resource (CT.KMS.PR.3): a
 * grant is a second way to use a key, outside its key policy.
 * https://docs.aws.amazon.com/controltower/latest/controlreference/kms-rules.html
 */
export class KmsGrantsForAwsServicesOnly implements IAspect {
  private readonly done = new WeakSet<kms.Key>();

  visit(node: IConstruct): void {
    if (!(node instanceof kms.Key) || this.done.has(node)) return;
    this.done.add(node);
    node.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "GrantsOnlyForAwsServices",
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ["kms:CreateGrant"],
        resources: ["*"],
        conditions: {
          BoolIfExists: { "kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false" },
        },
      }),
    );
  }
}

/**
 * Adds the aspects above to every stage and stack of the app, and the Control Tower rules to its
 * validation. Call it once everything is built: aspects do not cross into a Stage from above it.
 */
export function enforceControlTowerControls(app: IConstruct, options: { policyValidation: boolean }): void {
  for (const child of app.node.children) {
    if (!(child instanceof Stage) && !(child instanceof Stack)) continue;
    Aspects.of(child).add(new LambdaPermissionsFromOwnAccount());
    Aspects.of(child).add(new KmsGrantsForAwsServicesOnly());
  }
  // The rules run offline: the package ships the cfn-guard binary and the Control Tower rule files.
  if (options.policyValidation) Validations.of(app).addPlugins(new CfnGuardValidator());
}
