/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy 'Staging/*'`, `npx cdk deploy 'Production/*'`.
 * Account and region come from the caller's AWS profile at deploy time (CDK_DEFAULT_*).
 */
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type StageConfig, stageConfigs } from "./config";
import { PetStoreStage } from "./stacks/petStoreStack";

export interface BuildAppOptions {
  readonly stages?: readonly StageConfig[];
  readonly acknowledgeNagFindings?: boolean;
  readonly outdir?: string;
}

export function buildApp(options: BuildAppOptions = {}): { app: App; stages: PetStoreStage[] } {
  const app = new App(options.outdir ? { outdir: options.outdir } : {});
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  const stages = (options.stages ?? Object.values(stageConfigs)).map(
    (config) =>
      new PetStoreStage(app, config.id, {
        config,
        ...(options.acknowledgeNagFindings === undefined
          ? {}
          : { acknowledgeNagFindings: options.acknowledgeNagFindings }),
      }),
  );
  return { app, stages };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  buildApp().app.synth();
}
