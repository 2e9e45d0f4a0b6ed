/**
 * One stage stack of a cloud assembly, brought up locally: its tables in dynalite, its secrets in the Secrets Manager
 * stand-in, each function this project writes running from its uploaded artifact, and its REST API in front of them.
 */
import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { LocalRestApi } from "./apiGateway";
import { type AssemblyStack, resourcesOf } from "./assembly";
import type { AwsStandIn } from "./awsStandIn";
import {
  type Architecture,
  type FunctionError,
  type InvokeOutcome,
  type LambdaFunctionSpec,
  RunningFunction,
} from "./lambdaRuntime";
import { Resolver } from "./resolve";

/** Construct ids of the functions CDK adds itself (custom resource providers, log retention...). */
const CDK_PROVIDED =
  /AWS679f53fac002430cb0da5b7982bd2287|LogRetention[0-9a-f]{32}|CustomResourceProvider|Provider\/framework-|BucketNotificationsHandler|CustomS3AutoDeleteObjects/;

export interface StageFunction {
  readonly logicalId: string;
  readonly roleLogicalId: string | undefined;
  readonly spec: LambdaFunctionSpec;
  /** Environment variables whose value the rehearsal pointed at a local stand-in. */
  readonly redirected: Record<string, { from: string; to: string }>;
  overrides?: Record<string, string>;
  running?: RunningFunction;
  /** Invocations across every container the function had: a function never invoked fails the rehearsal. */
  invocations: number;
  /** Invocations a service attempted and Lambda refused (the invoker's permission): reported as their cause. */
  refusedInvocations: number;
  /** What the function answered with an error (an init error, a timeout, an exception), by scenario step. */
  readonly errors: { step?: string; errorType: string; errorMessage: string }[];
}

/** A function invoked by an AWS service: API Gateway for a method, or the scheduler with its role. */
export interface ServiceInvocation {
  readonly service: "apigateway.amazonaws.com" | "scheduler.amazonaws.com";
  readonly invokedArn: string;
  /** API Gateway's: the method's execute-api ARN (`…:api-id/stage/GET/pets`). */
  readonly sourceArn?: string;
  /** The scheduler's: the role it invokes with. */
  readonly roleArn?: string;
}

export interface SkippedFunction {
  readonly logicalId: string;
  readonly reason: string;
}

export class StageRehearsal {
  readonly resolver: Resolver;
  readonly functions: StageFunction[] = [];
  readonly skipped: SkippedFunction[] = [];
  readonly api: LocalRestApi | undefined;
  /** Alias ARN → function logical id. */
  readonly aliases = new Map<string, string>();
  /** Alias ARNs something invoked: an alias never invoked fails the rehearsal. */
  readonly invokedAliases = new Set<string>();
  /**
   * Decides, when a service invokes a function, whether Lambda lets it (set by the rehearsal): the
   * AccessDeniedException message for a refused invocation, undefined to let it through.
   */
  authorizeInvocation: ((invocation: ServiceInvocation) => Promise<string | undefined>) | undefined;

  constructor(
    readonly stack: AssemblyStack,
    allStacks: readonly AssemblyStack[],
    private readonly standIn: AwsStandIn,
    index: number,
  ) {
    this.resolver = new Resolver(stack, allStacks);
    const { template } = stack;
    const stageResource = resourcesOf(template, "AWS::ApiGateway::Stage")[0];
    const stageName = stageResource ? String(stageResource[1].Properties?.StageName) : undefined;
    this.api = stageName
      ? new LocalRestApi(this.resolver, stageName, (aliasArn, event) => this.invokeAlias(aliasArn, event))
      : undefined;
    for (const [logicalId] of resourcesOf(template, "AWS::Lambda::Alias")) {
      const properties = template.Resources[logicalId]?.Properties ?? {};
      this.aliases.set(this.resolver.ref(logicalId), String((properties.FunctionName as { Ref?: string }).Ref));
    }
    let functionNumber = 0;
    for (const [logicalId, resource] of resourcesOf(template, "AWS::Lambda::Function")) {
      const properties = resource.Properties ?? {};
      const path = stack.constructPaths.get(logicalId) ?? "";
      const code = (properties.Code ?? {}) as { S3Key?: unknown; ZipFile?: unknown };
      if (CDK_PROVIDED.test(path) || CDK_PROVIDED.test(logicalId)) {
        this.skipped.push({ logicalId, reason: "provided by the CDK, not written by this project" });
        continue;
      }
      if (code.ZipFile !== undefined) {
        this.skipped.push({ logicalId, reason: "inline code (ZipFile), not an uploaded artifact" });
        continue;
      }
      const assetDir = stack.assets.get(String(this.resolver.resolve(code.S3Key)));
      if (!assetDir) {
        this.skipped.push({ logicalId, reason: "its code is not a file asset of this assembly" });
        continue;
      }
      functionNumber += 1;
      const functionName = this.resolver.ref(logicalId);
      const variables = (this.resolver.resolve(
        (properties.Environment as { Variables?: unknown } | undefined)?.Variables ?? {},
      ) ?? {}) as Record<string, unknown>;
      const environment = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, String(value)]));
      const loggingConfig = (properties.LoggingConfig ?? {}) as { LogGroup?: unknown };
      this.functions.push({
        logicalId,
        roleLogicalId: (properties.Role as { "Fn::GetAtt"?: string[] } | undefined)?.["Fn::GetAtt"]?.[0],
        redirected: {},
        invocations: 0,
        refusedInvocations: 0,
        errors: [],
        spec: {
          label: `${stack.displayName} ${logicalId}`,
          functionName,
          functionArn: this.resolver.getAtt(logicalId, "Arn"),
          runtime: String(properties.Runtime),
          handler: String(properties.Handler),
          assetDir,
          memoryMb: Number(properties.MemorySize ?? 128),
          timeoutSeconds: Number(properties.Timeout ?? 3),
          // Lambda takes one architecture per function, x86_64 unless the template says otherwise.
          architecture: (properties.Architectures as Architecture[] | undefined)?.[0] ?? "x86_64",
          logGroupName: loggingConfig.LogGroup
            ? String(this.resolver.resolve(loggingConfig.LogGroup))
            : `/aws/lambda/${functionName}`,
          region: stack.region,
          environment,
          // A distinct fake key per function and stage: the stand-ins name the caller by it.
          accessKeyId: `ASIAREHEARSAL${String(index).padStart(2, "0")}${String(functionNumber).padStart(2, "0")}`,
        },
      });
    }
  }

  byAccessKey(accessKeyId: string): StageFunction | undefined {
    return this.functions.find((fn) => fn.spec.accessKeyId === accessKeyId);
  }

  byLogicalId(logicalId: string): StageFunction | undefined {
    return this.functions.find((fn) => fn.logicalId === logicalId);
  }

  /**
   * The function an ARN invokes: unqualified, `$LATEST`, an alias or a version
   * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-versions.html#versioning-versions-using).
   */
  functionOfArn(arn: string): StageFunction | undefined {
    const parts = arn.split(":");
    const unqualified = parts.slice(0, 7).join(":");
    const qualifier = parts[7];
    const fn = this.functions.find((candidate) => candidate.spec.functionArn === unqualified);
    if (!fn || qualifier === undefined || qualifier === "$LATEST") return fn;
    if (this.aliases.get(arn) === fn.logicalId) return fn;
    const versions = resourcesOf(this.stack.template, "AWS::Lambda::Version").filter(
      ([, version]) =>
        String(this.resolver.resolve(version.Properties?.FunctionName)) === fn.logicalId ||
        String(this.resolver.resolve(version.Properties?.FunctionName)) === fn.spec.functionName,
    );
    return /^\d+$/.test(qualifier) && versions.length > 0 ? fn : undefined;
  }

  /** Invokes a function as the caller names it (an ARN, qualified or not), counting the invocation. */
  async invoke(fn: StageFunction, event: unknown, invokedArn = fn.spec.functionArn): Promise<InvokeOutcome> {
    fn.invocations += 1;
    const outcome: InvokeOutcome = fn.running
      ? await fn.running.invoke(event, invokedArn)
      : { error: { errorType: "ResourceNotFoundException", errorMessage: `${fn.logicalId} is not running` } };
    if (outcome.error)
      fn.errors.push({ ...outcome.error, ...(this.standIn.step === undefined ? {} : { step: this.standIn.step }) });
    return outcome;
  }

  /** The addresses clients reach the stage at: its execute-api host and its custom domain names. */
  private publicHosts(): string[] {
    const hosts: string[] = [];
    for (const [apiId] of resourcesOf(this.stack.template, "AWS::ApiGateway::RestApi")) {
      hosts.push(`${this.resolver.ref(apiId)}.execute-api.${this.stack.region}.amazonaws.com`);
    }
    for (const [, domain] of resourcesOf(this.stack.template, "AWS::ApiGateway::DomainName")) {
      hosts.push(String(this.resolver.resolve(domain.Properties?.DomainName)));
    }
    return hosts;
  }

  async start(): Promise<void> {
    const { template } = this.stack;
    const dynamo = this.standIn.setupClient(this.stack.region);
    for (const { logicalId, resource: table, resolver } of this.resolver.tables()) {
      const p = resolver.resolve(table.Properties ?? {}) as Record<string, unknown>;
      await dynamo.send(
        new CreateTableCommand({
          TableName: resolver.ref(logicalId),
          AttributeDefinitions: p.AttributeDefinitions as never,
          KeySchema: p.KeySchema as never,
          BillingMode: "PAY_PER_REQUEST",
          ...(p.GlobalSecondaryIndexes
            ? {
                GlobalSecondaryIndexes: (p.GlobalSecondaryIndexes as Record<string, unknown>[]).map((index) => ({
                  IndexName: index.IndexName as string,
                  KeySchema: index.KeySchema as never,
                  Projection: index.Projection as never,
                })),
              }
            : {}),
        }),
      );
    }
    dynamo.destroy();
    for (const [logicalId] of resourcesOf(template, "AWS::SecretsManager::Secret")) {
      this.standIn.addSecret(this.resolver.ref(logicalId));
    }
    await this.api?.start();
    const hosts = this.publicHosts();
    await Promise.all(
      this.functions.map(async (fn) => {
        const overrides: Record<string, string> = {
          // Every AWS service the artifact reaches goes to the recording stand-in.
          AWS_ENDPOINT_URL: this.standIn.endpoint,
          AWS_ENDPOINT_URL_DYNAMODB: this.standIn.endpoint,
          AWS_ENDPOINT_URL_SECRETS_MANAGER: this.standIn.endpoint,
        };
        for (const [name, value] of Object.entries(fn.spec.environment)) {
          if (!this.api || !URL.canParse(value)) continue;
          const url = new URL(value);
          if (!hosts.includes(url.host)) continue;
          const to = `${this.api.baseUrl.replace(/\/[^/]+$/, "")}${url.pathname}`;
          fn.redirected[name] = { from: value, to };
          overrides[name] = to;
        }
        fn.overrides = overrides;
        fn.running = await RunningFunction.start(fn.spec, overrides);
      }),
    );
  }

  /** New containers for every function (Lambda's cold start): nothing cached in memory survives. */
  async coldStart(): Promise<void> {
    await Promise.all(
      this.functions.map(async (fn) => {
        fn.running?.stop();
        fn.running = await RunningFunction.start(fn.spec, fn.overrides ?? {});
      }),
    );
  }

  async initErrors(): Promise<{ fn: StageFunction; error: FunctionError }[]> {
    const errors = await Promise.all(this.functions.map(async (fn) => ({ fn, error: await fn.running?.initialized })));
    return errors.filter((entry): entry is { fn: StageFunction; error: FunctionError } => entry.error !== undefined);
  }

  async invokeAlias(aliasArn: string, event: unknown): Promise<InvokeOutcome> {
    const fn = this.byLogicalId(this.aliases.get(aliasArn) ?? "");
    if (!fn)
      return { error: { errorType: "ResourceNotFoundException", errorMessage: `no function behind ${aliasArn}` } };
    this.invokedAliases.add(aliasArn);
    const typed = event as { httpMethod?: string; path?: string; requestContext?: { apiId?: string; stage?: string } };
    const { apiId = "", stage = "" } = typed.requestContext ?? {};
    const path = String(typed.path ?? "").replace(new RegExp(`^/${stage}(?=/)`), "");
    // The source API Gateway names in its invocation:
    // https://docs.aws.amazon.com/apigateway/latest/developerguide/arn-format-reference.html
    const sourceArn = `arn:aws:execute-api:${this.stack.region}:${this.stack.account}:${apiId}/${stage}/${typed.httpMethod}${path}`;
    const refused = await this.authorizeInvocation?.({
      service: "apigateway.amazonaws.com",
      invokedArn: aliasArn,
      sourceArn,
    });
    if (refused) {
      fn.refusedInvocations += 1;
      return { error: { errorType: "AccessDeniedException", errorMessage: refused } };
    }
    return this.invoke(fn, event, aliasArn);
  }

  async stop(): Promise<void> {
    for (const fn of this.functions) fn.running?.stop();
    await this.api?.stop();
  }
}
