/**
 * Resolves CloudFormation intrinsics (Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split, Fn::ImportValue) the
 * way CloudFormation would at deploy time, with the stack's pinned account and region and deterministic stand-in
 * physical names shaped like the real ones (CloudFormation names an unnamed resource `<stack name>-<logical id>-<random
 * suffix>`, which key policies such as the logs key's `log-group:<stack name>-*` rely on).
 */
import { createHash } from "node:crypto";
import { type AssemblyStack, type CfnResource, resourcesOf } from "./assembly";

export class ResolveError extends Error {
  override readonly name = "ResolveError";
}

const suffix = (seed: string, length = 12) =>
  createHash("sha256").update(seed).digest("hex").slice(0, length).toUpperCase();

/** Resource types whose name a property sets, else CloudFormation generates one of at most this length. */
const NAME_PROPERTIES: Record<string, [property: string, maxLength: number]> = {
  "AWS::DynamoDB::GlobalTable": ["TableName", 255],
  "AWS::DynamoDB::Table": ["TableName", 255],
  "AWS::Lambda::Function": ["FunctionName", 64],
  "AWS::Logs::LogGroup": ["LogGroupName", 512],
  "AWS::CloudWatch::Alarm": ["AlarmName", 255],
  "AWS::IAM::Role": ["RoleName", 64],
  "AWS::IAM::User": ["UserName", 64],
  "AWS::IAM::Group": ["GroupName", 64],
};

export class Resolver {
  readonly partition = "aws";
  constructor(
    readonly stack: AssemblyStack,
    /** Every stack of the assembly, for Fn::ImportValue. */
    private readonly allStacks: readonly AssemblyStack[] = [stack],
  ) {}

  get account() {
    return this.stack.account;
  }
  get region() {
    return this.stack.region;
  }

  /**
   * The tables this stack's functions use: its own and those of the stacks it is deployed after (a stage keeps its
   * table in a data stack of its own), each with the resolver of its stack.
   */
  tables(): { logicalId: string; resource: CfnResource; resolver: Resolver }[] {
    return this.acrossStacks("AWS::DynamoDB::GlobalTable", "AWS::DynamoDB::Table");
  }

  /** The resources of these types in this stack and the stacks it is deployed after, each with its stack's resolver. */
  acrossStacks(...types: string[]): { logicalId: string; resource: CfnResource; resolver: Resolver }[] {
    const owners = [
      this.stack,
      ...this.allStacks.filter((other) => this.stack.dependencies.includes(other.artifactId)),
    ];
    return owners.flatMap((owner) => {
      const resolver = owner === this.stack ? this : new Resolver(owner, this.allStacks);
      return types.flatMap((type) =>
        resourcesOf(owner.template, type).map(([logicalId, resource]) => ({ logicalId, resource, resolver })),
      );
    });
  }

  private resource(logicalId: string): CfnResource {
    const resource = this.stack.template.Resources[logicalId];
    if (!resource) throw new ResolveError(`${this.stack.displayName}: no resource ${logicalId}`);
    return resource;
  }

  private property(logicalId: string, name: string): string | undefined {
    const value = this.resource(logicalId).Properties?.[name];
    return value === undefined ? undefined : String(this.resolve(value));
  }

  /** The physical name CloudFormation would give the resource. */
  physicalName(logicalId: string, maxLength = 64): string {
    return `${`${this.stack.stackName}-${logicalId}`.slice(0, maxLength - 13)}-${suffix(logicalId)}`;
  }

  ref(logicalId: string): string {
    switch (logicalId) {
      case "AWS::AccountId":
        return this.account;
      case "AWS::Region":
        return this.region;
      case "AWS::Partition":
        return this.partition;
      case "AWS::URLSuffix":
        return "amazonaws.com";
      case "AWS::StackName":
        return this.stack.stackName;
      case "AWS::StackId":
        return `arn:aws:cloudformation:${this.region}:${this.account}:stack/${this.stack.stackName}/${suffix(this.stack.stackName, 8).toLowerCase()}`;
      case "AWS::NoValue":
        return "";
    }
    const { Type } = this.resource(logicalId);
    const a = `${this.region}:${this.account}`;
    const named = NAME_PROPERTIES[Type];
    if (named) return this.property(logicalId, named[0]) ?? this.physicalName(logicalId, named[1]);
    switch (Type) {
      case "AWS::SecretsManager::Secret":
        return `arn:aws:secretsmanager:${a}:secret:${this.property(logicalId, "Name") ?? logicalId}-${suffix(logicalId, 6)}`;
      case "AWS::SNS::Topic":
        return `arn:aws:sns:${a}:${this.property(logicalId, "TopicName") ?? this.physicalName(logicalId, 256)}`;
      case "AWS::KMS::Key":
        // Seeded with the stack too: two stages in one account have two keys, and two APIs.
        return `${suffix(`${this.stack.stackName}${logicalId}`, 8)}-0000-4000-8000-${suffix(`${this.stack.stackName}${logicalId}key`, 12)}`.toLowerCase();
      case "AWS::Lambda::Alias":
        return `${this.functionArn(String(this.resolve(this.resource(logicalId).Properties?.FunctionName)))}:${this.property(logicalId, "Name")}`;
      case "AWS::Lambda::Version":
        return `${this.functionArn(String(this.resolve(this.resource(logicalId).Properties?.FunctionName)))}:1`;
      case "AWS::ApiGateway::RestApi":
        return suffix(`${this.stack.stackName}${logicalId}`, 10).toLowerCase();
      case "AWS::ApiGateway::Stage":
        return this.property(logicalId, "StageName") ?? logicalId;
      case "AWS::ApiGateway::Resource":
        return suffix(logicalId, 6).toLowerCase();
      default:
        return this.physicalName(logicalId);
    }
  }

  private functionArn(nameOrArn: string): string {
    return nameOrArn.startsWith("arn:")
      ? nameOrArn
      : `arn:aws:lambda:${this.region}:${this.account}:function:${nameOrArn}`;
  }

  getAtt(logicalId: string, attribute: string): string {
    const { Type } = this.resource(logicalId);
    const a = `${this.region}:${this.account}`;
    const ref = () => this.ref(logicalId);
    if (attribute === "Arn") {
      switch (Type) {
        case "AWS::DynamoDB::GlobalTable":
        case "AWS::DynamoDB::Table":
          return `arn:aws:dynamodb:${a}:table/${ref()}`;
        case "AWS::Lambda::Function":
          return this.functionArn(ref());
        case "AWS::Logs::LogGroup":
          return `arn:aws:logs:${a}:log-group:${ref()}:*`;
        case "AWS::KMS::Key":
          return `arn:aws:kms:${a}:key/${ref()}`;
        case "AWS::IAM::Role":
          return `arn:aws:iam::${this.account}:role/${ref()}`;
        case "AWS::IAM::User":
          return `arn:aws:iam::${this.account}:user/${ref()}`;
        case "AWS::IAM::Group":
          return `arn:aws:iam::${this.account}:group/${ref()}`;
        case "AWS::CloudWatch::Alarm":
          return `arn:aws:cloudwatch:${a}:alarm:${ref()}`;
        case "AWS::SNS::Topic":
        case "AWS::SecretsManager::Secret":
        case "AWS::Lambda::Alias":
          return ref();
        case "AWS::Scheduler::Schedule":
          return `arn:aws:scheduler:${a}:schedule/default/${ref()}`;
      }
    }
    if (Type === "AWS::ApiGateway::RestApi" && attribute === "RootResourceId")
      return suffix(`${logicalId}root`, 6).toLowerCase();
    if (Type === "AWS::Lambda::Version" && attribute === "Version") return "1";
    if (Type === "AWS::SNS::Topic" && attribute === "TopicName") return ref().split(":").at(-1) ?? "";
    if (Type === "AWS::ApiGateway::DomainName" && attribute.startsWith("Regional")) {
      return attribute === "RegionalHostedZoneId"
        ? "ZREGIONAL0000"
        : `d-${suffix(logicalId, 10).toLowerCase()}.execute-api.${this.region}.amazonaws.com`;
    }
    return `${ref()}.${attribute}`;
  }

  private importValue(name: string): unknown {
    for (const stack of this.allStacks) {
      for (const output of Object.values(stack.template.Outputs ?? {})) {
        const resolver = new Resolver(stack, this.allStacks);
        if (output.Export && resolver.resolve(output.Export.Name) === name) return resolver.resolve(output.Value);
      }
    }
    throw new ResolveError(`${this.stack.displayName}: no stack of the assembly exports ${name}`);
  }

  /** The value with every intrinsic replaced. */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((item) => this.resolve(item));
    if (value === null || typeof value !== "object") return value;
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 1) {
      const [[key, argument]] = entries as [[string, unknown]];
      switch (key) {
        case "Ref":
          return this.ref(String(argument));
        case "Fn::GetAtt": {
          const [id, attribute] = Array.isArray(argument) ? argument : String(argument).split(/\.(.*)/);
          return this.getAtt(String(id), String(attribute));
        }
        case "Fn::Join": {
          const [separator, parts] = argument as [string, unknown[]];
          return (this.resolve(parts) as unknown[]).join(separator);
        }
        case "Fn::Select": {
          const [index, list] = argument as [unknown, unknown];
          return (this.resolve(list) as unknown[])[Number(this.resolve(index))];
        }
        case "Fn::Split": {
          const [separator, text] = argument as [string, unknown];
          return String(this.resolve(text)).split(separator);
        }
        case "Fn::ImportValue":
          return this.importValue(String(this.resolve(argument)));
        case "Fn::Sub": {
          const [text, variables] = Array.isArray(argument) ? argument : [argument, {}];
          const values = this.resolve(variables) as Record<string, unknown>;
          return String(text).replace(/\$\{([^}!][^}]*)\}/g, (_, name: string) => {
            if (name in values) return String(values[name]);
            const [id, attribute] = name.split(/\.(.*)/);
            return attribute ? this.getAtt(String(id), attribute) : this.ref(name);
          });
        }
      }
    }
    return Object.fromEntries(entries.map(([key, item]) => [key, this.resolve(item)]));
  }
}
