import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { describeKeySlip } from "../../auth/apiKeys";
import type { ApiKeyVerifier } from "../../auth/verifier";
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

/** Rejects the request with 401 unless it carries a valid API key; records who sent it. */
export function bearerAuth(verifier: ApiKeyVerifier): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: async (request) => {
      const header = request.event.headers?.authorization?.trim();
      if (!header) throw new UnauthorizedError(false);
      const match = BEARER.exec(header);
      if (!match) throw new UnauthorizedError(false, withoutBearerMessage(header));
      const token = match[1]?.trim() ?? "";
      if (!token) throw new UnauthorizedError(false);
      // Anything sent as a bearer token is judged by the verifier, which accepts only key-shaped ones.
      const principal = await verifier.verify(token, request.event.deadline);
      if (!principal) {
        const slip = describeKeySlip(token);
        throw new UnauthorizedError(
          true,
          slip ? `The API key is not valid: ${slip}; send the key alone, as 'Authorization: Bearer <key>'.` : undefined,
        );
      }
      request.event.principal = principal;
    },
  };
}
