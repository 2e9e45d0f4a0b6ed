import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../../errors";
import type { ApiEvent, ApiResult } from "../types";

/** application/json, optionally with parameters; a charset, if given, must be UTF-8 (RFC 8259). */
const JSON_MEDIA_TYPE = /^application\/json\s*(;|$)/i;
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

/** Undefined when `contentType` declares JSON we can read; otherwise the error that says why not. */
function mediaTypeError(contentType: string | undefined): UnsupportedMediaTypeError | undefined {
  if (!contentType || !JSON_MEDIA_TYPE.test(contentType.trim())) return new UnsupportedMediaTypeError(contentType);
  const charset = CHARSET.exec(contentType)?.[1];
  if (charset === undefined || /^utf-?8$/i.test(charset)) return undefined;
  // The client did send JSON: what it needs to hear is the encoding (the charset is not echoed).
  return new UnsupportedMediaTypeError(
    contentType,
    "The charset must be UTF-8: send the body in UTF-8 with 'Content-Type: application/json'.",
  );
}

/**
 * Enforces size and media type, then parses the body (base64-decoded first when API Gateway
 * encoded it). Malformed JSON is a 400 here. Parsed in place rather than by
 * @middy/http-json-body-parser, which does the same JSON.parse but as an async step of its own and
 * with its own 415/422 answers to translate.
 */
export function jsonBody(options: { maxBytes: number }): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const { body, isBase64Encoded } = request.event;
      const raw = typeof body === "string" ? body : "";
      const bytes = isBase64Encoded ? Buffer.from(raw, "base64").length : Buffer.byteLength(raw, "utf8");
      if (bytes > options.maxBytes) throw new PayloadTooLargeError(options.maxBytes);
      const unsupported = mediaTypeError(request.event.headers?.["content-type"]);
      if (unsupported) throw unsupported;
      if (bytes === 0) throw new ValidationError("body", "is required: send a JSON object");
      try {
        request.event.body = JSON.parse(isBase64Encoded ? Buffer.from(raw, "base64").toString() : raw);
      } catch {
        throw new ValidationError("body", "is not valid JSON");
      }
    },
  };
}
