/**
 * The stage's own address, when its settings name one (infra/settings.ts): a REGIONAL API Gateway
 * domain name serving TLS 1.2 and up, the stage mapped under the base path `v1`, and, when a Route
 * 53 zone is given, an alias record pointing the name at it. Without a zone, DNS is the owner's to
 * set (docs/deploy.md).
 */
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as acm from "aws-cdk-lib/aws-certificatemanager";
import * as route53 from "aws-cdk-lib/aws-route53";
import * as route53Targets from "aws-cdk-lib/aws-route53-targets";
import { Construct } from "constructs";
import type { CustomDomainSettings } from "../settings";

export interface CustomDomainProps {
  readonly settings: CustomDomainSettings;
  readonly api: apigateway.RestApi;
  /**
   * The path segment the stage is mapped under, the stage's own name (`v1`). The functions write
   * `Location: /v1/pets/{id}` and `Link: </v1/pets?…>` from lib/routes.ts's API_BASE_PATH, paths
   * from the host's root; they stay right because API Gateway strips the mapped base path before
   * routing: `https://<domain>/v1/pets/7` reaches the `/pets/{petId}` resource of the mapped stage,
   * exactly as `https://<api-id>.execute-api.<region>.amazonaws.com/v1/pets/7` does.
   * https://docs.aws.amazon.com/apigateway/latest/developerguide/rest-api-mappings.html
   */
  readonly basePath: string;
}

export class CustomDomain extends Construct {
  readonly domainName: apigateway.DomainName;
  /** `https://<domain>/<basePath>`: the stage's public base URL. */
  readonly baseUrl: string;
  readonly record: route53.ARecord | undefined;

  constructor(scope: Construct, id: string, props: CustomDomainProps) {
    super(scope, id);
    const { settings, api, basePath } = props;
    this.domainName = new apigateway.DomainName(this, "DomainName", {
      domainName: settings.domainName,
      // A REGIONAL name needs a certificate of the API's own region:
      // https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-regional-api-custom-domain-create.html
      certificate: acm.Certificate.fromCertificateArn(this, "Certificate", settings.certificateArn),
      endpointType: apigateway.EndpointType.REGIONAL,
      securityPolicy: apigateway.SecurityPolicy.TLS_1_2,
    });
    this.domainName.addBasePathMapping(api, { basePath, stage: api.deploymentStage });
    this.baseUrl = `https://${settings.domainName}/${basePath}`;

    this.record = settings.hostedZone
      ? new route53.ARecord(this, "AliasRecord", {
          zone: route53.HostedZone.fromHostedZoneAttributes(this, "HostedZone", {
            hostedZoneId: settings.hostedZone.id,
            zoneName: settings.hostedZone.name,
          }),
          recordName: `${settings.domainName}.`,
          target: route53.RecordTarget.fromAlias(new route53Targets.ApiGatewayDomain(this.domainName)),
        })
      : undefined;
  }
}
