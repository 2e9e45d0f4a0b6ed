import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { describeKeySlip, type KeyScope, scopeAllows, stageOfKey } from "../../auth/apiKeys";
import { type ApiKeyVerifier, isRefusal, type KeyRefusal, type KeyVerdict } from "../../auth/verifier";
import { environmentNames, type StageName } from "../../config";
import { InsufficientScopeError, UnauthorizedError } from "../../errors";
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
 * Why a token the verifier refused was refused, when it can be told without repeating the token or
 * saying anything about another key: it expired, its revocation has a note for its holder, it is a
 * well-formed key of another environment (named by its prefix alone), or a slip in copying it.
 */
function refusalMessage(token: string, refusal: KeyRefusal, ownStage: StageName | undefined): string | undefined {
  if (refusal.refused === "expired")
    return `The API key expired at ${refusal.expiredAt}; use the key that replaced it, or ask for a new one.`;
  if (refusal.refused === "revoked") return refusal.note && `The API key was revoked: ${refusal.note}`;
  const keyStage = stageOfKey(token);
  if (ownStage !== undefined && keyStage !== undefined && keyStage !== ownStage) {
    const theirs = environmentNames[keyStage];
    const ours = environmentNames[ownStage];
    return `This key is for the ${theirs} environment; this is the ${ours} API. Use a key issued for ${ours}.`;
  }
  const slip = describeKeySlip(token);
  return slip ? `The API key is not valid: ${slip}; send the key alone, as 'Authorization: Bearer <key>'.` : undefined;
}

/**
 * The verifier's verdict on the request's token: the caller recorded, a 401 that says why the key
 * was refused, or a 403 when the key may not call this operation (RFC 6750 §3.1, insufficient_scope).
 */
function admit(
  event: ApiEvent,
  token: string,
  verdict: KeyVerdict,
  required: KeyScope,
  stage: StageName | undefined,
): void {
  if (isRefusal(verdict)) throw new UnauthorizedError(true, refusalMessage(token, verdict, stage));
  if (!scopeAllows(verdict.scope, required)) throw new InsufficientScopeError(required, verdict.scope);
  event.principal = verdict;
}

/**
 * Rejects the request with 401 unless it carries a valid API key, and with 403 unless the key's
 * scope covers `required`; records who sent it. It runs before the body is read (apiHandler), so a
 * refused request's body is never parsed. Synchronous when the verifier answers at once (a cached
 * key, a malformed token): only a key lookup makes the chain wait.
 */
export function bearerAuth(
  verifier: ApiKeyVerifier,
  required: KeyScope,
): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
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
      if (!("then" in verdict)) return admit(event, token, verdict, required, verifier.stage);
      return verdict.then((settled) => admit(event, token, settled, required, verifier.stage));
    },
  };
}
