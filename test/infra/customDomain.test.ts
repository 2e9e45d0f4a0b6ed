/**
 * A stage with its optional deployment settings set, as a platform engineer sets them (CDK context,
 * infra/settings.ts), synthesised once for the file and without bundling: production on its own
 * domain in a Route 53 zone with the execute-api endpoint disabled, provisioned concurrency on and
 * (for this one deploy) its rollback alarms ignored, staging on a domain whose DNS record is set by hand.
 */
import type { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { stageConfigs } from "../../infra/config";
import { deployedStages, STACK_OUTPUTS } from "../../infra/deployment";
import { API_BASE_PATH } from "../../lib/routes";
import { baseUrlFromOutputs } from "../../scripts/deliveryStage";
import { synthesizedStages } from "./app";

type Resource = { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] };
type Outputs = Record<string, { Value: unknown }>;

const CERTIFICATE = "arn:aws:acm:eu-west-1:111111111111:certificate/0f2c6c1e-2d3b-4c1a-9a57-0d7c1f1f2b11";
const PROVISIONED = 2;

let synth: ReturnType<typeof synthesizedStages>;

beforeAll(() => {
  synth = synthesizedStages({
    context: {
      "aws:cdk:bundling-stacks": [],
      "prod:account": "111111111111",
      "prod:region": "eu-west-1",
      "prod:domainName": "api.example.com",
      "prod:certificateArn": CERTIFICATE,
      "prod:hostedZoneId": "Z0123456789ABCDEFGHIJ",
      "prod:hostedZoneName": "example.com",
      "prod:disableExecuteApiEndpoint": "true",
      "prod:ignoreRollbackAlarms": "true",
      "staging:domainName": "staging.api.example.com",
      "staging:certificateArn": CERTIFICATE,
    },
    stages: [
      stageConfigs.Staging,
      {
        ...stageConfigs.Production,
        functions: { ...stageConfigs.Production.functions, provisionedConcurrency: PROVISIONED },
      },
    ],
  });
});

const production = () => synth.template("Production");
const staging = () => synth.template("Staging");
const resourcesOf = (template: Template, type: string) => template.findResources(type) as Record<string, Resource>;
const onlyOf = (template: Template, type: string): [string, Resource] => {
  const found = Object.entries(resourcesOf(template, type));
  expect(found, type).toHaveLength(1);
  return found[0] as [string, Resource];
};
const outputsOf = (template: Template) => template.toJSON().Outputs as Outputs;

describe("a stage with a custom domain", () => {
  it("synthesises with cdk-nag and the Control Tower checks clean", () => {
    expect(synth.failure).toBeUndefined();
  });

  it("serves the stage on a REGIONAL domain name with the TLS 1.2 policy and the configured certificate", () => {
    const [, domain] = onlyOf(production(), "AWS::ApiGateway::DomainName");
    // Tags are every resource's (test/infra/stageIsolation.test.ts).
    const { Tags: _, ...properties } = domain.Properties;

    expect(properties).toEqual({
      DomainName: "api.example.com",
      EndpointConfiguration: { Types: ["REGIONAL"] },
      RegionalCertificateArn: CERTIFICATE,
      SecurityPolicy: "TLS_1_2",
    });
  });

  it("maps the stage under v1, the prefix of the Location and Link paths the functions write", () => {
    const [domainId] = onlyOf(production(), "AWS::ApiGateway::DomainName");
    const [apiId] = onlyOf(production(), "AWS::ApiGateway::RestApi");
    const [stageId, stage] = onlyOf(production(), "AWS::ApiGateway::Stage");
    const [, mapping] = onlyOf(production(), "AWS::ApiGateway::BasePathMapping");

    expect(mapping.Properties).toEqual({
      BasePath: "v1",
      DomainName: { Ref: domainId },
      RestApiId: { Ref: apiId },
      Stage: { Ref: stageId },
    });
    // API Gateway strips the mapped segment, so /v1/pets/7 on the domain is /pets/7 of stage v1,
    // the same resource as on the execute-api address, and the absolute paths the functions write
    // (`Location: /v1/pets/7`, `Link: </v1/pets?…>`) lead back to it.
    expect(`/${mapping.Properties.BasePath}`).toBe(API_BASE_PATH);
    expect(`/${stage.Properties.StageName}`).toBe(API_BASE_PATH);
  });

  it("points the name at the domain with an alias record in the Route 53 zone given", () => {
    const [domainId] = onlyOf(production(), "AWS::ApiGateway::DomainName");
    const [, record] = onlyOf(production(), "AWS::Route53::RecordSet");

    expect(record.Properties).toEqual({
      HostedZoneId: "Z0123456789ABCDEFGHIJ",
      Name: "api.example.com.",
      Type: "A",
      AliasTarget: {
        DNSName: { "Fn::GetAtt": [domainId, "RegionalDomainName"] },
        HostedZoneId: { "Fn::GetAtt": [domainId, "RegionalHostedZoneId"] },
      },
    });
    expect(outputsOf(production())[STACK_OUTPUTS.customDomainTarget]).toBeUndefined();
  });

  it("disables the execute-api endpoint when asked, and then exports no address for it", () => {
    const [, api] = onlyOf(production(), "AWS::ApiGateway::RestApi");

    expect(api.Properties.DisableExecuteApiEndpoint).toBe(true);
    expect(outputsOf(production())[STACK_OUTPUTS.executeApiUrl]).toBeUndefined();
    expect(JSON.stringify(outputsOf(production()))).not.toContain("execute-api");
  });

  it("makes the domain the stage's one public base URL: the BaseUrl output, so the pipeline's smoke checks, and the synthetic check", () => {
    const outputs = outputsOf(production());
    const [, check] = Object.entries(resourcesOf(production(), "AWS::Lambda::Function")).find(([id]) =>
      id.startsWith("SyntheticCheckCheckFunction"),
    ) ?? [undefined, undefined];
    // What `cdk deploy --outputs-file` writes, read the way the deploy workflow reads it.
    const outputsFile = JSON.stringify({
      [deployedStages.prod.stackName]: Object.fromEntries(
        Object.entries(outputs).map(([name, output]) => [name, output.Value]),
      ),
    });

    expect(outputs[STACK_OUTPUTS.baseUrl]?.Value).toBe("https://api.example.com/v1");
    expect(baseUrlFromOutputs(outputsFile, deployedStages.prod, "cdk-outputs.json")).toBe("https://api.example.com/v1");
    expect(check?.Properties.Environment).toMatchObject({
      Variables: { PETSTORE_BASE_URL: "https://api.example.com/v1" },
    });
  });

  it("starts the synthetic check only once the domain serves the stage", () => {
    const [, schedule] = onlyOf(production(), "AWS::Scheduler::Schedule");
    const [mappingId] = onlyOf(production(), "AWS::ApiGateway::BasePathMapping");

    expect(schedule.DependsOn).toContain(mappingId);
  });

  it("without a Route 53 zone, creates no record and exports the name a CNAME must point at; the default endpoint stays on", () => {
    const [domainId] = onlyOf(staging(), "AWS::ApiGateway::DomainName");
    const outputs = outputsOf(staging());

    expect(resourcesOf(staging(), "AWS::Route53::RecordSet")).toEqual({});
    expect(outputs[STACK_OUTPUTS.baseUrl]?.Value).toBe("https://staging.api.example.com/v1");
    expect(outputs[STACK_OUTPUTS.customDomainTarget]?.Value).toEqual({
      "Fn::GetAtt": [domainId, "RegionalDomainName"],
    });
    expect(JSON.stringify(outputs[STACK_OUTPUTS.executeApiUrl]?.Value)).toContain(".execute-api.");
    expect(onlyOf(staging(), "AWS::ApiGateway::RestApi")[1].Properties.DisableExecuteApiEndpoint).toBe(false);
  });
});

describe("provisioned concurrency", () => {
  it("keeps the configured number of instances initialised on each function's live alias", () => {
    const aliases = Object.values(resourcesOf(production(), "AWS::Lambda::Alias"));

    expect(aliases.length).toBeGreaterThan(0);
    for (const alias of aliases) {
      expect(alias.Properties.ProvisionedConcurrencyConfig).toEqual({ ProvisionedConcurrentExecutions: PROVISIONED });
    }
    for (const alias of Object.values(resourcesOf(staging(), "AWS::Lambda::Alias"))) {
      expect(alias.Properties.ProvisionedConcurrencyConfig).toBeUndefined();
    }
  });
});

describe("a deploy that ignores the rollback alarms", () => {
  const groupsOf = (template: Template) => Object.values(resourcesOf(template, "AWS::CodeDeploy::DeploymentGroup"));

  it("still shifts through CodeDeploy and rolls back a failed or stopped deployment, without watching the alarms", () => {
    const groups = groupsOf(production());

    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups) {
      expect(group.Properties.AlarmConfiguration).toMatchObject({ Enabled: false });
      expect(group.Properties.AutoRollbackConfiguration).toEqual({
        Enabled: true,
        Events: ["DEPLOYMENT_FAILURE", "DEPLOYMENT_STOP_ON_REQUEST"],
      });
    }
  });

  it("applies to the stage it is set for only", () => {
    for (const group of groupsOf(staging())) {
      expect(group.Properties.AlarmConfiguration).toMatchObject({ Enabled: true });
    }
  });
});
