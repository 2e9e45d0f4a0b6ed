/**
 * Makes everything API Gateway answers by itself look like the API's own errors: the Error body
 * `{"code","message","status"}` with the common headers, for its gateway responses, for unknown
 * routes (a catch-all that answers 404) and for known paths with another method (405 with Allow).
 * The edge firewall (./edgeProtection.ts) answers with the same bodies, taken from here.
 */
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import { Construct } from "constructs";
import type { ErrorBody, ErrorCode } from "../../lib/contract/schemas";
import { edgeErrors } from "../../lib/http/edgeErrors";
import { UNAUTHORIZED_CHALLENGE } from "../../lib/http/middleware/errorResponse";
import { COMMON_HEADERS } from "../../lib/http/middleware/responseEnvelope";
import type { RouteDefinition } from "../../lib/routes";

export interface GatewayError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly message: string;
  readonly headers?: Record<string, string>;
}

const quoted = (value: string) => `'${value}'`;

/** Headers every gateway answer carries, as API Gateway mapping expressions. */
const commonHeaderMappings: Record<string, string> = {
  ...Object.fromEntries(Object.entries(COMMON_HEADERS).map(([name, value]) => [name, quoted(value)])),
  "X-Request-Id": "context.requestId",
};

export function errorTemplate(error: Pick<GatewayError, "status" | "code" | "message">): string {
  const body: ErrorBody = { code: error.code, message: error.message, status: error.status };
  return JSON.stringify(body);
}

const unauthorized: GatewayError = {
  status: 401,
  code: "unauthorized",
  message: "The API key is missing or not valid.",
  headers: { "WWW-Authenticate": UNAUTHORIZED_CHALLENGE },
};
const notFound: GatewayError = { status: 404, code: "not_found", message: "No route matches this path." };
const internal: GatewayError = {
  status: 500,
  code: "internal_error",
  message: "An internal error occurred. Quote the X-Request-Id header when reporting it.",
};
const { payloadTooLarge } = edgeErrors;

/** What the edge firewall answers (./edgeProtection.ts); `forbidden` is also API Gateway's WAF_FILTERED answer. */
export { edgeErrors };

/** What each gateway response type answers. Status codes are set explicitly so `status` always matches. */
export const gatewayErrors: ReadonlyMap<apigateway.ResponseType, GatewayError> = new Map([
  [apigateway.ResponseType.DEFAULT_4XX, { status: 400, code: "invalid_request", message: "The request was rejected." }],
  [apigateway.ResponseType.DEFAULT_5XX, internal],
  [
    apigateway.ResponseType.BAD_REQUEST_PARAMETERS,
    { status: 400, code: "invalid_request", message: "A required request parameter is missing." },
  ],
  [
    apigateway.ResponseType.BAD_REQUEST_BODY,
    { status: 400, code: "invalid_request", message: "The request body is not valid." },
  ],
  // API Gateway's answer to an unknown path is a 403 "missing authentication token"; it is a 404.
  [apigateway.ResponseType.MISSING_AUTHENTICATION_TOKEN, notFound],
  [apigateway.ResponseType.RESOURCE_NOT_FOUND, notFound],
  [apigateway.ResponseType.UNAUTHORIZED, unauthorized],
  [apigateway.ResponseType.ACCESS_DENIED, unauthorized],
  [apigateway.ResponseType.INVALID_API_KEY, unauthorized],
  // No method uses IAM authorization, so API Gateway only reads an Authorization header as a
  // signature when no resource matched: these answers are for unknown routes.
  [apigateway.ResponseType.INVALID_SIGNATURE, notFound],
  [apigateway.ResponseType.EXPIRED_TOKEN, notFound],
  [apigateway.ResponseType.REQUEST_TOO_LARGE, payloadTooLarge],
  // A request the edge firewall blocks without an answer of its own (its managed rule groups): API
  // Gateway answers it with this type, which would otherwise fall back to DEFAULT_4XX's 400. The
  // firewall's own custom answers (rate limits, body size) take precedence over gateway responses.
  // https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html
  [apigateway.ResponseType.WAF_FILTERED, edgeErrors.forbidden],
  [
    apigateway.ResponseType.UNSUPPORTED_MEDIA_TYPE,
    {
      status: 415,
      code: "unsupported_media_type",
      message: "The request body must be JSON: send 'Content-Type: application/json'.",
    },
  ],
  [
    apigateway.ResponseType.THROTTLED,
    {
      status: 429,
      code: "too_many_requests",
      message: "Too many requests; retry later.",
      headers: { "Retry-After": "1" },
    },
  ],
  [
    apigateway.ResponseType.QUOTA_EXCEEDED,
    {
      status: 429,
      code: "too_many_requests",
      message: "The request quota is used up; retry later.",
      headers: { "Retry-After": "60" },
    },
  ],
  [apigateway.ResponseType.INTEGRATION_FAILURE, internal],
  // 504 becomes a retryable 503: the code list has no gateway timeout, and a retry is the right advice.
  [
    apigateway.ResponseType.INTEGRATION_TIMEOUT,
    {
      status: 503,
      code: "service_unavailable",
      message: "The service did not answer in time; retry later.",
      headers: { "Retry-After": "1" },
    },
  ],
  [apigateway.ResponseType.API_CONFIGURATION_ERROR, internal],
  [apigateway.ResponseType.AUTHORIZER_FAILURE, internal],
  [apigateway.ResponseType.AUTHORIZER_CONFIGURATION_ERROR, internal],
]);

/**
 * Media types a body sent to an unknown route or method may have and still get the 404/405. A mock
 * integration takes the status to answer from its request template's output, so the client's body
 * must never reach it: passed through (WHEN_NO_MATCH), a body that is not the JSON the mock expects
 * makes it fail with a gateway 500. With NEVER, a body of a type listed here is replaced by the
 * template, and a body of any other type is refused by API Gateway with 415 UNSUPPORTED_MEDIA_TYPE
 * (answered in the Error shape above) before the mock runs; a request without Content-Type counts as
 * application/json.
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/integration-passthrough-behaviors.html
 */
export const MOCK_BODY_MEDIA_TYPES = [
  "application/json",
  "text/plain",
  "text/html",
  "text/xml",
  "application/xml",
  "application/x-www-form-urlencoded",
  "multipart/form-data",
  "application/octet-stream",
] as const;

export interface GatewayErrorsProps {
  readonly api: apigateway.RestApi;
  readonly routes: readonly RouteDefinition[];
}

export class GatewayErrors extends Construct {
  constructor(scope: Construct, id: string, props: GatewayErrorsProps) {
    super(scope, id);
    const { api, routes } = props;

    for (const [type, error] of gatewayErrors) {
      api.addGatewayResponse(`${type.responseType}`, {
        type,
        statusCode: String(error.status),
        responseHeaders: {
          ...commonHeaderMappings,
          ...Object.fromEntries(Object.entries(error.headers ?? {}).map(([name, value]) => [name, quoted(value)])),
        },
        templates: { "application/json": errorTemplate(error) },
      });
    }

    // Unknown paths, with or without an Authorization header: a mock that answers 404.
    api.root.addMethod("ANY", this.mockError(notFound), this.mockMethodOptions(notFound));
    api.root
      .addProxy({ anyMethod: false })
      .addMethod("ANY", this.mockError(notFound), this.mockMethodOptions(notFound));

    // Known paths with a method they do not have: 405 naming the ones they do.
    const methodsByPath = new Map<string, string[]>();
    for (const route of routes) methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
    for (const [path, methods] of methodsByPath) {
      const allow = methods.join(", ");
      const notAllowed: GatewayError = {
        status: 405,
        code: "method_not_allowed",
        message: `This method is not allowed here; allowed: ${allow}.`,
        headers: { Allow: allow },
      };
      api.root.resourceForPath(path).addMethod("ANY", this.mockError(notAllowed), this.mockMethodOptions(notAllowed));
    }
  }

  private mockError(error: GatewayError): apigateway.MockIntegration {
    return new apigateway.MockIntegration({
      requestTemplates: Object.fromEntries(MOCK_BODY_MEDIA_TYPES.map((type) => [type, '{"statusCode": 200}'])),
      passthroughBehavior: apigateway.PassthroughBehavior.NEVER,
      integrationResponses: [
        {
          statusCode: String(error.status),
          responseParameters: Object.fromEntries(
            Object.entries({ ...commonHeaderMappings, ...mapStatic(error.headers) }).map(([name, value]) => [
              `method.response.header.${name}`,
              value,
            ]),
          ),
          responseTemplates: { "application/json": errorTemplate(error) },
        },
      ],
    });
  }

  private mockMethodOptions(error: GatewayError): apigateway.MethodOptions {
    const headers = Object.keys({ ...commonHeaderMappings, ...error.headers });
    return {
      // No key is checked here: these methods only ever answer an error.
      methodResponses: [
        {
          statusCode: String(error.status),
          responseParameters: Object.fromEntries(headers.map((name) => [`method.response.header.${name}`, true])),
        },
      ],
    };
  }
}

function mapStatic(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name, quoted(value)]));
}
