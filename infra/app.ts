/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy 'Staging/*'`, `npx cdk deploy 'Production/*'`.
 * Per-deployment settings (account, region, alarm destinations) are read here, once, from CDK
 * context or the environment (infra/settings.ts) and become part of each stage's typed config.
 * The settings committed on the branch the pipeline deploys are the one source the pipeline and a
 * laptop share: a run whose settings differ from them stops here, before anything is synthesized
 * or deployed (infra/settingsBaseline.ts).
 */
import { App, Stack, Validations } from "aws-cdk-lib";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import { FLAGS } from "aws-cdk-lib/cx-api";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type StageConfig, stageConfigs } from "./config";
import { type DeployedStageName, deployedStages } from "./deployment";
import {
  committedSettingWarnings,
  readStageSettings,
  SETTINGS_CONTEXT,
  type SettingsBaselineLike,
  SettingsError,
  type StageSettings,
  settingsDrift,
  settingsDriftMessage,
} from "./settings";
import {
  BASELINE_CONTEXT,
  checkoutBaseline,
  checkoutContext,
  DEFAULT_SETTINGS_REF,
  gitBaseline,
} from "./settingsBaseline";
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
   * The settings this run must match (the branch the pipeline deploys): when given, settings that
   * differ from them are refused, unless the context allows it. A function is called only when the
   * comparison is made, with the app's context. The CLI entry below always gives one.
   */
  readonly settingsBaseline?: SettingsBaselineLike | ((context: (key: string) => unknown) => SettingsBaselineLike);
  /**
   * false: synthesis skips the policy checks (cdk-nag, Control Tower rules) but still applies the
   * aspects that shape the templates. For tests that read templates only: the checks take most of a
   * synthesis, and test/infra/nag.test.ts runs them.
   */
  readonly policyValidation?: boolean;
}

/**
 * The feature flags of a cdk.json "context" (the keys aws-cdk-lib knows as flags), without the
 * deployment settings a team commits beside them: what tests and the rehearsal synthesize with, so
 * that their templates depend on the settings they set and never on what is committed.
 */
export function featureFlagsOf(context: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(context).filter(([key]) => Object.hasOwn(FLAGS, key)));
}

/** This checkout's cdk.json feature flags. */
export const committedFeatureFlags = (): Record<string, unknown> => featureFlagsOf(checkoutContext());

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

  // GitHub Actions deploy roles (docs/delivery.md): only when the context names the repository.
  // Read before the comparison below: a malformed value is reported as itself.
  const deliveryAccess = deliveryAccessConfigFromContext(context);
  const allowDrift = String(context(SETTINGS_CONTEXT.allowSettingsDrift)) === "true";
  if (options.settingsBaseline && !allowDrift) {
    const baseline =
      typeof options.settingsBaseline === "function" ? options.settingsBaseline(context) : options.settingsBaseline;
    const drift = settingsDrift(stageNames, context, environment, baseline);
    if (drift.length > 0) throw new SettingsError(settingsDriftMessage(drift, baseline));
  }

  const policyValidation = options.policyValidation ?? true;
  if (policyValidation) Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
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

/**
 * The CLI's baseline: the pipeline (`-c pipeline=true`) deploys the commit it checked out; anyone
 * else must match cdk.json on the branch the pipeline deploys (`-c settingsRef=…`, origin/main).
 */
export function cliSettingsBaseline(context: (key: string) => unknown): SettingsBaselineLike {
  if (String(context(BASELINE_CONTEXT.pipeline)) === "true") return checkoutBaseline();
  const ref = context(BASELINE_CONTEXT.settingsRef) ?? DEFAULT_SETTINGS_REF;
  if (typeof ref !== "string" || !/^[\w./@^~-]+$/.test(ref) || ref.startsWith("-")) {
    throw new SettingsError(
      `${BASELINE_CONTEXT.settingsRef} must be a git ref such as origin/main, not ${JSON.stringify(ref)}.`,
    );
  }
  return gitBaseline(ref);
}

/**
 * Whether this runs in CI: GitHub Actions always sets CI=true
 * (https://docs.github.com/en/actions/reference/variables-reference); CI=false or CI=0 is a person
 * saying it does not. The one definition for the app and the commands.
 */
export const runsInCi = (env: NodeJS.ProcessEnv): boolean => Boolean(env.CI) && !/^(false|0)$/i.test(env.CI ?? "");

/**
 * The line `cdk synth`, `cdk ls` or `cdk deploy` shows before the app's long silence (the policy
 * checks, above all Control Tower's Guard rules, then esbuild for each function the command
 * bundles), or undefined in CI, whose logs need no reassurance. The CDK CLI gives the app no
 * sign of its own --quiet, and shows what the app writes to stderr as it comes. The estimate is
 * timed on the project's 2-core machine with Node 24: `npx cdk synth --quiet` 21–25 s, `npx cdk ls`
 * 35 s while other work shared the cores.
 */
export function synthesisNotice(app: App, env: NodeJS.ProcessEnv): string | undefined {
  if (runsInCi(env)) return undefined;
  const constructs = app.node.findAll();
  const stacks = constructs.filter((construct) => Stack.isStack(construct)).length;
  // `cdk ls` and `cdk destroy` bundle nothing (the CLI passes an empty aws:cdk:bundling-stacks).
  const bundled = constructs.filter(
    (construct) => construct instanceof NodejsFunction && Stack.of(construct).bundlingRequired,
  ).length;
  const bundling = bundled > 0 ? `, and bundling ${bundled} functions with esbuild` : "";
  return `Synthesizing ${stacks} Pet Store stacks: checking them against cdk-nag and Control Tower rules${bundling} (about half a minute)...`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    // On every synthesis, laptop and pipeline alike: a committed per-deploy setting is easy to miss.
    for (const warning of committedSettingWarnings(
      Object.keys(deployedStages) as DeployedStageName[],
      checkoutContext(),
    )) {
      console.error(`Warning: ${warning}`);
    }
    const { app } = buildApp({ environment: process.env, settingsBaseline: cliSettingsBaseline });
    // After the settings are checked: a mistake there is still the only line printed.
    const notice = synthesisNotice(app, process.env);
    if (notice) console.error(notice);
    app.synth();
  } catch (error) {
    // A settings mistake is the engineer's to fix: one line, not a stack trace.
    if (!(error instanceof SettingsError || error instanceof DeliveryConfigError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
