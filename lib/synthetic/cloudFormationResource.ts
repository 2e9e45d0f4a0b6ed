/**
 * A Lambda-backed CloudFormation custom resource without a provider framework: the handler does the
 * work and answers CloudFormation itself, by a PUT of the outcome to the pre-signed ResponseURL of
 * the event (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).
 * Every path answers, failures included; otherwise the stack would wait for the resource's timeout.
 */
import type { CloudFormationCustomResourceEvent } from "aws-lambda";
import { describeError, type Logger } from "../observability/logger";
import type { ResourceOutcome } from "./keyProvisioner";

export interface CloudFormationResponse {
  readonly Status: "SUCCESS" | "FAILED";
  readonly Reason?: string;
  readonly PhysicalResourceId: string;
  readonly StackId: string;
  readonly RequestId: string;
  readonly LogicalResourceId: string;
  readonly NoEcho: boolean;
  readonly Data?: Readonly<Record<string, string>>;
}

export function cloudFormationResourceHandler(
  handle: (event: CloudFormationCustomResourceEvent) => Promise<ResourceOutcome>,
  options: { readonly log: Logger; readonly fetch?: typeof fetch },
): (event: CloudFormationCustomResourceEvent) => Promise<CloudFormationResponse> {
  const fetchImpl = options.fetch ?? fetch;
  return async (event) => {
    // Not the event itself: its ResponseURL is a credential for this one answer.
    const request = { requestType: event.RequestType, logicalResourceId: event.LogicalResourceId };
    const common = {
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
      NoEcho: false,
    };
    let response: CloudFormationResponse;
    try {
      const outcome = await handle(event);
      response = {
        ...common,
        Status: "SUCCESS",
        PhysicalResourceId: outcome.physicalResourceId,
        ...(outcome.data ? { Data: outcome.data } : {}),
      };
      options.log.info("custom resource done", { ...request, physicalResourceId: outcome.physicalResourceId });
    } catch (error) {
      options.log.error("custom resource failed", { ...request, error: describeError(error) });
      response = {
        ...common,
        Status: "FAILED",
        // The whole answer must stay under 4,096 bytes.
        Reason: `${(error as Error).name}: ${(error as Error).message}`.slice(0, 1000),
        // A failed create still needs an id; the delete that follows sees it and has nothing to undo.
        PhysicalResourceId:
          "PhysicalResourceId" in event ? event.PhysicalResourceId : `${event.LogicalResourceId}-not-created`,
      };
    }
    const answer = await fetchImpl(event.ResponseURL, {
      method: "PUT",
      // As AWS's cfn-response module does: the URL is pre-signed without a content type, and a
      // request that sends one (application/json included) is refused with 403.
      headers: { "Content-Type": "" },
      body: JSON.stringify(response),
      signal: AbortSignal.timeout(30_000),
    });
    if (!answer.ok) throw new Error(`CloudFormation did not take the response: HTTP ${answer.status}`);
    return response;
  };
}
