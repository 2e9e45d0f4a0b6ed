/** The client guide (docs/api.md) is written by hand: these checks keep it to the contract's facts. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_ROTATION_OVERLAP_SECONDS, keyScopes, scopeAllows } from "../../lib/auth/apiKeys";
import { keyExpiryExample } from "../../lib/contract/examples";
import { errorCodes, errorCodesByStatus } from "../../lib/contract/schemas";
import { InsufficientScopeError } from "../../lib/errors";
import { toErrorResult } from "../../lib/http/middleware/errorResponse";
import { routeList } from "../../lib/routes";

const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");

/** Rows of the "Errors" table: `| 400 | `invalid_request` | … |`, the codes of each status in order. */
function documentedErrors(): Record<string, string[]> {
  const documented: Record<string, string[]> = {};
  for (const [, status, code] of guide.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)) {
    documented[status as string] = [...(documented[status as string] ?? []), code as string];
  }
  return documented;
}

/** The `## Authentication` section. */
const authentication = guide.slice(
  guide.indexOf("\n## Authentication"),
  guide.indexOf("\n## ", guide.indexOf("\n## Authentication") + 1),
);

describe("docs/api.md", () => {
  it("lists every error code with the status it answers, and no other", () => {
    const expected = Object.fromEntries(Object.entries(errorCodesByStatus).map(([status, codes]) => [status, codes]));
    expect(documentedErrors()).toEqual(expected);
    expect(Object.values(documentedErrors()).flat().sort()).toEqual([...errorCodes].sort());
  });

  it("gives each scope the operations the route table lets it call", () => {
    const rows = [...authentication.matchAll(/^\| `([a-z]+)` \| (.+) \|$/gm)].map(([, scope, operations]) => [
      scope,
      [...(operations as string).matchAll(/`(\w+)`/g)].map((match) => match[1]),
    ]);

    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(
        keyScopes.map((scope) => [
          scope,
          routeList.filter((route) => scopeAllows(scope, route.scope)).map((route) => route.operationId),
        ]),
      ),
    );
  });

  it("shows the 403 insufficient_scope a read key gets on createPet as the API answers it", () => {
    const answer = toErrorResult(new InsufficientScopeError("write", "read"));

    expect(authentication).toContain(`WWW-Authenticate: ${answer.headers?.["WWW-Authenticate"]}`);
    expect(authentication).toContain(JSON.stringify(answer.body).replaceAll('":', '": ').replaceAll(',"', ', "'));
  });

  it("quotes the expired key's example date and the default rotation overlap", () => {
    expect(authentication).toContain(`The API key expired at ${keyExpiryExample};`);
    expect(authentication).toContain(`(${DEFAULT_ROTATION_OVERLAP_SECONDS / 86_400} days unless`);
  });
});
