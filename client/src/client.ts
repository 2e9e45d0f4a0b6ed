import createClient from "openapi-fetch";
import {
  PetStoreAbortError,
  PetStoreApiError,
  PetStoreInsufficientScopeError,
  PetStoreNetworkError,
  requiredScopeOf,
  UNEXPECTED_RESPONSE,
} from "./errors.js";
import { linkTarget } from "./links.js";
import { backoffDelayMs, parseRetryAfter, type RetryOptions, retryPolicy, sleep } from "./retry.js";
import type { components, operations, paths } from "./schema.js";
import { userAgent } from "./version.js";

export type Pet = components["schemas"]["Pet"];
export type NewPet = components["schemas"]["NewPet"];
export type PetStatus = components["schemas"]["PetStatus"];
export type ListPetsQuery = NonNullable<operations["listPets"]["parameters"]["query"]>;

/** What the answer that ended a successful call said besides its body. */
export interface ResponseInfo {
  /** The HTTP status (200, or 201 for a create). */
  readonly status: number;
  /** The answer's `X-Request-Id`: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Requests sent for this call, retries included. */
  readonly attempts: number;
}

/** What the answer of a create said besides the pet. */
export interface CreateResponseInfo extends ResponseInfo {
  /** The answer's `Location`, as the API sends it: `/v1/pets/{id}`. */
  readonly location: string | undefined;
  /** True when the API replayed an earlier create with the same key (`Idempotent-Replayed: true`): no new pet was made. */
  readonly replayed: boolean;
  /** The `Idempotency-Key` sent on every attempt: yours, or the UUID the client drew. */
  readonly idempotencyKey: string;
}

/** What `pets.createWithResponse()` answers. */
export interface CreatedPet {
  readonly pet: Pet;
  readonly response: CreateResponseInfo;
}

/** One page of `pets.list()`. */
export interface PetPage {
  readonly items: Pet[];
  /** The query of the next page (from the answer's `Link: rel="next"`), or null on the last page. */
  readonly next: ListPetsQuery | null;
  readonly response: ResponseInfo;
}

export interface CallOptions {
  /** Stops the call: an attempt in flight is aborted and a wait between attempts ends at once. */
  readonly signal?: AbortSignal | undefined;
}

export interface CreateOptions extends CallOptions {
  /**
   * Sent as `Idempotency-Key` (1 to 255 characters) on every attempt of this create, so that
   * retries never add a second pet. A random UUID when not given; every error of the create
   * carries the key used (`error.idempotencyKey`), to create again with it later.
   */
  readonly idempotencyKey?: string | undefined;
}

/** What the API said about a deprecated operation the client called. */
export interface DeprecationNotice {
  /** The OpenAPI operationId, e.g. `getPet`. */
  readonly operation: string;
  /** The `Deprecation` header (RFC 9745), e.g. `@1795392000`. */
  readonly deprecation: string | null;
  /** The `Sunset` header (RFC 8594): when the operation stops working. */
  readonly sunset: string | null;
  /** The `Link: rel="successor-version"` target: what to use instead. */
  readonly successor: string | null;
  /** All of the above in one sentence. */
  readonly message: string;
}

export interface PetStoreClientOptions {
  /** The API's base URL, `/v1` included, e.g. `http://127.0.0.1:3000/v1`. */
  readonly baseUrl: string;
  /** The API key, sent as `Authorization: Bearer <key>`. */
  readonly apiKey: string;
  /** The `fetch` to use; by default the runtime's own. */
  readonly fetch?: ((request: Request) => Promise<Response>) | undefined;
  readonly retry?: RetryOptions | undefined;
  /**
   * How long one attempt may take, answer body included, before it is abandoned and counts as a
   * network error (so it is retried). Default 30 s. The whole call is bounded by `signal`.
   */
  readonly attemptTimeoutMs?: number | undefined;
  /**
   * Called the first time this client gets an answer carrying `Deprecation` or `Sunset` for an
   * operation (once per client and operation). By default a `DeprecationWarning`
   * (process.emitWarning on Node, console.warn elsewhere), once per process and operation.
   */
  readonly onDeprecation?: ((notice: DeprecationNotice) => void) | undefined;
}

export interface PetStoreClient {
  readonly pets: {
    /** Adds a pet, safely retried (same `Idempotency-Key` on every attempt). */
    create(pet: NewPet, options?: CreateOptions): Promise<Pet>;
    /** `create()`, answering the pet and what the answer said: `X-Request-Id`, `Location`, whether it was a replay, the key. */
    createWithResponse(pet: NewPet, options?: CreateOptions): Promise<CreatedPet>;
    /** One page of pets, oldest first, the query of the next page, and what the answer said. */
    list(query?: ListPetsQuery, options?: CallOptions): Promise<PetPage>;
    /** Every pet matching `query`, oldest first, fetching page after page (following `Link: rel="next"`). */
    listAll(query?: ListPetsQuery, options?: CallOptions): AsyncIterableIterator<Pet>;
    /**
     * One pet by id.
     * @deprecated The API removes `GET /pets/{petId}` at its sunset (5 December 2030): use `list()` / `listAll()`.
     */
    get(petId: number, options?: CallOptions): Promise<Pet>;
  };
}

/**
 * One request; `signal` aborts it (the caller's signal or the attempt's time limit). Answers are
 * read as text (`parseAs: "text"`) so that a 2xx body that is not JSON becomes the client's error
 * rather than escaping as openapi-fetch's SyntaxError.
 */
type Attempt = (signal: AbortSignal) => Promise<{ data?: string; error?: unknown; response: Response }>;

/** What one call is: its operation, its signal, and a create's key (carried by every error it throws). */
interface Call {
  readonly operation: string;
  /** GETs, and creates (which always carry an Idempotency-Key): sending them again changes nothing. */
  readonly idempotent: boolean;
  readonly signal: AbortSignal | undefined;
  readonly idempotencyKey?: string | undefined;
}

/** A call's 2xx answer: its body parsed as JSON, the response, and how many requests it took. */
interface Answer {
  readonly body: unknown;
  readonly response: Response;
  readonly attempts: number;
}

/**
 * API Gateway REST APIs end an integration at 29 seconds by default
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html),
 * so an attempt still waiting after 30 has failed.
 */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 30_000;

/**
 * Statuses that say "try again later": nothing was done, or what was done is found again (every
 * request the client sends is idempotent). 502 and 504 come from a proxy or load balancer between
 * the client and the API (the API's own gateway answers its time-out as a 503); the AWS SDKs and
 * Octokit retry them too: https://docs.aws.amazon.com/sdkfornet/v4/apidocs/items/Runtime/TRetryPolicy.html,
 * https://github.com/octokit/plugin-retry.js (retries 5xx). A 500 is the API's own fault: not retried.
 */
const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

/*
 * A 403 is never retried, whether the edge firewall's `forbidden` or the API's `insufficient_scope`
 * (a key without the operation's scope gets the same answer every time), nor a 401 (unknown,
 * revoked or expired key).
 */

/**
 * A create whose first attempt is still running (e.g. its connection dropped after it was sent)
 * answers 409 with `Retry-After`, and retrying the same key later gets the original 201 (docs/api.md,
 * "Retrying creates safely"). It is the one 4xx other than 429 that is retried: it says that a
 * request with this create's own key (usually its own earlier attempt) has not finished yet.
 */
const IN_PROGRESS = "idempotency_key_in_progress";

/** Header names without the index signature openapi-typescript adds, so that only declared names type-check. */
type Declared<Headers> = keyof { [Name in keyof Headers as string extends Name ? never : Name]: Headers[Name] };
type CreatedHeaders = operations["createPet"]["responses"][201]["headers"];
// Typed against the generated schema: a header renamed in the OpenAPI document stops the build here.
const REQUEST_ID: Declared<components["headers"]> = "X-Request-Id";
const RETRY_AFTER: Declared<components["headers"]> = "Retry-After";
const LOCATION: Declared<CreatedHeaders> = "Location";
const REPLAYED: Declared<CreatedHeaders> = "Idempotent-Replayed";
const REPLAYED_VALUE: NonNullable<CreatedHeaders[typeof REPLAYED]> = "true";
const CHALLENGE: Declared<operations["createPet"]["responses"][403]["headers"]> = "WWW-Authenticate";
const INSUFFICIENT_SCOPE: PetStoreApiError["code"] = "insufficient_scope";

function isErrorBody(body: unknown): body is { code: PetStoreApiError["code"]; message: string } {
  return (
    typeof body === "object" &&
    body !== null &&
    typeof (body as { code?: unknown }).code === "string" &&
    typeof (body as { message?: unknown }).message === "string"
  );
}

const requestIdOf = (response: Response) => response.headers.get(REQUEST_ID) ?? undefined;

/** The error an answer makes: the API's own when the body is its error body, else `unexpected_response` saying `otherwise`. */
function apiError(
  body: unknown,
  response: Response,
  call: Call,
  attempts: number,
  otherwise = `HTTP ${response.status} without the API's error body`,
): PetStoreApiError {
  const known = isErrorBody(body);
  const details = {
    code: known ? body.code : UNEXPECTED_RESPONSE,
    status: response.status,
    message: known ? body.message : otherwise,
    requestId: requestIdOf(response),
    retryAfterMs: parseRetryAfter(response.headers.get(RETRY_AFTER)),
    attempts,
    idempotencyKey: call.idempotencyKey,
  };
  if (details.code === INSUFFICIENT_SCOPE)
    return new PetStoreInsufficientScopeError({
      ...details,
      requiredScope: requiredScopeOf(response.headers.get(CHALLENGE)),
    });
  return new PetStoreApiError(details);
}

/** What came instead of JSON, for the error's message: "an empty body instead of JSON"… */
function unexpectedBody(text: string, response: Response): string {
  if (text.trim() === "") return "an empty body instead of JSON";
  const type = response.headers.get("Content-Type")?.split(";")[0]?.trim();
  if (!type) return "a body without Content-Type instead of JSON";
  return /[/+]json$/i.test(type) ? `malformed JSON (${type})` : `a ${type} body instead of JSON`;
}

/**
 * The JSON of a 2xx answer. Anything else (a proxy's HTML page, an empty body) is an
 * `unexpected_response`, not retried: nothing says that sending the request again would help.
 */
function parseBody(text: string | undefined, response: Response, call: Call, attempts: number): unknown {
  try {
    if (text) return JSON.parse(text);
  } catch {
    // Not JSON: the error below says what arrived instead.
  }
  throw apiError(
    undefined,
    response,
    call,
    attempts,
    `HTTP ${response.status} with ${unexpectedBody(text ?? "", response)}`,
  );
}

/**
 * `fetch` rejects with a TypeError when no answer arrived (connection refused or reset, DNS, TLS,
 * a body cut off): https://fetch.spec.whatwg.org/#concept-network-error. An abort is a DOMException.
 */
function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError;
}

/** A signal that aborts when `outer` does, or with a TimeoutError after `ms`; `dispose` stops the timer. */
function attemptSignal(outer: AbortSignal | undefined, ms: number) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`The attempt took longer than ${ms} ms`, "TimeoutError")),
    ms,
  );
  const forward = () => controller.abort(outer?.reason);
  outer?.addEventListener("abort", forward, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => controller.signal.aborted && !outer?.aborted,
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener("abort", forward);
    },
  };
}

/**
 * Operations the default warning has named in this process (this module is loaded once per
 * process): a service that builds a client per request still warns once, not at every request.
 */
const warnedInProcess = new Set<string>();

function warnOncePerProcess(notice: DeprecationNotice): void {
  if (warnedInProcess.has(notice.operation)) return;
  warnedInProcess.add(notice.operation);
  const runtime = (globalThis as { process?: { emitWarning?: (message: string, options: object) => void } }).process;
  if (typeof runtime?.emitWarning === "function") {
    // Honours --no-deprecation and --throw-deprecation like Node's own deprecations.
    runtime.emitWarning(notice.message, { type: "DeprecationWarning", code: "PETSTORE_DEPRECATED_OPERATION" });
  } else {
    console.warn(`DeprecationWarning: ${notice.message}`);
  }
}

function deprecationNotice(operation: string, headers: Headers): DeprecationNotice | undefined {
  const deprecation = headers.get("Deprecation");
  const sunset = headers.get("Sunset");
  if (deprecation === null && sunset === null) return undefined;
  const successor = linkTarget(headers.get("Link"), "successor-version") ?? null;
  const since = /^@(\d+)$/.exec(deprecation ?? "");
  const parts = [
    `The Pet Store API operation ${operation} is deprecated`,
    since ? ` since ${new Date(Number(since[1]) * 1000).toISOString().slice(0, 10)}` : "",
    sunset ? ` and stops working on ${sunset}` : "",
    successor ? `; use ${successor} instead` : "",
  ];
  return { operation, deprecation, sunset, successor, message: `${parts.join("")}.` };
}

/** The query of the page a `Link: rel="next"` points to. */
function nextQuery(link: string | null): ListPetsQuery | null {
  const target = linkTarget(link, "next");
  if (target === undefined) return null;
  const parameters = new URL(target, "http://link.invalid").searchParams;
  const limit = parameters.get("limit");
  const status = parameters.get("status");
  const cursor = parameters.get("cursor");
  return {
    ...(limit === null ? {} : { limit: Number(limit) }),
    ...(status === null ? {} : { status: status as PetStatus }),
    ...(cursor === null ? {} : { cursor }),
  };
}

const responseInfo = ({ response, attempts }: Answer): ResponseInfo => ({
  status: response.status,
  requestId: requestIdOf(response),
  attempts,
});

export function createPetStoreClient(options: PetStoreClientOptions): PetStoreClient {
  if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol))
    throw new TypeError("baseUrl must be an http(s) URL, e.g. http://127.0.0.1:3000/v1");
  if (typeof options.apiKey !== "string" || options.apiKey.trim() === "")
    throw new TypeError("apiKey must be the API key (not empty)");
  const policy = retryPolicy(options.retry);
  const attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  if (!Number.isFinite(attemptTimeoutMs) || attemptTimeoutMs <= 0)
    throw new RangeError("attemptTimeoutMs must be more than 0");
  const onDeprecation = options.onDeprecation ?? warnOncePerProcess;
  const warned = new Set<string>();
  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}`, "User-Agent": userAgent() },
    // Looked up at each call, not at creation, so that instrumentation installed later applies.
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
  });

  function noticeDeprecation(operation: string, response: Response): void {
    if (warned.has(operation)) return;
    const notice = deprecationNotice(operation, response.headers);
    if (!notice) return;
    warned.add(operation);
    onDeprecation(notice);
  }

  /** One attempt within its time limit: its result, the network error (a time-out counts as one), or "aborted". */
  async function attemptOnce(
    attempt: Attempt,
    signal: AbortSignal | undefined,
  ): Promise<{ result: Awaited<ReturnType<Attempt>> } | { networkError: unknown } | "aborted"> {
    const limit = attemptSignal(signal, attemptTimeoutMs);
    try {
      return { result: await attempt(limit.signal) };
    } catch (error) {
      if (signal?.aborted) return "aborted";
      if (limit.timedOut()) return { networkError: limit.signal.reason };
      if (isNetworkError(error)) return { networkError: error };
      throw error;
    } finally {
      limit.dispose();
    }
  }

  /**
   * Runs `attempt` until it gets a 2xx, a final error or runs out of attempts. Only idempotent
   * requests are retried. Every error thrown is the client's own and carries the call's facts
   * (attempts, a create's key), an abort of the caller's signal included.
   */
  async function send(call: Call, attempt: Attempt): Promise<Answer> {
    const { signal, idempotencyKey } = call;
    let attempts = 0;
    const aborted = () => new PetStoreAbortError({ attempts, idempotencyKey, cause: signal?.reason });
    const wait = (ms: number) =>
      sleep(ms, signal).catch(() => {
        throw aborted();
      });
    for (;;) {
      if (signal?.aborted) throw aborted();
      attempts += 1;
      const last = !call.idempotent || attempts >= policy.maxAttempts;
      const outcome = await attemptOnce(attempt, signal);
      if (outcome === "aborted") throw aborted();
      if ("networkError" in outcome) {
        if (last) throw new PetStoreNetworkError({ attempts, idempotencyKey, cause: outcome.networkError });
        await wait(backoffDelayMs(attempts, policy));
        continue;
      }
      const { data, error: body, response } = outcome.result;
      noticeDeprecation(call.operation, response);
      if (response.ok) return { body: parseBody(data, response, call, attempts), response, attempts };
      const error = apiError(body, response, call, attempts);
      const retryable =
        RETRYABLE_STATUSES.has(response.status) || (response.status === 409 && error.code === IN_PROGRESS);
      // A longer wait than the client allows ends the retries: the caller sees retryAfterMs and decides.
      if (last || !retryable || (error.retryAfterMs ?? 0) > policy.maxDelayMs) throw error;
      await wait(Math.max(error.retryAfterMs ?? 0, backoffDelayMs(attempts, policy)));
    }
  }

  async function createWithResponse(
    pet: NewPet,
    { idempotencyKey = globalThis.crypto.randomUUID(), signal }: CreateOptions = {},
  ): Promise<CreatedPet> {
    const answer = await send({ operation: "createPet", idempotent: true, signal, idempotencyKey }, (attemptSignal) =>
      api.POST("/pets", {
        params: { header: { "Idempotency-Key": idempotencyKey } },
        body: pet,
        parseAs: "text",
        signal: attemptSignal,
      }),
    );
    const { headers } = answer.response;
    return {
      pet: answer.body as Pet,
      response: {
        ...responseInfo(answer),
        location: headers.get(LOCATION) ?? undefined,
        replayed: headers.get(REPLAYED) === REPLAYED_VALUE,
        idempotencyKey,
      },
    };
  }

  async function list(query: ListPetsQuery = {}, { signal }: CallOptions = {}): Promise<PetPage> {
    const answer = await send({ operation: "listPets", idempotent: true, signal }, (attemptSignal) =>
      api.GET("/pets", { params: { query }, parseAs: "text", signal: attemptSignal }),
    );
    return {
      items: answer.body as Pet[],
      next: nextQuery(answer.response.headers.get("Link")),
      response: responseInfo(answer),
    };
  }

  async function* listAll(query: ListPetsQuery = {}, options: CallOptions = {}): AsyncIterableIterator<Pet> {
    let next: ListPetsQuery | null = query;
    while (next !== null) {
      const page: PetPage = await list(next, options);
      yield* page.items;
      next = page.next;
    }
  }

  return {
    pets: {
      create: async (pet, options) => (await createWithResponse(pet, options)).pet,
      createWithResponse,
      list,
      listAll,
      async get(petId, { signal } = {}) {
        const answer = await send({ operation: "getPet", idempotent: true, signal }, (attemptSignal) =>
          api.GET("/pets/{petId}", { params: { path: { petId } }, parseAs: "text", signal: attemptSignal }),
        );
        return answer.body as Pet;
      },
    },
  };
}
