import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { describeKeySlip, type Principal, stageOfKey } from "../../auth/apiKeys";
import type { ApiKeyVerifier } from "../../auth/verifier";
import { environmentNames, type StageName } from "../../config";
import { UnauthorizedError } from "../../errors";
import type { ApiEvent, ApiResult } from "../types";

/** `Bearer <credentials>`, the scheme case-insensitive (RFC 7235). */
const BEARER = /^bearer(?:\s+(.*))?$/is;
/** What every key starts with, whatever its stage: a header holding only this lacks the scheme. */
const KEY_START = /^petstore_/i;

/** Why a header that is not `Bearer <token>` was refused, in words that never repeat it. */
function withoutBearerMessage(header: string): string {
  return KEY_START.test(header)
    ? "The Authorization header has the key without 'Bearer ' before it: send 'Authorization: Bearer <key>'."
    : "The Authorization header must use the Bearer scheme: send 'Authorization: Bearer <key>'.";
}

/**
 * Why a token the verifier refused was refused, when it can be told without repeating the token:
 * a well-formed key of another environment (named by its prefix alone), or a slip in copying it.
 */
function refusalMessage(token: string, ownStage: StageName | undefined): string | undefined {
  const keyStage = stageOfKey(token);
  if (ownStage !== undefined && keyStage !== undefined && keyStage !== ownStage) {
    const theirs = environmentNames[keyStage];
    const ours = environmentNames[ownStage];
    return `This key is for the ${theirs} environment; this is the ${ours} API. Use a key issued for ${ours}.`;
  }
  const slip = describeKeySlip(token);
  return slip ? `The API key is not valid: ${slip}; send the key alone, as 'Authorization: Bearer <key>'.` : undefined;
}

/** The verifier's verdict on the request's token: the caller recorded, or a 401 that says why. */
function admit(event: ApiEvent, token: string, principal: Principal | undefined, stage: StageName | undefined): void {
  if (!principal) throw new UnauthorizedError(true, refusalMessage(token, stage));
  event.principal = principal;
}

/**
 * Rejects the request with 401 unless it carries a valid API key; records who sent it. Synchronous
 * when the verifier answers at once (a cached key, a malformed token): only a key lookup makes
 * the chain wait.
 */
export function bearerAuth(verifier: ApiKeyVerifier): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const event = request.event;
      const header = event.headers?.authorization?.trim();
      if (!header) throw new UnauthorizedError(false);
      const match = BEARER.exec(header);
      if (!match) throw new UnauthorizedError(false, withoutBearerMessage(header));
      const token = match[1]?.trim() ?? "";
      if (!token) throw new UnauthorizedError(false);
      // Anything sent as a bearer token is judged by the verifier, which accepts only key-shaped ones.
      const verdict = verifier.verify(token, event.deadline);
      if (verdict === undefined || !("then" in verdict)) return admit(event, token, verdict, verifier.stage);
      return verdict.then((principal) => admit(event, token, principal, verifier.stage));
    },
  };
}
