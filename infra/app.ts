/**
 * The CDK app: `npx cdk synth`, `npx cdk deploy 'Staging/*'`, `npx cdk deploy 'Production/*'`.
 * Account and region come from the caller's AWS profile at deploy time (CDK_DEFAULT_*).
 */
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks, ServerlessChecks } from "cdk-nag";
import { type StageConfig, stageConfigs } from "./config";
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
  /** cdk context, as `-c key=value` gives it (tests; the CLI passes it through the environment). */
  readonly context?: Record<string, unknown>;
}

export function buildApp(options: BuildAppOptions = {}): { app: App; stages: PetStoreStage[] } {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    ...(options.context ? { context: options.context } : {}),
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  // GitHub Actions deploy roles (docs/delivery.md): only when the context names the repository.
  const deliveryAccess = deliveryAccessConfigFromContext((key) => app.node.tryGetContext(key));
  const stages = (options.stages ?? Object.values(stageConfigs)).map(
    (config) =>
      new PetStoreStage(app, config.id, {
        config,
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
  return { app, stages };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    buildApp().app.synth();
  } catch (error) {
    if (!(error instanceof DeliveryConfigError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
  }
}
