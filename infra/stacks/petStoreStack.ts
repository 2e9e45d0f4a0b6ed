/**
 * One complete, isolated copy of the service: table, one function per route of the route table,
 * the REST API with its `v1` stage, gateway responses in the Error shape, monitoring, and a
 * scheduled synthetic check that alarms when the stage stops answering.
 */
import { fileURLToPath } from "node:url";
import { CfnOutput, Fn, RemovalPolicy, Stack, type StackProps, Stage, type StageProps } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { NodejsFunction } from "aws-cdk-lib/aws-lambda-nodejs";
import * as logs from "aws-cdk-lib/aws-logs";
import type { Construct } from "constructs";
import { petTable } from "../../lib/db/table";
import { API_BASE_PATH, type RouteDefinition, routeList } from "../../lib/routes";
import type { StageConfig } from "../config";
import { STACK_OUTPUTS } from "../deployment";
import { cdkBundling } from "./functionBundling";
import { GatewayErrors } from "./gatewayErrors";
import { Monitoring } from "./monitoring";
import { acknowledgeNagFindings } from "./nagAcknowledgements";
import { SyntheticCheck } from "./syntheticCheck";

const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

/** Attribute holding an item's expiry (epoch seconds); DynamoDB deletes expired items. */
export const TTL_ATTRIBUTE = "expiresAt";

export interface PetStoreStackProps extends StackProps {
  readonly config: StageConfig;
  /** Off only in the test that proves every acknowledgement matches a real finding. */
  readonly acknowledgeNagFindings?: boolean;
}

const keyType = (type: "S" | "N") => (type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);
const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

export class PetStoreStack extends Stack {
  readonly table: dynamodb.TableV2;
  readonly api: apigateway.RestApi;
  readonly functions: Record<string, NodejsFunction> = {};
  readonly monitoring: Monitoring;
  readonly syntheticCheck: SyntheticCheck;

  constructor(scope: Construct, id: string, props: PetStoreStackProps) {
    super(scope, id, props);
    const { config } = props;

    this.table = new dynamodb.TableV2(this, "Table", {
      partitionKey: { name: petTable.partitionKey.name, type: keyType(petTable.partitionKey.type) },
      sortKey: { name: petTable.sortKey.name, type: keyType(petTable.sortKey.type) },
      billing: dynamodb.Billing.onDemand(),
      globalSecondaryIndexes: petTable.globalSecondaryIndexes.map((index) => ({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey.name, type: keyType(index.partitionKey.type) },
        sortKey: { name: index.sortKey.name, type: keyType(index.sortKey.type) },
        projectionType: dynamodb.ProjectionType.ALL,
      })),
      pointInTimeRecoverySpecification: {
        pointInTimeRecoveryEnabled: true,
        recoveryPeriodInDays: config.table.pointInTimeRecoveryDays,
      },
      deletionProtection: config.table.deletionProtection,
      removalPolicy: config.table.removalPolicy,
      timeToLiveAttribute: TTL_ATTRIBUTE,
    });

    const accessLogs = new logs.LogGroup(this, "AccessLogs", {
      retention: config.logRetention,
      removalPolicy: config.logRemovalPolicy,
    });
    this.api = new apigateway.RestApi(this, "Api", {
      restApiName: `petstore-${config.stage}`,
      description: `Pet Store API (${config.stage})`,
      endpointTypes: [apigateway.EndpointType.REGIONAL],
      cloudWatchRole: true,
      // The role is set account-wide (one per region), and the stage deployed last wins: a staging
      // destroy must not delete a role that production's execution logging may be using.
      cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN,
      deployOptions: {
        stageName: API_BASE_PATH.slice(1),
        throttlingRateLimit: config.api.throttlingRateLimit,
        throttlingBurstLimit: config.api.throttlingBurstLimit,
        loggingLevel: apigateway.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: true,
        tracingEnabled: true,
        accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigateway.AccessLogFormat.custom(
          JSON.stringify({
            requestId: apigateway.AccessLogField.contextRequestId(),
            ip: apigateway.AccessLogField.contextIdentitySourceIp(),
            requestTime: apigateway.AccessLogField.contextRequestTime(),
            method: apigateway.AccessLogField.contextHttpMethod(),
            path: apigateway.AccessLogField.contextPath(),
            resourcePath: apigateway.AccessLogField.contextResourcePath(),
            status: apigateway.AccessLogField.contextStatus(),
            responseLength: apigateway.AccessLogField.contextResponseLength(),
            responseLatency: apigateway.AccessLogField.contextResponseLatency(),
            integrationLatency: apigateway.AccessLogField.contextIntegrationLatency(),
            errorType: apigateway.AccessLogField.contextErrorResponseType(),
            errorMessage: apigateway.AccessLogField.contextErrorMessageString(),
          }),
        ),
      },
    });
    // Path parameters are checked here; bodies have no model, the functions validate them against the schemas.
    const validator = this.api.addRequestValidator("RequestValidator", {
      validateRequestParameters: true,
      validateRequestBody: true,
    });

    for (const route of routeList) {
      const fn = this.routeFunction(route, config);
      this.functions[route.operationId] = fn;
      const pathParameters = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
      this.api.root.resourceForPath(route.path).addMethod(route.method, new apigateway.LambdaIntegration(fn), {
        operationName: route.operationId,
        requestValidator: validator,
        requestParameters: Object.fromEntries(pathParameters.map((name) => [`method.request.path.${name}`, true])),
      });
    }
    new GatewayErrors(this, "GatewayErrors", { api: this.api, routes: routeList });

    const monitoring = new Monitoring(this, "Monitoring", {
      stage: config.stage,
      api: this.api,
      functions: this.functions,
      table: this.table,
      config: config.monitoring,
      functionTimeout: config.functions.timeout,
      destinations: config.settings,
      // It only encrypts alarm notifications in flight, so it lives as long as the stage's logs.
      keyRemovalPolicy: config.logRemovalPolicy,
    });
    this.monitoring = monitoring;
    const baseUrl = Fn.join("", [
      "https://",
      this.api.restApiId,
      ".execute-api.",
      this.region,
      ".",
      this.urlSuffix,
      "/",
      this.api.deploymentStage.stageName,
    ]);
    this.syntheticCheck = new SyntheticCheck(this, "SyntheticCheck", {
      stage: config.stage,
      baseUrl,
      table: this.table,
      monitoring,
      alarm: config.monitoring.syntheticCheck,
      logRetention: config.logRetention,
      logRemovalPolicy: config.logRemovalPolicy,
      runsAfter: [this.api.deploymentStage],
      projectRoot,
    });

    // The construct's own "Endpoint" output ends in "/v1/"; the contract's base address ends in "/v1".
    this.api.node.tryRemoveChild("Endpoint");
    new CfnOutput(this, STACK_OUTPUTS.baseUrl, {
      value: baseUrl,
      description: "API base URL (ends in /v1; npm run smoke -- --base-url)",
    });
    new CfnOutput(this, STACK_OUTPUTS.tableName, {
      value: this.table.tableName,
      description: "DynamoDB table (npm run keys finds it here)",
    });
    new CfnOutput(this, STACK_OUTPUTS.alarmTopicArn, { value: monitoring.topic.topicArn });
    new CfnOutput(this, STACK_OUTPUTS.dashboardName, { value: `PetStore-${config.stage}` });

    if (props.acknowledgeNagFindings !== false) acknowledgeNagFindings(this);
  }

  private routeFunction(route: RouteDefinition, config: StageConfig): NodejsFunction {
    const name = pascal(route.operationId);
    const logGroup = new logs.LogGroup(this, `${name}Logs`, {
      retention: config.logRetention,
      removalPolicy: config.logRemovalPolicy,
    });
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
      systemLogLevelV2: lambda.SystemLogLevel.WARN,
      tracing: lambda.Tracing.ACTIVE,
      description: route.summary,
      environment: {
        PETS_TABLE_NAME: this.table.tableName,
        PETSTORE_STAGE: config.stage,
        LOG_LEVEL: config.functions.logLevel,
      },
      bundling: cdkBundling(),
    });
    // Exactly the route's DynamoDB actions, plus reading API key hashes, on this table only.
    const actions = [...new Set([...route.dynamoActions, "dynamodb:GetItem"])].sort();
    const indexArns = route.dynamoActions.includes("dynamodb:Query")
      ? petTable.globalSecondaryIndexes.map((index) => `${this.table.tableArn}/index/${index.indexName}`)
      : [];
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources: [this.table.tableArn, ...indexArns] }));
    return fn;
  }
}

export interface PetStoreStageProps extends StageProps {
  readonly config: StageConfig;
  readonly acknowledgeNagFindings?: boolean;
}

/** A deployable environment: `cdk deploy 'Staging/*'`. */
export class PetStoreStage extends Stage {
  readonly stack: PetStoreStack;

  constructor(scope: Construct, id: string, props: PetStoreStageProps) {
    super(scope, id, props);
    this.stack = new PetStoreStack(this, "PetStore", {
      config: props.config,
      ...(props.acknowledgeNagFindings === undefined ? {} : { acknowledgeNagFindings: props.acknowledgeNagFindings }),
      stackName: props.config.stackName,
      description: `Pet Store API, ${props.config.stage} stage`,
    });
  }
}
