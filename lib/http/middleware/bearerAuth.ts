import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ApiKeyVerifier } from "../../auth/verifier";
import { UnauthorizedError } from "../../errors";
import type { ApiEvent, ApiResult } from "../types";

/** `Bearer <token>`, scheme case-insensitive (RFC 7235), token per RFC 6750's b64token. */
const BEARER = /^bearer +(\S*) *$/i;

/** Rejects the request with 401 unless it carries a valid API key; records who sent it. */
export function bearerAuth(verifier: ApiKeyVerifier): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: async (request) => {
      const header = request.event.headers?.authorization;
      const match = header === undefined ? null : BEARER.exec(header);
      const token = match?.[1] ?? "";
      if (!token) throw new UnauthorizedError(false);
      const principal = await verifier.verify(token);
      if (!principal) throw new UnauthorizedError(true);
      request.event.principal = principal;
    },
  };
}
