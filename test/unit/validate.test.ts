import { describe, expect, it } from "vitest";
import { listLimitSchema, MAX_SAFE_ID, newPetSchema } from "../../lib/contract/schemas";
import { assertMatches, parseIntegerParameter } from "../../lib/contract/validate";
import { ValidationError } from "../../lib/errors";

function problemWith(value: unknown): { target: string; problem: string } | undefined {
  try {
    assertMatches(newPetSchema, value, "body");
    return undefined;
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return { target: error.target, problem: error.problem };
  }
}

describe("NewPet validation", () => {
  it("accepts a minimal pet and a pet with every field", () => {
    expect(problemWith({ name: "Rex", categoryId: 1 })).toBeUndefined();
    expect(problemWith({ name: "Rex", categoryId: MAX_SAFE_ID, status: "sold" })).toBeUndefined();
  });

  it.each([
    [null, "body"],
    [[], "body"],
    ["Rex", "body"],
    [42, "body"],
  ])("rejects %j as the body because it is not an object", (value, target) => {
    expect(problemWith(value)?.target).toBe(target);
  });

  it("names the missing required field", () => {
    expect(problemWith({ categoryId: 1 })).toEqual({ target: "name", problem: "is required" });
    expect(problemWith({ name: "Rex" })).toEqual({ target: "categoryId", problem: "is required" });
  });

  it.each(["id", "owner", "__proto__", "constructor"])("rejects the unknown field %s by name", (field) => {
    const body = JSON.parse(`{"name":"Rex","categoryId":1,"${field}":1}`);
    expect(problemWith(body)).toEqual({ target: field, problem: "is not an accepted field" });
  });

  it.each([
    ["", "must be 1 to 100 characters long"],
    ["x".repeat(101), "must be 1 to 100 characters long"],
    ["   \t\n", "must not be only white space"],
    [7, "must be a string of valid Unicode text"],
    ["\ud800", "must be a string of valid Unicode text"],
  ])("rejects the name %j", (name, problem) => {
    expect(problemWith({ name, categoryId: 1 })).toEqual({ target: "name", problem });
  });

  it("counts characters as code points, so 100 emoji are a valid name", () => {
    expect(problemWith({ name: "🐶".repeat(100), categoryId: 1 })).toBeUndefined();
    expect(problemWith({ name: "🐶".repeat(101), categoryId: 1 })?.target).toBe("name");
  });

  it.each([0, -1, -0, 1.5, MAX_SAFE_ID + 1, Number.POSITIVE_INFINITY, "1", null, true])(
    "rejects the categoryId %j",
    (categoryId) => {
      expect(problemWith({ name: "Rex", categoryId })).toEqual({
        target: "categoryId",
        problem: `must be an integer from 1 to ${MAX_SAFE_ID}`,
      });
    },
  );

  it.each(["Available", "", "lost", 1])("rejects the status %j", (status) => {
    expect(problemWith({ name: "Rex", categoryId: 1, status })).toEqual({
      target: "status",
      problem: "must be one of: available, pending, sold",
    });
  });
});

describe("integer parameters", () => {
  it.each([
    ["1", 1],
    ["20", 20],
    ["100", 100],
  ])("parses limit=%s", (raw, expected) => {
    expect(parseIntegerParameter(listLimitSchema, raw, "limit")).toBe(expected);
  });

  it.each(["0", "101", "abc", "1.5", "", " 5", "05", "+5", "-1", "1e2", "0x10", "5 "])("rejects limit=%j", (raw) => {
    expect(() => parseIntegerParameter(listLimitSchema, raw, "limit")).toThrow(
      new ValidationError("limit", "must be an integer from 1 to 100"),
    );
  });
});
