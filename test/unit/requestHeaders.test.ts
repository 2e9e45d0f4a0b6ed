import { describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { pickChainHeaders } from "../../lib/http/middleware/requestHeaders";
import { CHAIN_HEADERS } from "../../lib/http/types";
import { InMemoryIdempotencyStore } from "../../lib/idempotency/inMemoryStore";
import { invoke } from "../support/api";
import { fakeDependencies } from "../support/fakes";

describe("the headers the chain reads", () => {
  it("are found whatever case the client sent them in, and no other header is handed on", () => {
    const picked = pickChainHeaders({
      headers: {
        AUTHORIZATION: "Bearer key",
        "Content-Type": "application/json",
        "idempotency-KEY": "k-1",
        Accept: "*/*",
        "X-Forwarded-For": "203.0.113.7",
        "X-Amzn-Trace-Id": "Root=1-5759e988-bd862e3fe1be46a994272793",
      },
      multiValueHeaders: {
        AUTHORIZATION: ["Bearer key"],
        "Content-Type": ["application/json"],
        "idempotency-KEY": ["k-1"],
        Accept: ["*/*"],
      },
    });

    expect(picked.headers).toEqual({
      authorization: "Bearer key",
      "content-type": "application/json",
      "idempotency-key": "k-1",
      "x-amzn-trace-id": "Root=1-5759e988-bd862e3fe1be46a994272793",
    });
    expect(Object.keys(picked.multiValueHeaders).sort()).toEqual(
      ["authorization", "content-type", "idempotency-key"].sort(),
    );
    expect(Object.keys(picked.headers).every((name) => (CHAIN_HEADERS as readonly string[]).includes(name))).toBe(true);
  });

  it("keep the last of a name sent in two cases, as the header normaliser they replace did", () => {
    const picked = pickChainHeaders({
      headers: { "content-type": "text/plain", "Content-Type": "application/json" },
      multiValueHeaders: { "content-type": ["text/plain"], "Content-Type": ["application/json"] },
    });
    expect(picked.headers["content-type"]).toBe("application/json");
    expect(picked.multiValueHeaders["content-type"]).toEqual(["application/json"]);
  });

  it("are empty for an event without headers", () => {
    expect(pickChainHeaders({ headers: null, multiValueHeaders: null })).toEqual({
      headers: {},
      multiValueHeaders: {},
    });
  });

  it("reach the operation from a client that shouts them: a create with upper-case names is made once", async () => {
    const key = generateApiKey("local");
    const createPet = createCreatePet({ ...fakeDependencies(key), idempotency: new InMemoryIdempotencyStore() });
    const headers = {
      AUTHORIZATION: `Bearer ${key}`,
      "CONTENT-TYPE": "application/json",
      "IDEMPOTENCY-KEY": "shouted-key-0001",
    };
    const post = () =>
      invoke(createPet, { method: "POST", path: "/pets", headers, body: '{"name":"Rex","categoryId":1}' });

    const [first, second] = [await post(), await post()];

    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.headers["idempotent-replayed"]).toBe("true");
    expect(second.json).toEqual(first.json);
  });
});
