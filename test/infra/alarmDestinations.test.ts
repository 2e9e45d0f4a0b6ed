/**
 * Alarm destinations come from deployment settings (CDK context or the environment), and a
 * production stage without any is impossible to miss: the app is synthesised as `cdk synth` builds it.
 */
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { type BuildAppOptions, buildApp } from "../../infra/app";
import { stageConfigs } from "../../infra/config";
import { alarmDeliveryTestAlarmName, NO_ALARM_DESTINATION_WARNING } from "../../infra/stacks/monitoring";
import { routeList } from "../../lib/routes";
import { scratchDirectory } from "../support/scratch";

const PAGER = "arn:aws:sns:eu-west-1:123456789012:pager";

function synthesise(options: BuildAppOptions) {
  // Bundling and policy checks skipped: these assertions read the templates, not the functions'
  // code, and test/infra/nag.test.ts runs the checks.
  const { app, stages } = buildApp({
    policyValidation: false,
    outdir: scratchDirectory(),
    ...options,
    context: { "aws:cdk:bundling-stacks": [], ...options.context },
  });
  app.synth();
  const stack = (id: string) => {
    const stage = stages.find((candidate) => candidate.node.id === id);
    if (!stage) throw new Error(`no stage ${id}`);
    return stage.stack;
  };
  return { stack, template: (id: string) => Template.fromStack(stack(id)) };
}

const emailsOf = (template: Template) =>
  Object.values(template.findResources("AWS::SNS::Subscription"))
    .filter((subscription) => subscription.Properties.Protocol === "email")
    .map((subscription) => subscription.Properties.Endpoint);

describe("alarm destinations from deployment settings", () => {
  it("subscribes the e-mail addresses and adds the existing topic that context names, for that stage only", () => {
    const app = synthesise({
      context: { "prod:alarmEmails": "ops@example.com, oncall@example.com", "prod:alarmTopicArn": PAGER },
    });

    const production = app.template("Production");
    expect(emailsOf(production)).toEqual(["ops@example.com", "oncall@example.com"]);
    const alarms = Object.values(production.findResources("AWS::CloudWatch::Alarm"));
    // The rollout's rollback alarms, which judge deployments for CodeDeploy (infra/stacks/rollout.ts),
    // page nobody and notify only the stage's deployment events topic, never the pager. The alarm
    // delivery test alarm npm run alarms:verify sets off (infra/stacks/monitoring.ts) notifies the
    // paging topics, the pager too, whose subscriptions filter it out.
    const judgesDeployments = (alarm: (typeof alarms)[number]) =>
      String(alarm.Properties.AlarmDescription).startsWith("Rolls back a deployment");
    const testsDelivery = (alarm: (typeof alarms)[number]) =>
      alarm.Properties.AlarmName === alarmDeliveryTestAlarmName("prod");
    const paging = alarms.filter((alarm) => !judgesDeployments(alarm) && !testsDelivery(alarm));
    expect(paging.length).toBeGreaterThan(10);
    for (const alarm of paging) {
      expect(alarm.Properties.AlarmActions).toContain(PAGER);
      expect(alarm.Properties.AlarmActions).toHaveLength(2);
    }
    expect(alarms.filter(judgesDeployments)).toHaveLength(routeList.length + 1);
    expect(alarms.filter(testsDelivery)).toHaveLength(1);
    for (const alarm of alarms.filter(judgesDeployments)) {
      expect(alarm.Properties.AlarmActions).toEqual([
        { Ref: expect.stringMatching(/^MonitoringDeploymentEventsTopic[0-9A-F]{8}$/) },
      ]);
    }
    expect(alarms.find(testsDelivery)?.Properties.AlarmActions).toEqual([
      { Ref: expect.stringMatching(/^MonitoringAlarmTopic[0-9A-F]{8}$/) },
      PAGER,
    ]);
    expect(emailsOf(app.template("Staging"))).toEqual([]);
    expect(JSON.stringify(app.template("Staging").toJSON())).not.toContain(PAGER);
    Annotations.fromStack(app.stack("Production")).hasNoWarning("*", Match.stringLikeRegexp("alarm destination"));
  });

  it("takes them from the environment when the context does not have them", () => {
    const app = synthesise({
      stages: [stageConfigs.Staging],
      environment: { PETSTORE_STAGING_ALARM_EMAILS: "qa@example.com" },
    });

    expect(emailsOf(app.template("Staging"))).toEqual(["qa@example.com"]);
  });

  it("warns loudly when production has no destination, and still synthesises offline with no configuration", () => {
    const app = synthesise({});

    const warnings = Annotations.fromStack(app.stack("Production")).findWarning("*", Match.anyValue());
    expect(warnings.map((warning) => String(warning.entry.data))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^The prod stage has no alarm destination: its alarms will reach nobody\\..*\\[ack: ${NO_ALARM_DESTINATION_WARNING}\\]$`,
        ),
      ),
    ]);
    Annotations.fromStack(app.stack("Staging")).hasNoWarning("*", Match.anyValue());
  });
});
