/**
 * cfn-lint findings that are wrong: properties CloudFormation added after the schemas cfn-lint bundles (E3002), each
 * allowed for one property of one type, with its reason and documentation. scripts/cfnLint.ts fails when an entry
 * matches nothing, so each goes once cfn-lint learns the property.
 */
export interface CfnLintAllowance {
  /** cfn-lint's rule id. */
  readonly rule: string;
  /** The CloudFormation resource type whose property cfn-lint does not know. */
  readonly resourceType: string;
  /** The property, directly under the resource's Properties. */
  readonly property: string;
  /**
   * Only for templates linted for these regions, when cfn-lint's schema lacks the property in those regions only (it
   * bundles one schema per region); any region when absent.
   */
  readonly regions?: readonly string[];
  /** Why the finding is wrong. */
  readonly reason: string;
  /** Where AWS documents the property. */
  readonly sources: readonly string[];
}

export const cfnLintAllowances: readonly CfnLintAllowance[] = [
  {
    rule: "E3002",
    resourceType: "AWS::CloudWatch::Alarm",
    property: "WarmUpConfiguration",
    reason:
      "CloudWatch's alarm warm-up period, set on the synthetic check's alarm (infra/stacks/syntheticCheck.ts); " +
      "CloudFormation documents the property and aws-cdk-lib's CfnAlarm has it; cfn-lint 1.51.0's schema does not.",
    sources: [
      "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-cloudwatch-alarm-warmupconfiguration.html",
      "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-warm-up.html",
      "https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.CfnAlarm.WarmUpConfigurationProperty.html",
      "https://github.com/cdklabs/awscdk-service-spec/issues/2861",
    ],
  },
  {
    rule: "E3002",
    resourceType: "AWS::CloudWatch::Dashboard",
    property: "Tags",
    // cfn-lint 1.51.0's schemas for every other region have the property (checked with a template holding a tagged
    // dashboard, `cfn-lint --regions <each region>`).
    regions: ["us-east-1", "cn-northwest-1", "me-south-1", "me-central-1"],
    reason:
      "CloudWatch dashboards take tags now, so aws-cdk-lib's CfnDashboard is taggable and the stack's project and " +
      "stage tags reach the dashboard; cfn-lint 1.51.0's schema has no Tags for it in these four regions.",
    sources: [
      "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-cloudwatch-dashboard.html",
      "https://aws.amazon.com/about-aws/whats-new/2026/06/amazon-cloudwatch-tags-on-dashboards/",
      "https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.CfnDashboardProps.html",
    ],
  },
];
