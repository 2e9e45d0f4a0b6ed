/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy 'Staging/*'`, `npx cdk deploy 'Production/*'`.
 * Per-deployment settings (account, region, alarm destinations) are read here, once, from CDK
 * context or the environment (infra/settings.ts) and become part of each stage's typed config.
 */
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type StageConfig, stageConfigs } from "./config";
import { readStageSettings, SettingsError } from "./settings";
import { addAccountStacks } from "./stacks/accountStack";
import { enforceControlTowerControls } from "./stacks/controlTower";
import {
  DELIVERY_ACCESS_STACK_NAME,
  DeliveryAccessStack,
  DeliveryConfigError,
  deliveryAccessConfigFromContext,
} from "./stacks/deliveryAccessStack";
import { PetStoreStage } from "./stacks/petStoreStack";

export interface BuildAppOptions {
  readonly stages?: readonly StageConfig[];
  readonly acknowledgeNagFindings?: boolean;
  readonly outdir?: string;
  /** CDK context, as `-c key=value` or cdk.json would give it (tests). */
  readonly context?: Record<string, unknown>;
  /** Where settings missing from the context are looked up; nothing by default, so tests are hermetic. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
}

export function buildApp(options: BuildAppOptions = {}): { app: App; stages: PetStoreStage[] } {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    ...(options.context ? { context: options.context } : {}),
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  const context = (key: string): unknown => app.node.tryGetContext(key);
  // GitHub Actions deploy roles (docs/delivery.md): only when the context names the repository.
  const deliveryAccess = deliveryAccessConfigFromContext(context);
  const stages = (options.stages ?? Object.values(stageConfigs)).map(
    (config) =>
      new PetStoreStage(app, config.id, {
        config: { ...config, settings: readStageSettings(config.stage, context, options.environment ?? {}) },
        ...(options.acknowledgeNagFindings === undefined
          ? {}
          : { acknowledgeNagFindings: options.acknowledgeNagFindings }),
      }),
  );
  if (deliveryAccess) {
    new DeliveryAccessStack(app, DELIVERY_ACCESS_STACK_NAME, {
      config: deliveryAccess,
      description: "GitHub Actions OIDC deploy roles of the Pet Store API stages",
    });
  }
  addAccountStacks(
    app,
    stages.map((stage) => stage.config.settings),
    options.acknowledgeNagFindings === undefined ? {} : { acknowledgeNagFindings: options.acknowledgeNagFindings },
  );
  enforceControlTowerControls(app);
  return { app, stages };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    buildApp({ environment: process.env }).app.synth();
  } catch (error) {
    // A settings mistake is the engineer's to fix: one line, not a stack trace.
    if (!(error instanceof SettingsError || error instanceof DeliveryConfigError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
