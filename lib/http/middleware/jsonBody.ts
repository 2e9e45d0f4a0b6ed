import type { MiddlewareObj } from "@middy/core";
import httpJsonBodyParser from "@middy/http-json-body-parser";
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
 * Enforces size and media type, then parses with @middy/http-json-body-parser and turns its
 * answers into our typed errors (malformed JSON is a 400 here, not its 415/422).
 */
export function jsonBody(options: { maxBytes: number }): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  // The media type was checked above with our own error; its typings predate this option.
  const parser = httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<typeof httpJsonBodyParser>[0]);
  return {
    before: async (request) => {
      const { body, isBase64Encoded } = request.event;
      const raw = typeof body === "string" ? body : "";
      const bytes = isBase64Encoded ? Buffer.from(raw, "base64").length : Buffer.byteLength(raw, "utf8");
      if (bytes > options.maxBytes) throw new PayloadTooLargeError(options.maxBytes);
      const unsupported = mediaTypeError(request.event.headers?.["content-type"]);
      if (unsupported) throw unsupported;
      if (bytes === 0) throw new ValidationError("body", "is required: send a JSON object");
      try {
        // biome-ignore lint/suspicious/noExplicitAny: middy's parser is typed for its own event shape
        await parser.before?.(request as any);
      } catch {
        throw new ValidationError("body", "is not valid JSON");
      }
    },
  };
}
