/** The client guide (docs/api.md) is written by hand: these checks keep it to the contract's facts. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { errorCodeByStatus } from "../../lib/contract/openapi";
import { errorCodes } from "../../lib/contract/schemas";

const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");

/** Rows of the "Errors" table: `| 400 | `invalid_request` | … |`. */
function documentedErrors(): Record<string, string> {
  const rows = [...guide.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)];
  return Object.fromEntries(rows.map((row) => [row[1] as string, row[2] as string]));
}

describe("docs/api.md", () => {
  it("lists every error code with the status it answers, and no other", () => {
    const expected = Object.fromEntries(Object.entries(errorCodeByStatus).map(([status, code]) => [status, code]));
    expect(documentedErrors()).toEqual(expected);
    expect(Object.values(documentedErrors()).sort()).toEqual([...errorCodes].sort());
  });
});
