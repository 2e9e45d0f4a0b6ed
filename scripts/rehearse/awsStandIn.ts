/**
 * The local endpoint every AWS call of the artifacts goes to: each is recorded (caller by its fake access key,
 * service, operation, body) and authorized when made (`authorize`); a denied call gets AWS's AccessDeniedException.
 * DynamoDB goes to dynalite, Secrets Manager is served from memory, any other service is refused so that a new
 * dependency fails to model rather than pass unseen. It also serves custom-resource response URLs, as strictly as the
 * pre-signed S3 URLs they stand for.
 */
import { randomUUID } from "node:crypto";
import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { listen } from "./apiGateway";

export interface RecordedCall {
  /** The access key id the request was signed with. */
  readonly accessKeyId: string;
  /** `dynamodb`, `secretsmanager`, or the signing name of another service. */
  readonly service: string;
  /** The operation, `GetItem`. */
  readonly operation: string;
  readonly body: Record<string, unknown>;
  /** The region the request was signed for (its credential scope). */
  readonly region: string;
  /** The scenario step during which the call was made. */
  readonly step?: string;
  /** The HTTP status the stand-in answered. */
  status?: number;
  /** Why the stand-in refused it (an AccessDeniedException's message, a region mismatch). */
  refused?: string;
}

/** AWS's answer to a call refused before the service ran it. */
export interface Refusal {
  readonly status: number;
  /** `AccessDeniedException`, `InvalidSignatureException`. */
  readonly errorType: string;
  readonly message: string;
}

/** Decides, when a call is made, whether AWS would let it through; undefined lets it through. */
export type Authorizer = (call: RecordedCall) => Promise<Refusal | undefined>;

export interface CustomResourceAnswer {
  readonly path: string;
  readonly body: Record<string, unknown>;
  /** Why the pre-signed URL refused the answer (CloudFormation never sees a refused answer). */
  readonly refused?: string;
}

/**
 * CloudFormation's ResponseURL is a pre-signed S3 URL for one PUT
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html): S3 refuses another
 * method, a changed query or an unsigned Content-Type (cfn-response sends an empty one), and CloudFormation a body over
 * 4096 bytes or missing fields.
 */
export function responseUrlRefusal(
  method: string,
  issuedQuery: string,
  query: string,
  contentType: string | undefined,
  raw: Buffer,
): string | undefined {
  if (method !== "PUT")
    return `${method} to the pre-signed URL (S3 answers 403 SignatureDoesNotMatch: it was signed for PUT)`;
  if (query !== issuedQuery) return "a changed query string (S3 answers 403 SignatureDoesNotMatch)";
  if (contentType)
    return `Content-Type "${contentType}" (S3 answers 403 SignatureDoesNotMatch: the URL was signed with an empty Content-Type)`;
  if (raw.length > 4096) return `a ${raw.length}-byte body (CloudFormation accepts at most 4096 bytes)`;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  } catch {
    return "a body that is not JSON";
  }
  const missing = ["Status", "RequestId", "StackId", "LogicalResourceId", "PhysicalResourceId"].filter(
    (field) => typeof body[field] !== "string",
  );
  if (body.Status !== "SUCCESS" && body.Status !== "FAILED") missing.push("Status SUCCESS or FAILED");
  if (body.Status === "FAILED" && typeof body.Reason !== "string") missing.push("Reason (required with FAILED)");
  return missing.length ? `a body without ${missing.join(", ")}` : undefined;
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

export class AwsStandIn {
  readonly calls: RecordedCall[] = [];
  readonly answers: CustomResourceAnswer[] = [];
  /** The scenario step in progress: every call recorded meanwhile carries it. */
  step: string | undefined;
  /** Set by the stage being rehearsed. */
  authorize: Authorizer | undefined;
  private readonly issuedResponseUrls = new Map<string, string>();
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
   * A client of dynalite itself, for what an operator sets up (tables, a client's key): its calls are not the
   * artifacts', so they are neither recorded nor checked. The caller destroys it.
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
    const path = `/cloudformation-response/${randomUUID()}`;
    const query = `X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=7200&X-Amz-SignedHeaders=host&X-Amz-Signature=${randomUUID().replaceAll("-", "")}`;
    this.issuedResponseUrls.set(path, query);
    return `${this.endpoint}${path}?${query}`;
  }

  private async handle(
    request: IncomingMessage,
  ): Promise<{ status: number; headers: Record<string, string>; body: string | Buffer }> {
    const raw = await readBody(request);
    if (request.url?.startsWith("/cloudformation-response/")) {
      const url = new URL(request.url, this.endpoint);
      const issued = this.issuedResponseUrls.get(url.pathname);
      const refused =
        issued === undefined
          ? "a URL CloudFormation never issued"
          : responseUrlRefusal(
              request.method ?? "GET",
              issued,
              url.search.slice(1),
              request.headers["content-type"],
              raw,
            );
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw.toString("utf8") || "{}") as Record<string, unknown>;
      } catch {
        body = {};
      }
      this.answers.push({ path: url.pathname, body, ...(refused ? { refused } : {}) });
      return refused
        ? {
            status: 403,
            headers: { "content-type": "application/xml" },
            body: "<Error><Code>SignatureDoesNotMatch</Code></Error>",
          }
        : { status: 200, headers: {}, body: "" };
    }
    const authorization = String(request.headers.authorization ?? "");
    // SigV4's credential scope: <access key>/<date>/<region>/<service>/aws4_request.
    const [, accessKeyId = "unsigned", region = "unknown", service = "unknown"] =
      /Credential=([^/]+)\/[^/]+\/([^/]+)\/([^/]+)\//.exec(authorization) ?? [];
    const target = String(request.headers["x-amz-target"] ?? "");
    const operation = target.split(".").at(-1) || `${request.method} ${request.url}`;
    let body: Record<string, unknown> = {};
    try {
      body = raw.length ? (JSON.parse(raw.toString("utf8")) as Record<string, unknown>) : {};
    } catch {
      body = { raw: raw.toString("utf8").slice(0, 200) };
    }
    const call: RecordedCall = {
      accessKeyId,
      service,
      operation,
      body,
      region,
      ...(this.step === undefined ? {} : { step: this.step }),
    };
    this.calls.push(call);
    const refusal = await this.authorize?.(call);
    if (refusal) {
      call.refused = `${refusal.errorType}: ${refusal.message}`;
      call.status = refusal.status;
      // The JSON protocols' error shape:
      // https://smithy.io/2.0/aws/protocols/aws-json-1_0-protocol.html#operation-error-serialization
      return json(refusal.status, { __type: refusal.errorType, message: refusal.message });
    }
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
