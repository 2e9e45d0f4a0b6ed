/**
 * Opaque page cursors: `base64url(JSON) + "." + tag`. The tag is a keyed hash of the payload, so a
 * cursor that was corrupted or edited is rejected with a 400 instead of silently starting at
 * some other position. A cursor grants nothing (every pet is listable anyway), so the key is
 * a fixed constant: it proves integrity, not secrecy.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { PetStatus } from "../contract/schemas";
import { ValidationError } from "../errors";

const CURSOR_KEY = "petstore-cursor-v1";
const TAG_BYTES = 12;

export interface CursorPosition {
  /** The id of the last pet on the previous page. */
  readonly afterId: number;
  /** The filter the cursor was issued for; `null` when unfiltered. */
  readonly status: PetStatus | null;
}

function tag(payload: string): Buffer {
  return createHmac("sha256", CURSOR_KEY).update(payload).digest().subarray(0, TAG_BYTES);
}

export function encodeCursor(position: CursorPosition): string {
  const payload = Buffer.from(JSON.stringify({ a: position.afterId, s: position.status })).toString("base64url");
  return `${payload}.${tag(payload).toString("base64url")}`;
}

const invalid = () => new ValidationError("cursor", "is not a cursor this API issued; follow the Link header");

/** Decodes a cursor and checks it was issued for the same status filter. */
export function decodeCursor(cursor: string, status: PetStatus | null): CursorPosition {
  const [payload, sentTag, ...rest] = cursor.split(".");
  if (!payload || !sentTag || rest.length > 0) throw invalid();
  const expected = tag(payload);
  const actual = Buffer.from(sentTag, "base64url");
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) throw invalid();
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const { a, s } = (decoded ?? {}) as { a?: unknown; s?: unknown };
  if (typeof a !== "number" || !Number.isSafeInteger(a) || a < 0) throw invalid();
  if ((s ?? null) !== status) {
    throw new ValidationError("cursor", "was issued for a different status filter; keep the filter of the first page");
  }
  return { afterId: a, status };
}
