/**
 * One complete, isolated copy of the service: table, one function per route of the route table
 * (each served through its `live` alias and deployed gradually by CodeDeploy), the REST API with its
 * `v1` stage, gateway responses in the Error shape, the edge firewall (when the stage has one), its
 * custom domain (when its settings name one), encrypted log groups, monitoring, and a scheduled
 * synthetic check that alarms when the stage stops answering.
 */
import { fileURLToPath } from "node:url";
import { CfnOutput, Fn, Stack, type StackProps, Stage, type StageProps } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import type { Construct } from "constructs";
import { MAX_BODY_BYTES } from "../../lib/contract/schemas";
import { type TableArea, tableAreas } from "../../lib/db/table";
import { API_BASE_PATH, type DynamoAction, type RouteDefinition, routeList } from "../../lib/routes";
import { BACKGROUND_RESERVED_CONCURRENCY, type StageConfig, servingTableName } from "../config";
import { STACK_OUTPUTS } from "../deployment";
import { costTags, tagResources } from "../tags";
import { accessLogFormat } from "./accessLog";
import { CustomDomain } from "./customDomain";
import { PetStoreDataStack } from "./dataStack";
import { EdgeProtection, rateLimitedRequests } from "./edgeProtection";
import { cdkBundling } from "./functionBundling";
import { GatewayErrors } from "./gatewayErrors";
import { Monitoring } from "./monitoring";
import { acknowledgeNagFindings } from "./nagAcknowledgements";
import { GradualRollout, LIVE_ALIAS } from "./rollout";
import { StageLogs } from "./stageLogs";
import { SyntheticCheck } from "./syntheticCheck";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The API Gateway stage: the base path's only segment (`/v1`). */
const STAGE_NAME = API_BASE_PATH.slice(1);

export interface PetStoreStackProps extends StackProps {
  readonly config: StageConfig;
  /** Off only in the test that proves every acknowledgement matches a real finding. */
  readonly acknowledgeNagFindings?: boolean;
}

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * Lambda's filter for the functions' own lines lets every line through: the functions apply the
 * stage's level (LOG_LEVEL) themselves. With JSON logs Lambda counts a line without a "level" as
 * INFO (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html), and
 * the EMF metrics lines have none, so a stage at WARN would lose every metric, and the alarms on them.
 */
export const LAMBDA_APPLICATION_LOG_LEVEL = lambda.ApplicationLogLevel.TRACE;

/**
 * What every function may do besides its route's own work: read API key records (the bearer check)
 * and record the day's use of a key (lib/auth/keyUsage.ts), never change a key record.
 */
const KEY_CHECK: Partial<Record<TableArea, readonly DynamoAction[]>> = {
  apiKeys: ["dynamodb:GetItem"],
  keyUses: ["dynamodb:UpdateItem"],
};

export class PetStoreStack extends Stack {
  /** The stage's table, in its data stack (./dataStack.ts), found by its fixed name. */
  readonly table: dynamodb.ITableV2;
  readonly api: apigateway.RestApi;
  readonly functions: Record<string, NodejsFunction> = {};
  /** Each function's `live` alias, by operation id: what API Gateway invokes. */
  readonly aliases: Record<string, lambda.Alias> = {};
  readonly rollout: GradualRollout;
  readonly customDomain: CustomDomain | undefined;
  readonly logs: StageLogs;
  readonly monitoring: Monitoring;
  readonly edgeProtection: EdgeProtection | undefined;
  readonly syntheticCheck: SyntheticCheck;

  constructor(scope: Construct, id: string, props: PetStoreStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.logs = new StageLogs(this, "Logs", {
      stage: config.stage,
      retention: config.logRetention,
      removalPolicy: config.logRemovalPolicy,
    });

    // By name, not by a cross-stack reference: nothing here can make CloudFormation replace it. A
    // restored table (`<stage>:tableName`) is switched to by name too, leaving the data stack as it is.
    this.table = dynamodb.TableV2.fromTableName(this, "Table", servingTableName(config));

    const accessLogs = this.logs.logGroup(this, "AccessLogs");
    const { customDomain } = config.settings;
    const disableExecuteApiEndpoint = customDomain?.disableExecuteApiEndpoint ?? false;
    this.api = new apigateway.RestApi(this, "Api", {
      restApiName: `petstore-${config.stage}`,
      description: `Pet Store API (${config.stage})`,
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      disableExecuteApiEndpoint,
      // The role API Gateway logs with is an account-wide setting, owned by the account stack
      // (./accountStack.ts), which is deployed first.
      cloudWatchRole: false,
      deployOptions: {
        stageName: STAGE_NAME,
        throttlingRateLimit: config.api.throttlingRateLimit,
        throttlingBurstLimit: config.api.throttlingBurstLimit,
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.custom(accessLogFormat()),
      },
    });
    // The switch takes effect only when the stage is updated, so switching it makes a new deployment:
    // https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-disable-default-endpoint.html
    this.api.latestDeployment?.addToLogicalId({ disableExecuteApiEndpoint });
    // Execution logs (errors only, above) go to a group API Gateway would otherwise create itself,
    // unencrypted and kept forever; the stage is created after it.
    const executionLogs = this.logs.executionLogGroup(this, "ExecutionLogs", this.api.restApiId, STAGE_NAME);
    this.api.deploymentStage.node.addDependency(executionLogs);
    // Path parameters are checked here; bodies have no model, the functions validate them against the schemas.
    const validator = this.api.addRequestValidator("RequestValidator", {
      validateRequestParameters: true,
      validateRequestBody: true,
    });

    for (const route of routeList) {
      const { fn, alias } = this.routeFunction(route, config);
      this.functions[route.operationId] = fn;
      this.aliases[route.operationId] = alias;
      const pathParameters = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
      // The alias, never $LATEST: a new version gets requests only as CodeDeploy shifts them to it
      // (./rollout.ts), and the invoke permission is the alias's. No permission for the console's
      // test invocations (allowTestInvoke): only the stage may invoke.
      const integration = new apigateway.LambdaIntegration(alias, { allowTestInvoke: false });
      this.api.root.resourceForPath(route.path).addMethod(route.method, integration, {
        operationName: route.operationId,
        requestValidator: validator,
        requestParameters: Object.fromEntries(pathParameters.map((name) => [`method.request.path.${name}`, true])),
      });
    }
    new GatewayErrors(this, "GatewayErrors", { api: this.api, routes: routeList });

    const monitoring = new Monitoring(this, "Monitoring", {
      stage: config.stage,
      methodThrottlePerSecond: config.api.throttlingRateLimit,
      api: this.api,
      functions: this.functions,
      table: this.table,
      config: config.monitoring,
      functionTimeout: config.functions.timeout,
      destinations: config.settings,
      ...(config.edgeProtection ? { rateLimitedRequests: rateLimitedRequests(this, config.stage) } : {}),
      // It only encrypts alarm notifications in flight, so it lives as long as the stage's logs.
      keyRemovalPolicy: config.logRemovalPolicy,
    });
    this.monitoring = monitoring;
    this.rollout = new GradualRollout(this, "Rollout", {
      stage: config.stage,
      api: this.api,
      stageName: STAGE_NAME,
      aliases: this.aliases,
      config: config.rollout,
      serverErrorRate: config.monitoring.serverErrorRate,
      ignoreRollbackAlarms: config.settings.ignoreRollbackAlarms ?? false,
      eventsTopic: monitoring.deploymentEventsTopic,
    });
    this.edgeProtection = config.edgeProtection
      ? new EdgeProtection(this, "EdgeProtection", {
          stage: config.stage,
          api: this.api,
          config: config.edgeProtection,
          maxBodyBytes: MAX_BODY_BYTES,
          monitoring,
        })
      : undefined;
    const executeApiUrl = Fn.join("", [
      "https://",
      this.api.restApiId,
      ".execute-api.",
      this.region,
      ".",
      this.urlSuffix,
      "/",
      this.api.deploymentStage.stageName,
    ]);
    this.customDomain = customDomain
      ? new CustomDomain(this, "CustomDomain", { settings: customDomain, api: this.api, basePath: STAGE_NAME })
      : undefined;
    // The one "public base URL" of the stage: the custom domain's when there is one, else the default
    // endpoint's. The synthetic check, the BaseUrl output (and through it the deploy workflow's smoke
    // checks and people) all use it, so they still work when the execute-api endpoint is disabled.
    const baseUrl = this.customDomain?.baseUrl ?? executeApiUrl;
    this.syntheticCheck = new SyntheticCheck(this, "SyntheticCheck", {
      stage: config.stage,
      baseUrl,
      table: this.table,
      monitoring,
      alarm: config.monitoring.syntheticCheck,
      logs: this.logs,
      reservedConcurrency: BACKGROUND_RESERVED_CONCURRENCY,
      applicationLogLevel: LAMBDA_APPLICATION_LOG_LEVEL,
      runsAfter: [this.api.deploymentStage, ...(this.customDomain ? [this.customDomain] : [])],
      projectRoot,
    });

    // The construct's own "Endpoint" output ends in "/v1/"; the contract's base address ends in "/v1".
    this.api.node.tryRemoveChild("Endpoint");
    new CfnOutput(this, STACK_OUTPUTS.baseUrl, {
      value: baseUrl,
      description: "API base URL (ends in /v1; npm run smoke -- --base-url)",
    });
    if (!disableExecuteApiEndpoint) {
      new CfnOutput(this, STACK_OUTPUTS.executeApiUrl, {
        value: executeApiUrl,
        description: "The API's default execute-api address (ends in /v1); BaseUrl is the one to give clients",
      });
    }
    if (this.customDomain && !this.customDomain.record) {
      new CfnOutput(this, STACK_OUTPUTS.customDomainTarget, {
        value: this.customDomain.domainName.domainNameAliasDomainName,
        description: `Point a CNAME record for ${customDomain?.domainName} at this name (docs/deploy.md)`,
      });
    }
    new CfnOutput(this, STACK_OUTPUTS.tableName, {
      value: this.table.tableName,
      description: "DynamoDB table (npm run keys finds it here)",
    });
    new CfnOutput(this, STACK_OUTPUTS.alarmTopicArn, { value: monitoring.topic.topicArn });
    new CfnOutput(this, STACK_OUTPUTS.deploymentEventsTopicArn, { value: monitoring.deploymentEventsTopic.topicArn });
    new CfnOutput(this, STACK_OUTPUTS.dashboardName, { value: `PetStore-${config.stage}` });

    if (props.acknowledgeNagFindings !== false) acknowledgeNagFindings(this);
  }

  private routeFunction(route: RouteDefinition, config: StageConfig): { fn: NodejsFunction; alias: lambda.Alias } {
    const name = pascal(route.operationId);
    const logGroup = this.logs.logGroup(this, `${name}Logs`);
    // An own role instead of AWSLambdaBasicExecutionRole: logs to its own group only.
    const role = new iam.Role(this, `${name}Role`, {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `Runs the ${route.operationId} function (${config.stage})`,
    });
    logGroup.grantWrite(role);
    const fn = new NodejsFunction(this, `${name}Function`, {
      entry: `${projectRoot}${route.handlerFile}`,
      handler: "handler",
      projectRoot,
      depsLockFilePath: `${projectRoot}package-lock.json`,
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: config.functions.memoryMb,
      timeout: config.functions.timeout,
      role,
      logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      applicationLogLevelV2: LAMBDA_APPLICATION_LOG_LEVEL,
      systemLogLevelV2: config.functions.systemLogLevel,
      tracing: lambda.Tracing.ACTIVE,
      description: route.summary,
      environment: {
        PETS_TABLE_NAME: this.table.tableName,
        PETSTORE_STAGE: config.stage,
        LOG_LEVEL: config.functions.logLevel,
      },
      bundling: cdkBundling(),
      // Its share of the account's concurrency, and its ceiling (infra/config.ts).
      reservedConcurrentExecutions: config.functions.reservedConcurrency,
    });
    for (const statement of this.tableAccess({ ...route.dynamoAccess, ...KEY_CHECK }))
      role.addToPrincipalPolicy(statement);
    // A new version is published whenever the code or the configuration changes; CodeDeploy then
    // moves the alias to it (./rollout.ts). Versions the alias left are deleted once the update is done.
    const { provisionedConcurrency } = config.functions;
    if (!Number.isInteger(provisionedConcurrency) || provisionedConcurrency < 0) {
      throw new Error(
        `functions.provisionedConcurrency of the ${config.stage} stage must be a whole number, 0 for none.`,
      );
    }
    const alias = fn.addAlias(LIVE_ALIAS, {
      description: `What API Gateway invokes: the ${route.operationId} version clients get (${config.stage})`,
      ...(provisionedConcurrency > 0 ? { provisionedConcurrentExecutions: provisionedConcurrency } : {}),
    });
    return { fn, alias };
  }

  /**
   * Exactly the listed actions on exactly the listed parts of this table. Partitions are enforced
   * with dynamodb:LeadingKeys, the partition key every item request and Query names, so no function
   * can write (or un-revoke) an API key record, or touch another function's items.
   * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html
   */
  private tableAccess(access: Partial<Record<TableArea, readonly DynamoAction[]>>): iam.PolicyStatement[] {
    return Object.entries(access).map(([name, actions]) => {
      const area = tableAreas[name as TableArea];
      const sortedActions = [...new Set(actions)].sort();
      if ("index" in area) {
        // An index is read-only, and this one holds pet items only (it is sparse).
        return new iam.PolicyStatement({
          actions: sortedActions,
          resources: [`${this.table.tableArn}/index/${area.index}`],
        });
      }
      const patterns = area.partitionKeys.some((key) => key.includes("*"));
      return new iam.PolicyStatement({
        actions: sortedActions,
        resources: [this.table.tableArn],
        conditions: {
          [patterns ? "ForAllValues:StringLike" : "ForAllValues:StringEquals"]: {
            "dynamodb:LeadingKeys": [...area.partitionKeys],
          },
        },
      });
    });
  }
}

export interface PetStoreStageProps extends StageProps {
  readonly config: StageConfig;
  readonly acknowledgeNagFindings?: boolean;
}

/**
 * A deployable environment: `cdk deploy 'Staging/*'`. With an account and region in its settings,
 * its stack is pinned there: the CDK CLI deploys it only with credentials for that account (or a
 * role that account's bootstrap trusts), and refuses otherwise before any change is made. Without
 * them, it deploys wherever the credentials point (and synthesizes offline).
 * https://docs.aws.amazon.com/cdk/v2/guide/environments.html; the CLI's refusal ("Need to perform AWS
 * calls for account …, but the current credentials are for …"): https://github.com/aws/aws-cdk/issues/3322
 */
export class PetStoreStage extends Stage {
  readonly stack: PetStoreStack;
  /** The stage's data (the table), created before `stack` (./dataStack.ts). */
  readonly dataStack: PetStoreDataStack;
  readonly config: StageConfig;

  constructor(scope: Construct, id: string, props: PetStoreStageProps) {
    const { account, region } = props.config.settings;
    super(scope, id, {
      ...props,
      env: { ...(account === undefined ? {} : { account }), ...(region === undefined ? {} : { region }) },
    });
    this.config = props.config;
    // Cost per stage (../tags.ts): on each stack, and on every taggable resource in the templates.
    const tags = costTags([props.config.stage]);
    this.dataStack = new PetStoreDataStack(this, "PetStoreData", {
      config: props.config,
      stackName: props.config.dataStackName,
      description: `Pet Store API, ${props.config.stage} stage: data (the table)`,
      terminationProtection: props.config.terminationProtection,
      tags,
    });
    this.stack = new PetStoreStack(this, "PetStore", {
      config: props.config,
      ...(props.acknowledgeNagFindings === undefined ? {} : { acknowledgeNagFindings: props.acknowledgeNagFindings }),
      stackName: props.config.stackName,
      description: `Pet Store API, ${props.config.stage} stage`,
      // No termination protection: the service stack holds no data, and a failed first create must
      // be retried by running the same deploy (props.config.terminationProtection protects the data).
      terminationProtection: false,
      tags,
    });
    this.stack.addStackDependency(this.dataStack, "the table exists before the functions that use it");
    tagResources(this, tags);
  }
}
