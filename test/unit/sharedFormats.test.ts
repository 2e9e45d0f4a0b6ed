/**
 * What two versions of the functions must agree on, because during a production canary they serve
 * the same clients and the same table at once (docs/delivery.md, "Why old and new versions can run
 * side by side"): a cursor one version issues, the other must accept; a create retried against the
 * other version must hash to the same request; both must find key and idempotency records where the
 * other put them. The expected values are written out (from the documented formats, computed with
 * sha256sum and openssl), not taken from the code. If one of these tests fails, the change breaks
 * clients during a rollout: read both formats first, and write the new one only a release later.
 */

import { describe, expect, it } from "vitest";
import { hashApiKey } from "../../lib/auth/apiKeys";
import { itemKeys, petTable, TTL_ATTRIBUTE } from "../../lib/db/table";
import { canonicalJson, requestHash } from "../../lib/idempotency/requestHash";
import { SHARED_PETS } from "../../lib/pets/collection";
import { decodeCursor, encodeCursor } from "../../lib/pets/cursor";

/** `base64url({"a":42,"s":null})` and the first 12 bytes of its HMAC-SHA256 under "petstore-cursor-v1". */
const CURSOR_AFTER_42 = "eyJhIjo0MiwicyI6bnVsbH0.HI7CL6nsDRz7XWXa";

describe("formats old and new versions share during a rollout", () => {
  it("issues page cursors in the one format every version reads", () => {
    expect(encodeCursor({ afterId: 42, status: null })).toBe(CURSOR_AFTER_42);
  });

  it("accepts a cursor an earlier version issued", () => {
    expect(decodeCursor(CURSOR_AFTER_42, null)).toEqual({ afterId: 42, status: null });
  });

  it("hashes a create's body the same way, so a retry served by the other version replays instead of answering 422", () => {
    const body = { status: "available", name: "Rex", categoryId: 1 };

    expect(canonicalJson(body)).toBe('{"categoryId":1,"name":"Rex","status":"available"}');
    // sha256sum of the canonical text above.
    expect(requestHash(body)).toBe("567e7c87ab64318d095979eea9857212ff7285866c6cad04ba9565307e05b134");
  });

  it("looks keys up by the SHA-256 of the key, as every version stored them", () => {
    expect(hashApiKey(`petstore_prod_${"A".repeat(43)}`)).toBe(
      "5c97513d5eadc431937dcdd59b35a4d808a412c99fa30319df889ee4e6517e80",
    );
  });

  it("keeps items where every version looks for them: the table's keys and each item's key values", () => {
    expect(petTable.partitionKey).toEqual({ name: "pk", type: "S" });
    expect(petTable.sortKey).toEqual({ name: "sk", type: "S" });
    expect(TTL_ATTRIBUTE).toBe("expiresAt");
    expect(itemKeys.pet(7, SHARED_PETS)).toEqual({ pk: "PET", sk: "0000000000000007" });
    expect(itemKeys.apiKey("ab12")).toEqual({ pk: "APIKEY", sk: "ab12" });
    expect(itemKeys.petIdCounter).toEqual({ pk: "COUNTER", sk: "pet" });
    expect(itemKeys.idempotency("key_abc", "retry-1")).toEqual({ pk: "IDEMPOTENCY#key_abc", sk: "retry-1" });
  });
});
