import { Validations } from "aws-cdk-lib";
import { beforeAll, describe, expect, it } from "vitest";
import { synthesizedStages } from "./app";

// Each variant is synthesised once for the file: a synthesis bundles every function.
let acknowledgedApp: ReturnType<typeof synthesizedStages>;
let unacknowledgedApp: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  acknowledgedApp = synthesizedStages();
  unacknowledgedApp = synthesizedStages({ acknowledgeNagFindings: false });
});

describe("cdk-nag (AwsSolutions and Serverless packs)", () => {
  it("finds nothing unacknowledged, so synth succeeds", () => {
    const { failure } = acknowledgedApp;

    expect(failure).toBeUndefined();
  });

  it("has no acknowledgement that does not match a finding that really occurs", () => {
    const acknowledged = acknowledgedApp.stages.flatMap((stage) =>
      stage.node
        .findAll()
        .flatMap((construct) =>
          construct.node.metadata
            .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
            .flatMap((entry) =>
              Object.keys(entry.data as Record<string, string>).map((id) => ({ id, path: construct.node.path })),
            ),
        ),
    );
    const unacknowledged = unacknowledgedApp;

    const findings = unacknowledged.findings();
    expect(unacknowledged.failure).toBeDefined();
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const acknowledgement of acknowledged) {
      const matched = findings.some(
        (finding) => finding.id === acknowledgement.id && finding.path.startsWith(`${acknowledgement.path}/`),
      );
      expect(matched, `${acknowledgement.id} at ${acknowledgement.path}`).toBe(true);
    }
  });

  it("acknowledges every finding with a reason of its own", () => {
    const acknowledged = acknowledgedApp.stages.flatMap((stage) =>
      stage.node
        .findAll()
        .flatMap((construct) =>
          construct.node.metadata
            .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
            .flatMap((entry) => Object.values(entry.data as Record<string, string>)),
        ),
    );

    for (const reason of acknowledged) expect(reason.length).toBeGreaterThan(60);
  });
});
