/**
 * The local endpoint every AWS call of the artifacts goes to. It records each request (the caller,
 * named by the fake access key it signed with; the service; the operation; the body) before it
 * answers: DynamoDB calls are forwarded to dynalite, Secrets Manager calls are served from memory,
 * and a call to any other service is recorded and refused, so that a new dependency shows up as a
 * failure to model rather than passing unseen. It also serves the CloudFormation custom-resource
 * response URLs and records what the function answers there.
 */
import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";

export interface RecordedCall {
  /** The access key id the request was signed with. */
  readonly accessKeyId: string;
  /** `dynamodb`, `secretsmanager`, or the signing name of another service. */
  readonly service: string;
  /** The operation, `GetItem`. */
  readonly operation: string;
  readonly body: Record<string, unknown>;
  /** The HTTP status the stand-in answered. */
  status?: number;
}

export interface CustomResourceAnswer {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

interface Secret {
  arn: string;
  text?: string;
  version: number;
}

const readBody = (request: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });

const listen = (server: Server) =>
  new Promise<number>((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });

export class AwsStandIn {
  readonly calls: RecordedCall[] = [];
  readonly answers: CustomResourceAnswer[] = [];
  private readonly secrets = new Map<string, Secret>();
  private dynalitePort = 0;
  private port = 0;
  private readonly dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  private readonly server = createServer((request, response) => {
    this.handle(request).then(
      ({ status, headers, body }) => {
        response.writeHead(status, headers);
        response.end(body);
      },
      (error: unknown) => {
        response.writeHead(500, { "content-type": "text/plain" });
        response.end(String(error));
      },
    );
  });

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** dynalite itself (see setupClient). */
  private get dynamoEndpoint(): string {
    return `http://127.0.0.1:${this.dynalitePort}`;
  }

  /**
   * A client of dynalite itself, for what an operator sets up (tables, a client's key): its calls
   * are not the artifacts', so they are neither recorded nor checked. The caller destroys it.
   */
  setupClient(region: string): DynamoDBClient {
    return new DynamoDBClient({
      region,
      endpoint: this.dynamoEndpoint,
      credentials: { accessKeyId: "rehearsal-setup", secretAccessKey: "rehearsal-setup" },
    });
  }

  async start(): Promise<void> {
    this.dynalitePort = await listen(this.dynamo);
    this.port = await listen(this.server);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    await new Promise((resolve) => this.dynamo.close(resolve));
  }

  /** A secret the template creates; Secrets Manager fills it with a generated placeholder. */
  addSecret(arn: string): void {
    this.secrets.set(arn, { arn, text: `placeholder-${randomUUID()}`, version: 1 });
  }

  secretText(arn: string): string | undefined {
    return this.secrets.get(arn)?.text;
  }

  /** A fresh pre-signed-looking response URL for one custom-resource event. */
  responseUrl(): string {
    return `${this.endpoint}/cloudformation-response/${randomUUID()}?X-Amz-Signature=rehearsal`;
  }

  private async handle(
    request: IncomingMessage,
  ): Promise<{ status: number; headers: Record<string, string>; body: string | Buffer }> {
    const raw = await readBody(request);
    if (request.url?.startsWith("/cloudformation-response/")) {
      this.answers.push({ path: request.url, body: JSON.parse(raw.toString("utf8") || "{}") });
      return { status: 200, headers: {}, body: "" };
    }
    const authorization = String(request.headers.authorization ?? "");
    const [, accessKeyId = "unsigned", , service = "unknown"] =
      /Credential=([^/]+)\/([^/]+)\/[^/]+\/([^/]+)\//.exec(authorization) ?? [];
    const target = String(request.headers["x-amz-target"] ?? "");
    const operation = target.split(".").at(-1) || `${request.method} ${request.url}`;
    let body: Record<string, unknown> = {};
    try {
      body = raw.length ? (JSON.parse(raw.toString("utf8")) as Record<string, unknown>) : {};
    } catch {
      body = { raw: raw.toString("utf8").slice(0, 200) };
    }
    const call: RecordedCall = { accessKeyId, service, operation, body };
    this.calls.push(call);
    const answer =
      service === "dynamodb"
        ? await this.forwardToDynalite(request, raw)
        : service === "secretsmanager"
          ? this.secretsManager(operation, body)
          : json(400, { __type: "UnknownOperationException", message: `the rehearsal has no ${service} stand-in` });
    call.status = answer.status;
    return answer;
  }

  private forwardToDynalite(
    request: IncomingMessage,
    body: Buffer,
  ): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const forward = httpRequest(
        {
          host: "127.0.0.1",
          port: this.dynalitePort,
          method: request.method,
          path: request.url,
          headers: { ...request.headers, host: `127.0.0.1:${this.dynalitePort}` },
        },
        (response) => {
          readBody(response).then(
            (answer) =>
              resolve({
                status: response.statusCode ?? 500,
                headers: Object.fromEntries(
                  Object.entries(response.headers).map(([name, value]) => [name, String(value)]),
                ),
                body: answer,
              }),
            reject,
          );
        },
      );
      forward.on("error", reject);
      forward.end(body);
    });
  }

  /** GetSecretValue and PutSecretValue, as https://docs.aws.amazon.com/secretsmanager/latest/apireference/ describes them. */
  private secretsManager(operation: string, body: Record<string, unknown>) {
    const secret = this.secrets.get(String(body.SecretId));
    if (!secret) {
      return json(400, {
        __type: "ResourceNotFoundException",
        message: "Secrets Manager can't find the specified secret.",
      });
    }
    const name = secret.arn
      .split(":")
      .at(-1)
      ?.replace(/-\w{6}$/, "");
    if (operation === "GetSecretValue") {
      return json(200, {
        ARN: secret.arn,
        Name: name,
        SecretString: secret.text,
        VersionId: `v${secret.version}`,
        VersionStages: ["AWSCURRENT"],
      });
    }
    if (operation === "PutSecretValue" && typeof body.SecretString === "string") {
      secret.text = body.SecretString;
      secret.version += 1;
      return json(200, { ARN: secret.arn, Name: name, VersionId: `v${secret.version}`, VersionStages: ["AWSCURRENT"] });
    }
    return json(400, { __type: "InvalidRequestException", message: `the stand-in does not serve ${operation}` });
  }
}

function json(status: number, value: unknown) {
  return { status, headers: { "content-type": "application/x-amz-json-1.1" }, body: JSON.stringify(value) };
}
