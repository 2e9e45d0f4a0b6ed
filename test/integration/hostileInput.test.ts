/**
 * Property-based hostile input: fast-check generates bodies, query strings, path ids and headers,
 * and an oracle written from the contract (not from the implementation) says what each must get.
 * Handlers run in-process for volume, then a smaller run goes over raw HTTP to the local server,
 * where bytes, header parsing and the gateway's own answers matter.
 *
 * Runs per property: FC_RUNS (default kept small for `npm test`), e.g. `FC_RUNS=2000 npx vitest run
 * test/integration/hostileInput.test.ts`. A failure prints the seed and the shrunk input.
 */
import { isUtf8 } from "node:buffer";
import { connect } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler as createCreatePet } from "../../functions/createPet";
import { createHandler as createGetPet } from "../../functions/getPet";
import { createHandler as createListPets } from "../../functions/listPets";
import { generateApiKey } from "../../lib/auth/apiKeys";
import { DynamoApiKeyStore } from "../../lib/auth/dynamoApiKeyStore";
import { errorCodes, MAX_BODY_BYTES, type Pet, type PetStatus, petStatuses } from "../../lib/contract/schemas";
import type { ProxyHandler } from "../../lib/http/apiHandler";
import { DynamoIdempotencyStore } from "../../lib/idempotency/dynamoStore";
import { createTelemetry } from "../../lib/observability/telemetry";
import { routes } from "../../lib/routes";
import { runtimeDependencies, runtimeTable } from "../../lib/runtime";
import { LOCAL_BODY_READ_LIMIT_BYTES, type LocalApi, startLocalApi } from "../../local/server";
import { invoke, issueTestKey, type TestRequest, type TestResponse } from "../support/api";
import { documentClient, tableName } from "../support/dynamo";

const RUNS = Math.max(1, Number(process.env.FC_RUNS) || 100);
const HTTP_RUNS = Math.max(1, Math.ceil(RUNS / 3));
const MAX_ID = Number.MAX_SAFE_INTEGER;
/** The local gateway stops reading bodies above this and answers 413 before any handler runs. */
const GATEWAY_MAX_BODY_BYTES = LOCAL_BODY_READ_LIMIT_BYTES;

// ---------------------------------------------------------------------------------------------
// The oracle: what the contract (seed + API-DECISIONS + README) says a request must get.
// ---------------------------------------------------------------------------------------------

type Verdict =
  | { readonly kind: "created"; readonly pet: Omit<Pet, "id"> }
  | { readonly kind: "error"; readonly status: number; readonly targets?: readonly string[] };

const NEW_PET_FIELDS = ["name", "categoryId", "status"];

function isValidName(value: unknown): value is string {
  if (typeof value !== "string" || !value.isWellFormed()) return false;
  const codePoints = [...value].length;
  return codePoints >= 1 && codePoints <= 100 && /\S/u.test(value);
}

function isValidId(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && !Object.is(value, -0) && value >= 1 && value <= MAX_ID;
}

function isStatus(value: unknown): value is PetStatus {
  return typeof value === "string" && (petStatuses as readonly string[]).includes(value);
}

/** The verdict on a JSON body that got past authentication, size and media type. */
function judgeNewPetText(text: string): Verdict {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "error", status: 400, targets: ["body"] };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { kind: "error", status: 400, targets: ["body"] };
  }
  const fields = value as Record<string, unknown>;
  const targets = Object.keys(fields).filter((field) => !NEW_PET_FIELDS.includes(field));
  if (!isValidName(fields.name)) targets.push("name");
  if (!isValidId(fields.categoryId)) targets.push("categoryId");
  if (Object.hasOwn(fields, "status") && !isStatus(fields.status)) targets.push("status");
  if (targets.length > 0) return { kind: "error", status: 400, targets };
  return {
    kind: "created",
    pet: {
      name: fields.name as string,
      categoryId: fields.categoryId as number,
      status: (fields.status as PetStatus | undefined) ?? "available",
    },
  };
}

/** `application/json`, any case, optionally with parameters; a charset, when given, must be UTF-8. */
function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type = "", ...parameters] = contentType.split(";");
  if (type.trim().toLowerCase() !== "application/json") return false;
  return parameters.every((parameter) => {
    const [name = "", value = ""] = parameter.split("=");
    if (name.trim().toLowerCase() !== "charset") return true;
    return ["utf-8", "utf8"].includes(value.trim().replace(/^"|"$/g, "").toLowerCase());
  });
}

/**
 * POST /pets in order: authentication, then size, then media type, then encoding (bytes that are
 * not UTF-8 are a 415), then the body itself.
 */
function judgeCreate(
  authorized: boolean,
  body: string,
  contentType: string | undefined,
  { validUtf8 = true, bytes = Buffer.byteLength(body, "utf8") } = {},
): Verdict {
  if (!authorized) return { kind: "error", status: 401 };
  if (bytes > MAX_BODY_BYTES) return { kind: "error", status: 413 };
  if (!isJsonMediaType(contentType)) return { kind: "error", status: 415 };
  if (!validUtf8) return { kind: "error", status: 415 };
  return judgeNewPetText(body);
}

/** A decimal integer in canonical form (no sign, no leading zero, no exponent). */
function canonicalInteger(raw: string, max: number): number | undefined {
  if (!/^[1-9][0-9]*$/.test(raw)) return undefined;
  const value = Number(raw);
  return value <= max ? value : undefined;
}

interface IssuedCursor {
  readonly cursor: string;
  readonly status: PetStatus | null;
  readonly afterId: number;
}

type ListVerdict =
  | { readonly kind: "error"; readonly status: 400; readonly targets: readonly string[] }
  | { readonly kind: "page"; readonly limit: number; readonly status: PetStatus | null; readonly afterId: number };

function judgeList(query: string, issued: readonly IssuedCursor[]): ListVerdict {
  // Decoded the way a URL parser decodes it, as the gateway does.
  const search = new URL(`/pets?${query}`, "http://localhost").searchParams;
  const targets: string[] = [];
  const single = (name: string) => {
    const values = search.getAll(name);
    if (values.length > 1) targets.push(name);
    return values[0];
  };
  const rawLimit = single("limit");
  const rawStatus = single("status");
  const rawCursor = single("cursor");
  const limit = rawLimit === undefined ? 20 : canonicalInteger(rawLimit, 100);
  if (limit === undefined) targets.push("limit");
  if (rawStatus !== undefined && !isStatus(rawStatus)) targets.push("status");
  const status = isStatus(rawStatus) ? rawStatus : null;
  const cursor = rawCursor === undefined ? undefined : issued.find((candidate) => candidate.cursor === rawCursor);
  if (rawCursor !== undefined && (cursor === undefined || cursor.status !== status)) targets.push("cursor");
  if (targets.length > 0 || limit === undefined) return { kind: "error", status: 400, targets };
  return { kind: "page", limit, status, afterId: cursor?.afterId ?? 0 };
}

// ---------------------------------------------------------------------------------------------
// What every answer must look like, whatever the input.
// ---------------------------------------------------------------------------------------------

function expectWellFormedAnswer(response: TestResponse): void {
  expect(response.status, "never a 5xx").toBeLessThan(500);
  expect(response.headers["content-type"]).toMatch(/^application\/json(;|$)/);
  if (response.status >= 200 && response.status < 300) return;
  const body = response.json as Record<string, unknown>;
  expect(Object.keys(body ?? {}).sort()).toEqual(["code", "message", "status"]);
  expect(errorCodes).toContain(body.code);
  expect(typeof body.message).toBe("string");
  expect(body.status).toBe(response.status);
}

function expectErrorNaming(response: TestResponse, targets: readonly string[]): void {
  const message = (response.json as { message: string }).message;
  expect(
    targets.some((target) => message.startsWith(`${target}:`)),
    `${JSON.stringify(message)} names one of ${JSON.stringify(targets)}`,
  ).toBe(true);
}

// ---------------------------------------------------------------------------------------------
// Generators.
// ---------------------------------------------------------------------------------------------

const HOSTILE_FRAGMENTS = [
  "\u0000",
  "🐶",
  "🐕‍🦺",
  "👩🏽‍💻",
  "\ud800",
  "\udfff",
  "\u200b",
  "\u00a0",
  " ",
  "\t",
  "\n",
  "a",
  "Z",
  "\u0085",
  "\ufeff",
  "\u2028",
  "e\u0301",
  "\u202e",
  '"',
  "\\",
  "%00",
  "<script>",
];

const hostileString = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 100 }),
  fc.string({ unit: "binary", maxLength: 120 }),
  fc.array(fc.constantFrom(...HOSTILE_FRAGMENTS), { maxLength: 110 }).map((parts) => parts.join("")),
  fc.constantFrom(0, 1, 99, 100, 101, 1000, 17_000).map((length) => "n".repeat(length)),
  fc.constantFrom(1, 50, 100, 101).map((length) => "🐶".repeat(length)),
);

const validName = fc
  .oneof(
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 100 }),
    fc.array(fc.constantFrom(...HOSTILE_FRAGMENTS), { minLength: 1, maxLength: 100 }).map((parts) => parts.join("")),
  )
  .filter(isValidName);

const validCategoryId = fc.oneof(
  fc.integer({ min: 1, max: 1000 }),
  fc.maxSafeNat().filter((n) => n >= 1),
  fc.constantFrom(1, MAX_ID, MAX_ID - 1, 2 ** 31, 2 ** 32),
);

/** The same integer in the spellings JSON allows: 7, 7.0, 7e0, 0.7e1, 70E-1. */
const integerText = (value: number) =>
  fc.constantFrom(String(value), `${value}.0`, `${value}e0`, `${value}E+0`, `${value}.000e0`);

const hostileNumberText = fc.oneof(
  fc.constantFrom(
    "0",
    "-0",
    "-1",
    "1.5",
    "0.1e1",
    "1e309",
    "-1e309",
    "1e-400",
    "9007199254740992",
    "9007199254740993",
    "12345678901234567890",
    "1.0000000000000001",
    "1e2",
    "1E2",
    "0x10",
    "01",
    "+1",
    ".5",
    "1.",
    "NaN",
    "Infinity",
  ),
  fc.double().map((value) => JSON.stringify(value)),
  fc.integer().map(String),
);

function deepArrays(depth: number): string {
  return `${"[".repeat(depth)}${"]".repeat(depth)}`;
}

function deepObjects(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

const nestingDepth = fc.constantFrom(1, 10, 100, 1000, 5000, 8000);

/** Any JSON value as text, hostile ones included. */
const hostileValueText = fc.oneof(
  hostileString.map((value) => JSON.stringify(value)),
  hostileNumberText,
  fc.constantFrom("null", "true", "false", "[]", "{}", '"1"', `"${MAX_ID}"`, '"available"'),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  nestingDepth.map(deepArrays),
  nestingDepth.map(deepObjects),
);

const HOSTILE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "id",
  "",
  "name ",
  "Name",
  "NAME",
  "category_id",
  "status\u0000",
  "🐶",
];

/** A key as JSON text; sometimes escaped, so that `"\u005f_proto__"` must be read as `__proto__`. */
const keyText = (key: string) =>
  fc
    .boolean()
    .map((escaped) =>
      escaped
        ? `"${[...key].map((char) => `\\u${(char.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`).join("")}"`
        : JSON.stringify(key),
    );

const whitespace = fc.constantFrom("", " ", "\n", "\t", "  \r\n ");

type Member = readonly [keyText: string, valueText: string];

function objectText(members: readonly Member[], space: string): string {
  return `{${space}${members.map(([key, value]) => `${key}${space}:${space}${value}`).join(`,${space}`)}${space}}`;
}

/** A valid NewPet's members; status sometimes omitted. */
const validMembers = fc
  .record({
    name: validName,
    categoryId: validCategoryId,
    status: fc.option(fc.constantFrom(...petStatuses), { nil: undefined }),
  })
  .chain(({ name, categoryId, status }) =>
    fc
      .tuple(keyText("name"), keyText("categoryId"), keyText("status"), integerText(categoryId))
      .map(([nameKey, categoryKey, statusKey, categoryText]): Member[] => [
        [nameKey, JSON.stringify(name)],
        [categoryKey, categoryText],
        ...(status === undefined ? [] : [[statusKey, JSON.stringify(status)] as const]),
      ]),
  );

/** Valid members, then changed the way a hostile client would. */
const mutatedMembers = fc
  .tuple(validMembers, fc.array(fc.nat(), { minLength: 1, maxLength: 3 }))
  .chain(([members, picks]) =>
    fc
      .tuple(
        ...picks.map((pick) =>
          fc.oneof(
            // Replace one field's value.
            hostileValueText.map(
              (value) => (list: Member[]) =>
                list.map((member, index) => (index === pick % list.length ? ([member[0], value] as const) : member)),
            ),
            // Add a field the schema does not have.
            fc
              .tuple(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 10 })), hostileValueText)
              .chain(([key, value]) => keyText(key).map((text) => [text, value] as const))
              .map((member) => (list: Member[]) => [...list, member]),
            // Drop a field.
            fc.constant((list: Member[]) => list.filter((_, index) => index !== pick % list.length)),
            // Repeat a field with another value: JSON.parse keeps the last, as most clients do.
            hostileValueText.map((value) => (list: Member[]) => {
              const member = list[pick % list.length];
              return member ? [...list, [member[0], value] as const] : list;
            }),
          ),
        ),
      )
      .map((changes) => changes.reduce((list, change) => change(list), members)),
  );

/** Whole bodies: valid pets, mutated pets, other JSON, not JSON at all, near the size limit. */
const bodyText = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(validMembers, whitespace).map(([members, space]) => objectText(members, space)) },
  { weight: 4, arbitrary: fc.tuple(mutatedMembers, whitespace).map(([members, space]) => objectText(members, space)) },
  { weight: 1, arbitrary: hostileValueText },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.constantFrom("", " ", "{", "}", "nul", "\u0000", "{}", '{"name":"x","categoryId":1', "\ufeff{}"),
      fc.string({ unit: "binary", maxLength: 40 }),
      validMembers.map((members) => `${objectText(members, "")}garbage`),
      validMembers.map((members) => `\ufeff${objectText(members, "")}`),
    ),
  },
  {
    weight: 1,
    // Padded with spaces to just under, at, or just over the 16 KiB limit.
    arbitrary: fc
      .tuple(validMembers, fc.constantFrom(-1, 0, 1))
      .map(([members, offset]) => objectText(members, "").padEnd(MAX_BODY_BYTES + offset, " ")),
  },
);

const JSON_CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "Application/JSON",
  'application/json; charset="utf-8"',
  "application/json ; charset=utf8",
  "application/json;",
  "application/json; boundary=x",
];
const OTHER_CONTENT_TYPES = [
  "",
  "text/plain",
  "text/json",
  "application/jsonx",
  "application/json-patch+json",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  "application/json; charset=",
  "json",
  "*/*",
];

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...JSON_CONTENT_TYPES) },
  { weight: 3, arbitrary: fc.constantFrom(...OTHER_CONTENT_TYPES) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

type AuthorizationCase = (keys: TestKeys) => { readonly header: string | undefined; readonly authorized: boolean };

interface TestKeys {
  readonly valid: string;
  readonly revoked: string;
  readonly unknown: string;
  readonly otherStage: string;
}

/** Authorization header values and whether the contract says they authenticate. */
const authorizationCase: fc.Arbitrary<AuthorizationCase> = fc.oneof(
  fc.constantFrom("Bearer ", "bearer ", "BEARER ", "BeArEr ", "Bearer  ", "Bearer   ", " Bearer ").map(
    (prefix): AuthorizationCase =>
      (keys) => ({ header: `${prefix}${keys.valid} `, authorized: true }),
  ),
  fc.constantFrom<AuthorizationCase>(
    () => ({ header: undefined, authorized: false }),
    () => ({ header: "", authorized: false }),
    () => ({ header: "Bearer", authorized: false }),
    () => ({ header: "Bearer ", authorized: false }),
    () => ({ header: "Bearer  x", authorized: false }),
    () => ({ header: "Bearer\t", authorized: false }),
    () => ({ header: `Bearer ${"a".repeat(10_000)}`, authorized: false }),
    (keys) => ({ header: keys.valid, authorized: false }),
    (keys) => ({ header: `Bearer${keys.valid}`, authorized: false }),
    (keys) => ({ header: `Bearer=${keys.valid}`, authorized: false }),
    (keys) => ({ header: `Basic ${keys.valid}`, authorized: false }),
    (keys) => ({ header: `Basic ${Buffer.from(`${keys.valid}:`).toString("base64")}`, authorized: false }),
    (keys) => ({ header: `Token ${keys.valid}`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.valid}x`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.valid.slice(0, -1)}`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.valid.toUpperCase()}`, authorized: false }),
    (keys) => ({ header: `Bearer "${keys.valid}"`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.valid} ${keys.valid}`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.valid},`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.revoked}`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.unknown}`, authorized: false }),
    (keys) => ({ header: `Bearer ${keys.otherStage}`, authorized: false }),
  ),
  fc.string({ unit: "binary", maxLength: 200 }).map(
    (token): AuthorizationCase =>
      () => ({ header: `Bearer ${token}`, authorized: false }),
  ),
  fc.string({ maxLength: 60 }).map(
    (header): AuthorizationCase =>
      () => ({ header, authorized: false }),
  ),
);

/** Path ids, raw as they would sit in the URL; `{existing: n}` stands for the id of a created pet. */
const PATH_IDS = [
  "0",
  "-1",
  "1e3",
  "1.0",
  "01",
  "+1",
  " 1",
  "1 ",
  "0x1",
  "9007199254740991",
  "9007199254740992",
  "99999999999999999999",
  "%00",
  "%31",
  "%2F",
  "%",
  "%zz",
  "🐶",
  "%F0%9F%90%B6",
  "%ED%A0%80",
  "NaN",
  "Infinity",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "1".repeat(17),
  "9".repeat(5000),
];
const pathId = fc.oneof(
  fc.constantFrom(...PATH_IDS).map((raw) => ({ raw })),
  fc.nat({ max: 10_000 }).map((existing) => ({ existing })),
  fc.maxSafeNat().map((value) => ({ raw: String(value) })),
  fc.string({ unit: "binary", maxLength: 30 }).map((text) => ({ raw: encodeURIComponent(text) })),
);

/** Query strings built from parameters that matter, duplicates and percent-encoding junk. */
const QUERY_VALUES = [
  "",
  "0",
  "1",
  "20",
  "100",
  "101",
  "-1",
  "1.5",
  "01",
  "1e1",
  "0x10",
  "abc",
  "%35",
  "5%00",
  "%",
  "%zz",
  "%E0%A4%A",
  "+5",
  "5+",
  "%EF%BC%95",
  "available",
  "pending",
  "sold",
  "Sold",
  "SOLD",
  "sold%20",
  "sold%00",
  "%73old",
  "garbage",
  "a.b",
  "x".repeat(600),
];
const queryPair = fc.tuple(
  fc.constantFrom("limit", "status", "cursor", "LIMIT", "Limit", "limit[]", "", "foo", "limit%20", "%6Cimit"),
  fc.oneof(
    fc.constantFrom(...QUERY_VALUES),
    fc.integer({ min: -5, max: 120 }).map(String),
    fc.constantFrom<"issued">("issued"),
    fc.string({ maxLength: 20 }).map(encodeURIComponent),
  ),
  fc.nat(),
);
type QuerySpec = string | readonly (readonly [name: string, value: string, cursorPick: number])[];
const queryText: fc.Arbitrary<QuerySpec> = fc.oneof(
  fc.array(queryPair, { maxLength: 5 }),
  fc.constantFrom("&&&", "=", "==", "limit", "limit&limit", "?", "a=1&&b=2", "%", "&limit=5&"),
);

// ---------------------------------------------------------------------------------------------
// The run.
// ---------------------------------------------------------------------------------------------

/** Every pet whose 201 was received, by id; the table must end up holding exactly these. */
const acknowledged = new Map<number, Pet>();
const issuedCursors: IssuedCursor[] = [];
let keys: TestKeys;
let createPet: ProxyHandler;
let getPet: ProxyHandler;
let listPets: ProxyHandler;
/** Log lines of the in-process handlers; an error line means a request failed internally. */
const errorLines: string[] = [];

function recordCreated(response: TestResponse, expected: Omit<Pet, "id">): void {
  expect(response.status).toBe(201);
  const pet = response.json as Pet;
  expect(pet).toEqual({ ...expected, id: pet.id });
  expect(isValidId(pet.id)).toBe(true);
  expect(acknowledged.has(pet.id), `id ${pet.id} handed out twice`).toBe(false);
  expect(response.headers.location).toBe(`/v1/pets/${pet.id}`);
  acknowledged.set(pet.id, pet);
}

function expectedPage(limit: number, status: PetStatus | null, afterId: number) {
  const matches = [...acknowledged.values()]
    .filter((pet) => pet.id > afterId && (status === null || pet.status === status))
    .sort((a, b) => a.id - b.id);
  return { pets: matches.slice(0, limit), more: matches.length > limit };
}

/** `issued` values become cursors the API really handed out, so that valid cursors get tested too. */
function queryString(spec: QuerySpec): string {
  if (typeof spec === "string") return spec;
  return spec.map(([name, value, n]) => `${name}=${value === "issued" ? pickCursor(n) : value}`).join("&");
}

function pickCursor(n: number): string {
  return issuedCursors[n % Math.max(1, issuedCursors.length)]?.cursor ?? "none";
}

function resolveId(spec: { raw: string } | { existing: number }): string {
  if ("raw" in spec) return spec.raw;
  const ids = [...acknowledged.keys()];
  return String(ids[spec.existing % Math.max(1, ids.length)] ?? 1);
}

function decodeOrRaw(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

async function storedPets(): Promise<Pet[]> {
  const pets: Pet[] = [];
  let path: string | undefined = "/pets?limit=100";
  while (path) {
    const response = await invoke(listPets, { path, headers: { Authorization: `Bearer ${keys.valid}` } });
    expect(response.status).toBe(200);
    pets.push(...(response.json as Pet[]));
    path = /^<\/v1([^>]+)>; rel="next"$/.exec(response.headers.link ?? "")?.[1];
  }
  return pets;
}

async function expectStoreMatchesAcknowledged(): Promise<void> {
  const stored = await storedPets();
  expect(stored.length, "stored pets = 201s received").toBe(acknowledged.size);
  expect(stored).toEqual([...acknowledged.values()].sort((a, b) => a.id - b.id));
}

beforeAll(async () => {
  const store = new DynamoApiKeyStore(documentClient(), tableName());
  const revoked = await issueTestKey("to revoke");
  await store.revoke(revoked.keyId, new Date());
  keys = {
    valid: (await issueTestKey("hostile")).key,
    revoked: revoked.key,
    unknown: generateApiKey("local"),
    otherStage: generateApiKey("prod"),
  };
  const telemetry = createTelemetry({
    service: "petstore",
    stage: "local",
    level: "ERROR",
    format: "json",
    write: (text) => {
      for (const line of text.split("\n")) if (line.includes('"level":"ERROR"')) errorLines.push(line);
    },
  });
  // The runtime dependencies (whatever they grow to hold), with logs captured instead of printed.
  const deps = {
    ...runtimeDependencies,
    idempotency: new DynamoIdempotencyStore(runtimeTable.client, runtimeTable.tableName),
    telemetry,
  };
  createPet = createCreatePet(deps);
  getPet = createGetPet(deps);
  listPets = createListPets(deps);

  // Some pets of every status, and cursors into them, for the list properties to work on.
  for (let index = 0; index < 12; index++) {
    const pet = { name: `seed ${index}`, categoryId: index + 1, status: petStatuses[index % 3] as PetStatus };
    const response = await invoke(createPet, {
      method: "POST",
      path: "/pets",
      headers: { Authorization: `Bearer ${keys.valid}`, "Content-Type": "application/json" },
      body: JSON.stringify(pet),
    });
    recordCreated(response, pet);
  }
  for (const status of [null, ...petStatuses]) {
    for (const limit of [1, 2]) {
      const query = new URLSearchParams({ limit: String(limit), ...(status ? { status } : {}) });
      const response = await invoke(listPets, {
        path: `/pets?${query}`,
        headers: { Authorization: `Bearer ${keys.valid}` },
      });
      const cursor = new URLSearchParams(/\?([^>]+)>/.exec(response.headers.link ?? "")?.[1]).get("cursor");
      const last = (response.json as Pet[]).at(-1);
      if (cursor && last) issuedCursors.push({ cursor, status, afterId: last.id });
    }
  }
});

describe("hostile input to the handlers (in-process)", () => {
  it("answers every generated create as the contract says, and stores exactly the pets it acknowledged", async () => {
    await fc.assert(
      fc.asyncProperty(bodyText, contentType, async (body, type) => {
        const headers: Record<string, string> = { Authorization: `Bearer ${keys.valid}` };
        if (type !== undefined) headers["Content-Type"] = type;

        const response = await invoke(createPet, { method: "POST", path: "/pets", headers, body });

        expectWellFormedAnswer(response);
        const verdict = judgeCreate(true, body, type);
        if (verdict.kind === "created") {
          recordCreated(response, verdict.pet);
          const id = (response.json as Pet).id;
          const fetched = await invoke(getPet, {
            path: `/pets/${id}`,
            resource: "/pets/{petId}",
            pathParameters: { petId: String(id) },
            headers,
          });
          expect(fetched.json).toEqual(response.json);
        } else {
          expect(response.status).toBe(verdict.status);
          if (verdict.targets) expectErrorNaming(response, verdict.targets);
        }
      }),
      { numRuns: RUNS * 3 },
    );

    await expectStoreMatchesAcknowledged();
    expect(errorLines).toEqual([]);
  });

  it("answers 401 with a challenge to every Authorization value that is not a live key of this stage", async () => {
    await fc.assert(
      fc.asyncProperty(
        authorizationCase,
        fc.constantFrom("list", "get", "create"),
        async (authorization, operation) => {
          const { header, authorized } = authorization(keys);
          const headers: Record<string, string> = { "Content-Type": "application/json" };
          if (header !== undefined) headers.Authorization = header;
          const body = JSON.stringify({ name: "Auth probe", categoryId: 1 });
          const requests: Record<string, [ProxyHandler, TestRequest]> = {
            list: [listPets, { path: "/pets?limit=1", headers }],
            get: [getPet, { path: "/pets/1", resource: "/pets/{petId}", pathParameters: { petId: "1" }, headers }],
            create: [createPet, { method: "POST", path: "/pets", headers, body }],
          };
          const [handler, request] = requests[operation] as [ProxyHandler, TestRequest];

          const response = await invoke(handler, request);

          expectWellFormedAnswer(response);
          if (authorized) {
            expect(response.status).toBeLessThan(300);
            if (operation === "create")
              recordCreated(response, { name: "Auth probe", categoryId: 1, status: "available" });
          } else {
            expect(response.status).toBe(401);
            expect(response.headers["www-authenticate"]).toMatch(/^Bearer realm="pets"/);
          }
        },
      ),
      { numRuns: RUNS * 2 },
    );

    await expectStoreMatchesAcknowledged();
  });

  it("answers every generated pet id with the pet, 404 or a 400 naming petId", async () => {
    await fc.assert(
      fc.asyncProperty(pathId, async (spec) => {
        const raw = resolveId(spec);
        const petId = decodeOrRaw(raw);

        const response = await invoke(getPet, {
          path: "/pets/x",
          resource: "/pets/{petId}",
          pathParameters: { petId },
          headers: { Authorization: `Bearer ${keys.valid}` },
        });

        expectWellFormedAnswer(response);
        const id = canonicalInteger(petId, MAX_ID);
        if (id === undefined) {
          expect(response.status).toBe(400);
          expectErrorNaming(response, ["petId"]);
        } else if (acknowledged.has(id)) {
          expect(response.status).toBe(200);
          expect(response.json).toEqual(acknowledged.get(id));
        } else {
          expect(response.status).toBe(404);
        }
        expect(response.headers.sunset).toBeDefined();
      }),
      { numRuns: RUNS * 2 },
    );
  });

  it("answers every generated list query with the exact page the store holds, or a 400 naming the parameter", async () => {
    await fc.assert(
      fc.asyncProperty(queryText, async (spec) => {
        const query = queryString(spec);

        const response = await invoke(listPets, {
          path: `/pets?${query}`,
          headers: { Authorization: `Bearer ${keys.valid}` },
        });

        expectWellFormedAnswer(response);
        const verdict = judgeList(query, issuedCursors);
        if (verdict.kind === "error") {
          expect(response.status).toBe(400);
          expectErrorNaming(response, verdict.targets);
          return;
        }
        expect(response.status).toBe(200);
        const expected = expectedPage(verdict.limit, verdict.status, verdict.afterId);
        expect(response.json).toEqual(expected.pets);
        expect(response.headers.link === undefined, "a next link exactly when more pets match").toBe(!expected.more);
      }),
      { numRuns: RUNS * 2 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Over HTTP: raw bytes on a socket, so that nothing a client library tidies up is lost.
// ---------------------------------------------------------------------------------------------

interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Sends one request as raw bytes on a fresh connection and parses the answer. */
async function rawRequest(port: number, request: Buffer): Promise<RawAnswer> {
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("data", (chunk) => chunks.push(chunk));
    // The server may answer (413, 400) and close before it has read all we send: a write error
    // then is expected, and the answer already received is what counts.
    socket.on("error", () => undefined);
    socket.on("close", () => resolve());
    // No half-close: Node's server drops a connection whose client ended before the answer.
    // "Connection: close" makes the server close it once it has answered.
    socket.setTimeout(20_000, () => socket.destroy());
    socket.write(request);
  });
  const reply = Buffer.concat(chunks).toString("latin1");
  const headEnd = reply.indexOf("\r\n\r\n");
  expect(headEnd, `an HTTP answer, got ${JSON.stringify(reply.slice(0, 200))}`).toBeGreaterThan(0);
  const [statusLine = "", ...headerLines] = reply.slice(0, headEnd).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"]);
  const bodyBytes = Buffer.from(reply.slice(headEnd + 4), "latin1");
  expect(bodyBytes.length).toBe(length);
  return { status: Number(statusLine.split(" ")[1]), headers, body: bodyBytes.toString("utf8") };
}

/** Control characters other than tab cannot sit in a header value (RFC 9110 §5.5). */
function hasControlCharacter(value: string): boolean {
  return [...value].some((char) => {
    const code = char.charCodeAt(0);
    return (code < 0x20 && code !== 0x09) || code === 0x7f;
  });
}

function asResponse(answer: RawAnswer): TestResponse {
  let json: unknown;
  try {
    json = answer.body ? JSON.parse(answer.body) : undefined;
  } catch {
    json = `not JSON: ${answer.body.slice(0, 100)}`;
  }
  return { status: answer.status, headers: answer.headers, json };
}

function httpRequest(
  method: string,
  target: string,
  headers: readonly (readonly [string, string])[],
  body?: Buffer,
): Buffer {
  const head = [
    `${method} ${target} HTTP/1.1`,
    "Host: 127.0.0.1",
    "Connection: close",
    ...headers.map(([name, value]) => `${name}: ${value}`),
    ...(body ? [`Content-Length: ${body.length}`] : []),
    "",
    "",
  ].join("\r\n");
  return Buffer.concat([Buffer.from(head, "utf8"), body ?? Buffer.alloc(0)]);
}

/** Bodies as bytes: the generated texts, and bytes that are not UTF-8 at all. */
const bodyBytes = fc.oneof(
  { weight: 5, arbitrary: bodyText.map((text) => Buffer.from(text, "utf8")) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        validName,
        fc.uint8Array({ minLength: 1, maxLength: 8 }).map((bytes) => Buffer.from(bytes)),
      )
      .map(([name, junk]) =>
        Buffer.concat([Buffer.from(`{"name":"${name.replace(/["\\]/g, "")}`), junk, Buffer.from('","categoryId":1}')]),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(0, 1, 64).map((kib) => Buffer.alloc(GATEWAY_MAX_BODY_BYTES + kib * 1024, 0x20)),
  },
);

/** Header values as bytes can carry them: Latin-1 and UTF-8 bytes, control characters, huge values. */
const rawHeaderValue = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom("\u0000", "\u0001", "\u007f", "a\u000bb", " ", "x".repeat(20_000)) },
);

/** Creates over HTTP carry a live key most of the time, so that most reach the handler's checks. */
const mostlyAuthorized = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constant<AuthorizationCase>((keys) => ({ header: `Bearer ${keys.valid}`, authorized: true })),
  },
  { weight: 1, arbitrary: authorizationCase },
);

/** Percent-encodes what cannot stand in a request line, leaving the rest (junk escapes included) raw. */
function urlSafe(target: string): string {
  return [...target].map((char) => (/[\x21-\x7e]/.test(char) ? char : encodeURIComponent(char))).join("");
}

describe("hostile input over HTTP to the local server", () => {
  let api: LocalApi;

  beforeAll(async () => {
    // The same handlers as above, so that their logs are captured too.
    const handlers = new Map<string, ProxyHandler>([
      [routes.createPet.operationId, createPet],
      [routes.getPet.operationId, getPet],
      [routes.listPets.operationId, listPets],
    ]);
    api = await startLocalApi({
      host: "127.0.0.1",
      port: 0,
      loadHandler: async (route) => handlers.get(route.operationId) as ProxyHandler,
    });
  });
  afterAll(() => api.close());

  it("answers every generated create, whatever its bytes, as the contract says", async () => {
    await fc.assert(
      fc.asyncProperty(bodyBytes, contentType, mostlyAuthorized, async (body, type, authorization) => {
        const { header, authorized } = authorization(keys);
        const headers: [string, string][] = [];
        if (header !== undefined) headers.push(["Authorization", header]);
        if (type !== undefined) headers.push(["Content-Type", type]);

        const answer = asResponse(await rawRequest(api.port, httpRequest("POST", "/v1/pets", headers, body)));

        expectWellFormedAnswer(answer);
        const text = body.toString("utf8");
        // Control characters end or corrupt the header line: the request is not the one generated.
        if (header !== undefined && hasControlCharacter(header)) return;
        if ((header?.length ?? 0) > 16_000) {
          expect(answer.status).toBe(400);
          return;
        }
        if (body.length > GATEWAY_MAX_BODY_BYTES) {
          expect(answer.status).toBe(413);
          return;
        }
        const verdict = judgeCreate(authorized, text, type?.trim(), { validUtf8: isUtf8(body), bytes: body.length });
        if (verdict.kind === "created") {
          recordCreated(answer, verdict.pet);
        } else {
          expect(answer.status).toBe(verdict.status);
          if (verdict.targets) expectErrorNaming(answer, verdict.targets);
        }
      }),
      { numRuns: HTTP_RUNS * 2 },
    );

    await expectStoreMatchesAcknowledged();
  });

  it("never answers a 5xx or a body that is not the Error shape, whatever the request line and headers", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          { weight: 8, arbitrary: fc.constantFrom("GET", "POST") },
          { weight: 4, arbitrary: fc.constantFrom("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE") },
          { weight: 1, arbitrary: fc.constantFrom("FOO", "get", "G ET") },
        ),
        fc.oneof(
          { weight: 4, arbitrary: pathId.map((spec) => `/v1/pets/${urlSafe(resolveId(spec))}`) },
          { weight: 4, arbitrary: queryText.map((spec) => `/v1/pets?${urlSafe(queryString(spec))}`) },
          {
            weight: 2,
            arbitrary: fc.constantFrom(
              "/v1/pets/",
              "/v1//pets",
              "/v1/pets/1/",
              "//v1/pets",
              "/v1/PETS",
              "*",
              "/v1/pets?%",
              "/v1/%",
              "/v1/pets/..%2F..%2Fetc%2Fpasswd",
              "/v1/pets/../pets",
              "http://127.0.0.1/v1/pets",
            ),
          },
          {
            weight: 1,
            arbitrary: fc
              .string({ unit: "binary", maxLength: 30 })
              .map((text) => `/v1/pets/${text.replace(/[\s?#]/g, "")}`),
          },
        ),
        fc.array(fc.tuple(fc.constantFrom("Authorization", "Content-Type", "X-Odd", "Accept"), rawHeaderValue), {
          maxLength: 3,
        }),
        fc.boolean(),
        async (method, target, extraHeaders, withKey) => {
          const headers: [string, string][] = withKey ? [["Authorization", `Bearer ${keys.valid}`]] : [];
          headers.push(...extraHeaders);

          const answer = asResponse(await rawRequest(api.port, httpRequest(method, target, headers)));

          expectWellFormedAnswer(answer);
          // Whatever was asked, anything answered as a pet is a pet that was acknowledged, unchanged.
          if (answer.status === 200) {
            const pets = (Array.isArray(answer.json) ? answer.json : [answer.json]) as Pet[];
            for (const pet of pets) expect(pet).toEqual(acknowledged.get(pet.id));
          }
        },
      ),
      { numRuns: HTTP_RUNS * 2 },
    );

    await expectStoreMatchesAcknowledged();
    expect(errorLines).toEqual([]);
  });
});
