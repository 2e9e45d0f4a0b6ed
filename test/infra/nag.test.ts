import { Validations } from "aws-cdk-lib";
import { beforeAll, describe, expect, it } from "vitest";
import { CONTROL_TOWER_PLUGIN } from "../../infra/stacks/controlTower";
import { synthesizedStages } from "./app";

// Each variant is synthesised once for the file, without bundling: the rules read the templates,
// not the functions' code.
const noBundling = { "aws:cdk:bundling-stacks": [] };
let acknowledgedApp: ReturnType<typeof synthesizedStages>;
let unacknowledgedApp: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  acknowledgedApp = synthesizedStages({ context: noBundling });
  unacknowledgedApp = synthesizedStages({ acknowledgeNagFindings: false, context: noBundling });
});

/** Every acknowledgement in the app, stages and account stacks alike. */
function acknowledgementsOf(synth: ReturnType<typeof synthesizedStages>) {
  return synth.app.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          id,
          reason,
          path: construct.node.path,
        })),
      ),
  );
}

describe("policy validation: cdk-nag (AwsSolutions and Serverless packs) and AWS Control Tower's proactive controls", () => {
  it("finds nothing unacknowledged, so synth succeeds", () => {
    const { failure } = acknowledgedApp;

    expect(failure).toBeUndefined();
  });

  it("has no acknowledgement that does not match a finding that really occurs", () => {
    const acknowledged = acknowledgementsOf(acknowledgedApp);
    const unacknowledged = unacknowledgedApp;

    const findings = unacknowledged.findings();
    expect(unacknowledged.failure).toBeDefined();
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const acknowledgement of acknowledged) {
      const matched = findings.some(
        (finding) =>
          finding.id === acknowledgement.id &&
          (finding.path === acknowledgement.path || finding.path.startsWith(`${acknowledgement.path}/`)),
      );
      expect(matched, `${acknowledgement.id} at ${acknowledgement.path}`).toBe(true);
    }
  });

  it("acknowledges every finding with a reason of its own", () => {
    const acknowledged = acknowledgementsOf(acknowledgedApp).map((acknowledgement) => acknowledgement.reason);

    for (const reason of acknowledged) expect(reason.length).toBeGreaterThan(60);
  });

  it("runs the Control Tower rules on every stack and acknowledges only Lambda-in-VPC and the literal account while unpinned", () => {
    const controlTower = acknowledgementsOf(acknowledgedApp).filter((acknowledgement) =>
      acknowledgement.id.startsWith(`${CONTROL_TOWER_PLUGIN}::`),
    );
    const report = unacknowledgedApp.findings().filter((finding) => finding.id.startsWith(`${CONTROL_TOWER_PLUGIN}::`));

    expect(new Set(controlTower.map((acknowledgement) => acknowledgement.id))).toEqual(
      new Set([
        `${CONTROL_TOWER_PLUGIN}::lambda_inside_vpc_check`,
        `${CONTROL_TOWER_PLUGIN}::lambda_function_public_access_prohibited_check`,
      ]),
    );
    // CT.CLOUDWATCH.PR.1 (every alarm has an action) holds even with nothing acknowledged: the
    // rollback alarms notify the deployment events topic.
    expect(report.filter((finding) => finding.id === `${CONTROL_TOWER_PLUGIN}::cloudwatch_alarm_action_check`)).toEqual(
      [],
    );
    // Both stages are checked: each reports its functions outside a VPC when nothing is acknowledged.
    for (const stage of ["Staging", "Production"]) {
      expect(report.some((finding) => finding.path.startsWith(`${stage}/`))).toBe(true);
    }
  });
});
