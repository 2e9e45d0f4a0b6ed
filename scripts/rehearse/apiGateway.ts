/**
 * A local stand-in for the stage's REST API, built from the template: resources, methods, MOCK answers, gateway
 * responses, and Lambda proxy integrations answered by invoking the alias's artifact with a payload 1.0 event. Each
 * event is first checked against Powertools' APIGatewayProxyEventSchema; one that fails is answered 502 and recorded
 * in `eventProblems`, so a wrong stand-in fails the rehearsal.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { APIGatewayProxyEventSchema } from "@aws-lambda-powertools/parser/schemas/api-gateway";
import { toProxyEvent } from "../../local/proxyEvent";
import { type CfnResource, resourcesOf } from "./assembly";
import type { Resolver } from "./resolve";

/** Listens on a free local port; resolves with it. */
export const listen = (server: Server) =>
  new Promise<number>((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });

export interface ProxyInvocation {
  readonly aliasArn: string;
  /** The method's ARN as API Gateway's invoke permission names it: `…/<stage>/GET/pets/*`. */
  readonly methodPath: string;
}

export type InvokeAlias = (
  aliasArn: string,
  event: unknown,
) => Promise<{ result?: unknown; error?: { errorType: string; errorMessage: string } }>;

/**
 * What is wrong with `event` by Powertools' payload 1.0 schema, one line per issue
 * (https://docs.powertools.aws.dev/lambda/typescript/latest/features/parser/#built-in-schemas); extra keys pass.
 */
export function proxyEventProblems(event: unknown): string[] {
  const parsed = APIGatewayProxyEventSchema.safeParse(event);
  if (parsed.success) return [];
  return parsed.error.issues.map((issue) => `${issue.path.join(".") || "(the event)"}: ${issue.message}`);
}

/** A method's key in `methods()` and `called`: `GET /pets/{petId}`. */
const methodKey = (httpMethod: string, path: string) => `${httpMethod} ${path}`;

interface Route {
  readonly path: string;
  readonly segments: readonly string[];
  readonly methods: Map<string, CfnResource>;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[]>;
  body: string;
}

export class LocalRestApi {
  private readonly routes: Route[] = [];
  private readonly gatewayResponses = new Map<string, Record<string, unknown>>();
  private readonly server: Server;
  private port = 0;
  /** Every invocation of a proxy integration: which alias, for which method. */
  readonly invocations: ProxyInvocation[] = [];
  /** Every proxy event that failed proxyEventProblems: `GET /pets/{petId} (/pets/7): <issues>`. */
  readonly eventProblems: string[] = [];
  /** The methods (`methods()` keys) some request reached, whatever the answer. */
  readonly called = new Set<string>();

  constructor(
    private readonly resolver: Resolver,
    readonly stageName: string,
    private readonly invoke: InvokeAlias,
  ) {
    const { template } = resolver.stack;
    const [[apiId] = []] = resourcesOf(template, "AWS::ApiGateway::RestApi");
    const resources = new Map(resourcesOf(template, "AWS::ApiGateway::Resource"));
    const pathOf = (resourceId: unknown): string => {
      const ref = (resourceId as { Ref?: string }).Ref;
      const resource = ref ? resources.get(ref) : undefined;
      if (!resource) return "";
      return `${pathOf(resource.Properties?.ParentId)}/${String(resource.Properties?.PathPart)}`;
    };
    const byPath = new Map<string, Route>();
    for (const [, method] of resourcesOf(template, "AWS::ApiGateway::Method")) {
      if ((method.Properties?.RestApiId as { Ref?: string })?.Ref !== apiId) continue;
      const path = pathOf(method.Properties?.ResourceId) || "/";
      const route = byPath.get(path) ?? { path, segments: path.split("/").filter(Boolean), methods: new Map() };
      route.methods.set(String(method.Properties?.HttpMethod), method);
      byPath.set(path, route);
    }
    this.routes = [...byPath.values()];
    for (const [, response] of resourcesOf(template, "AWS::ApiGateway::GatewayResponse")) {
      this.gatewayResponses.set(String(response.Properties?.ResponseType), response.Properties ?? {});
    }
    this.server = createServer((request, response) => {
      this.handle(request).then(
        (answer) => {
          response.writeHead(answer.status, answer.headers);
          response.end(answer.body);
        },
        (error: unknown) => {
          response.writeHead(500, { "content-type": "text/plain" });
          response.end(`rehearsal API stand-in failed: ${String(error)}`);
        },
      );
    });
  }

  /** Every method of the template's API, MOCK and OPTIONS ones included: `GET /pets`, `OPTIONS /pets`... */
  methods(): string[] {
    return this.routes.flatMap((route) =>
      [...route.methods.keys()].map((httpMethod) => methodKey(httpMethod, route.path)),
    );
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}/${this.stageName}`;
  }

  async start(): Promise<void> {
    this.port = await listen(this.server);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** API Gateway's own answer of a type, as the template's gateway response shapes it. */
  private gatewayResponse(type: string, requestId: string, status?: number): Answer {
    const response = this.gatewayResponses.get(type) ??
      this.gatewayResponses.get(/^5/.test(String(status)) ? "DEFAULT_5XX" : "DEFAULT_4XX") ?? {
        StatusCode: String(status ?? 500),
      };
    const templates = (response.ResponseTemplates ?? {}) as Record<string, string>;
    return {
      status: status ?? Number(response.StatusCode ?? 500),
      headers: this.parameters(response.ResponseParameters, "gatewayresponse.header.", requestId),
      body: (templates["application/json"] ?? '{"message":"error"}').replaceAll("$context.requestId", requestId),
    };
  }

  private parameters(parameters: unknown, prefix: string, requestId: string): Record<string, string> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries((parameters ?? {}) as Record<string, string>)) {
      if (!name.startsWith(prefix)) continue;
      headers[name.slice(prefix.length)] =
        value === "context.requestId" ? requestId : String(value).replace(/^'(.*)'$/s, "$1");
    }
    return headers;
  }

  private match(segments: string[]): { route: Route; pathParameters: Record<string, string> } | undefined {
    const score = (route: Route) => route.segments.filter((segment) => !segment.startsWith("{")).length;
    for (const route of [...this.routes].sort((a, b) => score(b) - score(a) || b.segments.length - a.segments.length)) {
      const pathParameters: Record<string, string> = {};
      const greedy = route.segments.at(-1)?.endsWith("+}");
      if (greedy ? segments.length < route.segments.length : segments.length !== route.segments.length) continue;
      const matches = route.segments.every((segment, index) => {
        if (segment.endsWith("+}")) {
          pathParameters[segment.slice(1, -2)] = segments.slice(index).join("/");
          return true;
        }
        if (segment.startsWith("{")) {
          pathParameters[segment.slice(1, -1)] = decodeURIComponent(segments[index] ?? "");
          return true;
        }
        return segment === segments[index];
      });
      if (matches) return { route, pathParameters };
    }
    return undefined;
  }

  private async handle(request: IncomingMessage): Promise<Answer> {
    const requestId = randomUUID();
    const url = new URL(request.url ?? "/", "http://localhost");
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const [stage, ...segments] = url.pathname.split("/").filter(Boolean);
    if (stage !== this.stageName) return this.gatewayResponse("MISSING_AUTHENTICATION_TOKEN", requestId, 403);
    const found = this.match(segments);
    const method = found?.route.methods.get(request.method ?? "GET") ?? found?.route.methods.get("ANY");
    if (!found || !method) return this.gatewayResponse("MISSING_AUTHENTICATION_TOKEN", requestId);
    this.called.add(methodKey(String(method.Properties?.HttpMethod), found.route.path));
    const integration = (method.Properties?.Integration ?? {}) as Record<string, unknown>;
    if (integration.Type === "MOCK") {
      // With PassthroughBehavior NEVER, a content type without a request template is refused (415).
      const contentType =
        String(request.headers["content-type"] ?? "application/json")
          .split(";")[0]
          ?.trim() ?? "";
      const templates = (integration.RequestTemplates ?? {}) as Record<string, string>;
      if (integration.PassthroughBehavior === "NEVER" && body.length > 0 && !(contentType in templates)) {
        return this.gatewayResponse("UNSUPPORTED_MEDIA_TYPE", requestId);
      }
      const [response] = (integration.IntegrationResponses ?? []) as Record<string, unknown>[];
      const responseTemplates = (response?.ResponseTemplates ?? {}) as Record<string, string>;
      return {
        status: Number(response?.StatusCode ?? 200),
        headers: this.parameters(response?.ResponseParameters, "method.response.header.", requestId),
        body: responseTemplates["application/json"] ?? "",
      };
    }
    if (integration.Type !== "AWS_PROXY") return this.gatewayResponse("API_CONFIGURATION_ERROR", requestId);
    const uri = String(this.resolver.resolve(integration.Uri));
    const aliasArn = /functions\/(.+)\/invocations$/.exec(uri)?.[1] ?? uri;
    const resource = found.route.path;
    const event = toProxyEvent({
      method: request.method ?? "GET",
      path: `/${segments.join("/")}`,
      search: url.searchParams,
      headers: request.headers,
      body,
      resource,
      pathParameters: Object.keys(found.pathParameters).length ? found.pathParameters : null,
      sourceIp: "203.0.113.10",
    });
    const apiId = this.resolver.ref(
      String((method.Properties?.RestApiId as { Ref?: string } | undefined)?.Ref ?? "unknown"),
    );
    // What the deployed stage puts there: its account, API id, stage, and execute-api host
    // (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-mapping-template-reference.html#context-variable-reference).
    const domainName = `${apiId}.execute-api.${this.resolver.stack.region}.amazonaws.com`;
    Object.assign(event.requestContext, {
      accountId: this.resolver.account,
      apiId,
      requestId,
      stage: this.stageName,
      path: `/${this.stageName}${event.path}`,
      domainName,
      domainPrefix: apiId,
    });
    const problems = proxyEventProblems(event);
    if (problems.length > 0) {
      this.eventProblems.push(
        `${methodKey(String(method.Properties?.HttpMethod), resource)} (${event.path}): ${problems.join("; ")}`,
      );
      return this.gatewayResponse("DEFAULT_5XX", requestId, 502);
    }
    const methodPath = `${this.stageName}/${method.Properties?.HttpMethod}${resource.replace(/\{[^}]+\}/g, "*")}`;
    this.invocations.push({ aliasArn, methodPath });
    const outcome = await this.invoke(aliasArn, event);
    const result = outcome.result as
      | {
          statusCode?: number;
          headers?: Record<string, string>;
          multiValueHeaders?: Record<string, string[]>;
          body?: string;
        }
      | undefined;
    if (outcome.error?.errorType === "AccessDeniedException") {
      // API Gateway without permission to invoke the function answers 500 ("Invalid permissions on Lambda function"):
      // https://repost.aws/knowledge-center/api-gateway-rest-api-lambda-integrations
      return this.gatewayResponse("DEFAULT_5XX", requestId, 500);
    }
    if (outcome.error || typeof result?.statusCode !== "number") {
      // A function error or a malformed proxy answer is a 502 from API Gateway.
      return this.gatewayResponse("DEFAULT_5XX", requestId, 502);
    }
    return {
      status: result.statusCode,
      headers: { ...(result.headers ?? {}), ...(result.multiValueHeaders ?? {}) },
      body: result.body ?? "",
    };
  }
}
