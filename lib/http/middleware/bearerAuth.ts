import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ApiKeyVerifier } from "../../auth/verifier";
import { UnauthorizedError } from "../../errors";
import type { ApiEvent, ApiResult } from "../types";

/** `Bearer <credentials>`, the scheme case-insensitive (RFC 7235). */
const BEARER = /^bearer(?:\s+(.*))?$/is;

/** Rejects the request with 401 unless it carries a valid API key; records who sent it. */
export function bearerAuth(verifier: ApiKeyVerifier): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: async (request) => {
      const header = request.event.headers?.authorization;
      const match = header === undefined ? null : BEARER.exec(header.trim());
      const token = match?.[1]?.trim() ?? "";
      if (!token) throw new UnauthorizedError(false);
      // Anything sent as a bearer token is judged by the verifier, which accepts only key-shaped ones.
      const principal = await verifier.verify(token, request.event.deadline);
      if (!principal) throw new UnauthorizedError(true);
      request.event.principal = principal;
    },
  };
}
