/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy 'Staging/*'`, `npx cdk deploy 'Production/*'`.
 * Per-deployment settings (account, region, alarm destinations) are read here, once, from CDK
 * context or the environment (infra/settings.ts) and become part of each stage's typed config.
 * The committed settings (cdk.json's "context") are the one source the pipeline and a laptop share:
 * a run whose settings differ from them stops here, before anything is synthesized or deployed.
 */
import { readFileSync } from "node:fs";
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type StageConfig, stageConfigs } from "./config";
import { type DeployedStageName, deployedStages } from "./deployment";
import {
  pipelineReadiness,
  readStageSettings,
  SETTINGS_CONTEXT,
  SettingsError,
  type StageSettings,
  settingsDrift,
  settingsDriftMessage,
} from "./settings";
import { addAccountStacks } from "./stacks/accountStack";
import { enforceControlTowerControls } from "./stacks/controlTower";
import {
  addDeliveryAccessStacks,
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
  /**
   * The committed settings, cdk.json's "context": when given, settings that differ from them are
   * refused (unless the context allows it). The CLI entry below always gives them.
   */
  readonly committedContext?: Readonly<Record<string, unknown>>;
  /**
   * false: synthesis skips the policy checks (cdk-nag, Control Tower rules) but still applies the
   * aspects that shape the templates. For tests that read templates only: the checks take most of a
   * synthesis, and test/infra/nag.test.ts runs them.
   */
  readonly policyValidation?: boolean;
}

/** cdk.json's "context": the committed settings. */
export function committedContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL("../cdk.json", import.meta.url), "utf8")) as {
    context?: Record<string, unknown>;
  };
  return cdkJson.context ?? {};
}

export function buildApp(options: BuildAppOptions = {}): { app: App; stages: PetStoreStage[] } {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    ...(options.context ? { context: options.context } : {}),
  });
  const context = (key: string): unknown => app.node.tryGetContext(key);
  const environment = options.environment ?? {};
  const stageNames = Object.keys(deployedStages) as DeployedStageName[];
  const settings = Object.fromEntries(
    stageNames.map((stage) => [stage, readStageSettings(stage, context, environment)]),
  ) as Record<DeployedStageName, StageSettings>;

  const allowDrift = String(context(SETTINGS_CONTEXT.allowSettingsDrift)) === "true";
  if (options.committedContext && !allowDrift) {
    const drift = settingsDrift(stageNames, context, environment, options.committedContext);
    if (drift.length > 0) throw new SettingsError(settingsDriftMessage(drift));
  }
  const pipelineStage = context(SETTINGS_CONTEXT.pipelineStage);
  if (pipelineStage !== undefined) {
    if (typeof pipelineStage !== "string" || !Object.hasOwn(deployedStages, pipelineStage)) {
      throw new SettingsError(
        `${SETTINGS_CONTEXT.pipelineStage} must be one of ${stageNames.join(", ")}, not ${JSON.stringify(pipelineStage)}.`,
      );
    }
    const refusal = pipelineReadiness(pipelineStage as DeployedStageName, settings[pipelineStage as DeployedStageName]);
    if (refusal) throw new SettingsError(refusal);
  }

  const policyValidation = options.policyValidation ?? true;
  if (policyValidation) Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  // GitHub Actions deploy roles (docs/delivery.md): only when the context names the repository.
  const deliveryAccess = deliveryAccessConfigFromContext(context);
  const stages = (options.stages ?? Object.values(stageConfigs)).map(
    (config) =>
      new PetStoreStage(app, config.id, {
        config: { ...config, settings: settings[config.stage] },
        ...(options.acknowledgeNagFindings === undefined
          ? {}
          : { acknowledgeNagFindings: options.acknowledgeNagFindings }),
      }),
  );
  if (deliveryAccess) addDeliveryAccessStacks(app, deliveryAccess, (stage) => settings[stage.stage]);
  addAccountStacks(
    app,
    stages.map((stage) => ({ stage: stage.config, settings: stage.config.settings })),
    options.acknowledgeNagFindings === undefined ? {} : { acknowledgeNagFindings: options.acknowledgeNagFindings },
  );
  enforceControlTowerControls(app, { policyValidation });
  return { app, stages };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    buildApp({ environment: process.env, committedContext: committedContext() }).app.synth();
  } catch (error) {
    // A settings mistake is the engineer's to fix: one line, not a stack trace.
    if (!(error instanceof SettingsError || error instanceof DeliveryConfigError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
