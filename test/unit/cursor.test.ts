import { describe, expect, it } from "vitest";
import { ValidationError } from "../../lib/errors";
import { decodeCursor, encodeCursor } from "../../lib/pets/cursor";

describe("page cursors", () => {
  it("round-trips the position and the filter it was issued for", () => {
    const cursor = encodeCursor({ afterId: 4242, status: "sold" });

    expect(decodeCursor(cursor, "sold")).toEqual({ afterId: 4242, status: "sold" });
    expect(decodeCursor(encodeCursor({ afterId: 7, status: null }), null)).toEqual({ afterId: 7, status: null });
  });

  it("is URL-safe, so it can be put in a query string unescaped", () => {
    expect(encodeCursor({ afterId: Number.MAX_SAFE_INTEGER, status: "pending" })).toMatch(/^[A-Za-z0-9_.-]+$/);
  });

  it("rejects a cursor used with a different status filter", () => {
    const cursor = encodeCursor({ afterId: 10, status: "sold" });

    expect(() => decodeCursor(cursor, null)).toThrow(ValidationError);
    expect(() => decodeCursor(cursor, "available")).toThrow(/different status filter/);
  });

  it("rejects a cursor whose payload was edited", () => {
    const [, tag] = encodeCursor({ afterId: 10, status: null }).split(".");
    const forgedPayload = Buffer.from(JSON.stringify({ a: 11, s: null })).toString("base64url");

    expect(() => decodeCursor(`${forgedPayload}.${tag}`, null)).toThrow(/not a cursor this API issued/);
  });

  it.each(["", "abc", "a.b", "a.b.c", "....", "%%%.%%%", "eyJhIjoxfQ.AAAAAAAAAAAAAAAA"])(
    "rejects the malformed cursor %j",
    (cursor) => {
      expect(() => decodeCursor(cursor, null)).toThrow(ValidationError);
    },
  );

  it("rejects every single-character change of a valid cursor", () => {
    const cursor = encodeCursor({ afterId: 123456, status: "available" });
    for (let index = 0; index < cursor.length; index++) {
      const replacement = cursor[index] === "A" ? "B" : "A";
      const changed = cursor.slice(0, index) + replacement + cursor.slice(index + 1);
      expect(() => decodeCursor(changed, "available"), `changed at ${index}`).toThrow(ValidationError);
    }
  });
});
