/**
 * The warm bench's events: events/restApiRegional.json (sources in events/README.md) and the other operations'
 * derived from it. Each is JSON text parsed per invocation, as Lambda's runtime parses each payload.
 */
import { readFileSync } from "node:fs";
import type { APIGatewayProxyEvent } from "aws-lambda";
import type { NewPet } from "../../lib/contract/schemas";
import type { OperationId } from "../../lib/routes";

/** Stands for the bench's API key in the recorded event's Authorization header. */
const KEY_PLACEHOLDER = "{{API_KEY}}";

const recordedText = readFileSync(new URL("./events/restApiRegional.json", import.meta.url), "utf8");

const NEW_PET_BODY = JSON.stringify({ name: "Rex", categoryId: 1, status: "available" } satisfies NewPet);

/** The pet getPet asks for: one of the hundred the bench's repositories start with. */
const PET_ID = "7";

const recorded = () => JSON.parse(recordedText) as APIGatewayProxyEvent;

/** Both header maps with `name` set: API Gateway hands every header over in each. */
function withHeader(event: APIGatewayProxyEvent, name: string, value: string): void {
  event.headers[name] = value;
  (event.multiValueHeaders as Record<string, string[]>)[name] = [value];
}

/** The same request on another resource: its own path, resource and resource id, no query. */
function onResource(
  event: APIGatewayProxyEvent,
  resource: string,
  path: string,
  resourceId: string,
): APIGatewayProxyEvent {
  const context = event.requestContext;
  return {
    ...event,
    resource,
    path,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    requestContext: { ...context, resourceId, resourcePath: resource, path: `/${context.stage}${path}` },
  };
}

const derivations: Record<OperationId, () => APIGatewayProxyEvent> = {
  listPets: recorded,
  getPet: () => ({
    ...onResource(recorded(), "/pets/{petId}", `/pets/${PET_ID}`, "q4w8ze"),
    pathParameters: { petId: PET_ID },
  }),
  createPet: () => {
    const event = onResource(recorded(), "/pets", "/pets", recorded().requestContext.resourceId);
    const post = { ...event, httpMethod: "POST", body: NEW_PET_BODY };
    post.requestContext = { ...event.requestContext, httpMethod: "POST" };
    post.headers = { ...event.headers };
    post.multiValueHeaders = { ...event.multiValueHeaders };
    withHeader(post, "Content-Type", "application/json");
    withHeader(post, "Content-Length", String(Buffer.byteLength(NEW_PET_BODY)));
    return post;
  },
};

/** The operation's event as JSON text, its Authorization header carrying `apiKey`. */
export function proxyEventText(operationId: OperationId, apiKey: string): string {
  return JSON.stringify(derivations[operationId]()).replaceAll(KEY_PLACEHOLDER, apiKey);
}
