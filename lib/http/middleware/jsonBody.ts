import type { MiddlewareObj } from "@middy/core";
import httpJsonBodyParser from "@middy/http-json-body-parser";
import type { Context } from "aws-lambda";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../../errors";
import type { ApiEvent, ApiResult } from "../types";
import { utf8TextOf } from "../utf8";

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
 * The body as text, refusing one whose bytes are not UTF-8 (RFC 8259 §8.1: JSON between systems is
 * UTF-8). Only a body handed over as bytes can be checked. API Gateway (REST, Lambda proxy) passes
 * a body whose media type is not in the API's binaryMediaTypes (this API sets none) as a "UTF8-encoded
 * string" (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-payload-encodings-workflow.html),
 * and in doing so replaces bytes that are not UTF-8 with U+FFFD (EF BF BD), as observed in
 * https://qiita.com/ma2shita/items/ea96fbb73b7095413d3f (AWS documents no other outcome): by then the function cannot tell those from a
 * U+FFFD the client really sent, which is valid UTF-8 and is accepted. A body that arrives as bytes
 * (base64, `isBase64Encoded`: what the gateway does for binary media types, and what the local
 * server does for a body that is not UTF-8) is decoded strictly.
 */
function utf8Text(bytes: Buffer, contentType: string | undefined): string {
  const text = utf8TextOf(bytes);
  if (text !== undefined) return text;
  throw new UnsupportedMediaTypeError(
    contentType,
    "The request body is not valid UTF-8: send JSON in UTF-8 with 'Content-Type: application/json'.",
  );
}

/**
 * Enforces size, media type and encoding, then parses with @middy/http-json-body-parser and turns its
 * answers into our typed errors (malformed JSON is a 400 here, not its 415/422).
 */
export function jsonBody(options: { maxBytes: number }): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  // The media type was checked above with our own error; its typings predate this option.
  const parser = httpJsonBodyParser({ disableContentTypeCheck: true } as Parameters<typeof httpJsonBodyParser>[0]);
  return {
    before: async (request) => {
      const { body, isBase64Encoded } = request.event;
      const raw = typeof body === "string" ? body : "";
      const decoded = isBase64Encoded ? Buffer.from(raw, "base64") : undefined;
      const bytes = decoded ? decoded.length : Buffer.byteLength(raw, "utf8");
      if (bytes > options.maxBytes) throw new PayloadTooLargeError(options.maxBytes);
      const contentType = request.event.headers?.["content-type"];
      const unsupported = mediaTypeError(contentType);
      if (unsupported) throw unsupported;
      // From here on the body is text, whichever way it came.
      request.event.body = decoded ? utf8Text(decoded, contentType) : raw;
      request.event.isBase64Encoded = false;
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
