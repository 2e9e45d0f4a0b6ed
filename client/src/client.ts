import createClient from "openapi-fetch";
import { PetStoreApiError, PetStoreNetworkError, UNEXPECTED_RESPONSE } from "./errors.js";
import { linkTarget } from "./links.js";
import { backoffDelayMs, parseRetryAfter, type RetryOptions, retryPolicy, sleep } from "./retry.js";
import type { components, operations, paths } from "./schema.js";

export type Pet = components["schemas"]["Pet"];
export type NewPet = components["schemas"]["NewPet"];
export type PetStatus = components["schemas"]["PetStatus"];
export type ListPetsQuery = NonNullable<operations["listPets"]["parameters"]["query"]>;

/** One page of `pets.list()`. */
export interface PetPage {
  readonly items: Pet[];
  /** The query of the next page (from the answer's `Link: rel="next"`), or null on the last page. */
  readonly next: ListPetsQuery | null;
}

export interface CallOptions {
  /** Stops the call: an attempt in flight is aborted and a wait between attempts ends at once. */
  readonly signal?: AbortSignal | undefined;
}

export interface CreateOptions extends CallOptions {
  /**
   * Sent as `Idempotency-Key` (1 to 255 characters) on every attempt of this create, so that
   * retries never add a second pet. A random UUID when not given; pass your own to retry a create
   * across calls or processes (e.g. after a PetStoreNetworkError).
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
   * operation. By default a `DeprecationWarning` (process.emitWarning on Node, console.warn elsewhere).
   */
  readonly onDeprecation?: ((notice: DeprecationNotice) => void) | undefined;
}

export interface PetStoreClient {
  readonly pets: {
    /** Adds a pet, safely retried (same `Idempotency-Key` on every attempt). */
    create(pet: NewPet, options?: CreateOptions): Promise<Pet>;
    /** One page of pets, oldest first, and the query of the next page. */
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

/** One request; `signal` aborts it (the caller's signal or the attempt's time limit). */
type Attempt<T> = (signal: AbortSignal) => Promise<{ data?: T; error?: unknown; response: Response }>;

/**
 * API Gateway REST APIs end an integration at 29 seconds by default
 * (https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-execution-service-limits-table.html),
 * so an attempt still waiting after 30 has failed.
 */
const DEFAULT_ATTEMPT_TIMEOUT_MS = 30_000;

/** Statuses that say "try again later": nothing was done, and the same request may succeed. */
const RETRYABLE_STATUSES = new Set([429, 503]);

/**
 * A create whose first attempt is still running (e.g. its connection dropped after it was sent)
 * answers 409 with `Retry-After`, and retrying the same key later gets the original 201 (docs/api.md,
 * "Retrying creates safely"). It is the one 4xx other than 429 that is retried: it says that a
 * request with this create's own key (usually its own earlier attempt) has not finished yet.
 */
const IN_PROGRESS = "idempotency_key_in_progress";

function isErrorBody(body: unknown): body is { code: PetStoreApiError["code"]; message: string } {
  return (
    typeof body === "object" &&
    body !== null &&
    typeof (body as { code?: unknown }).code === "string" &&
    typeof (body as { message?: unknown }).message === "string"
  );
}

function apiError(body: unknown, response: Response, attempts: number): PetStoreApiError {
  const known = isErrorBody(body);
  return new PetStoreApiError({
    code: known ? body.code : UNEXPECTED_RESPONSE,
    status: response.status,
    message: known ? body.message : `HTTP ${response.status} without the API's error body`,
    requestId: response.headers.get("X-Request-Id") ?? undefined,
    retryAfterMs: parseRetryAfter(response.headers.get("Retry-After")),
    attempts,
  });
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

function warnByDefault(notice: DeprecationNotice): void {
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

export function createPetStoreClient(options: PetStoreClientOptions): PetStoreClient {
  if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol))
    throw new TypeError("baseUrl must be an http(s) URL, e.g. http://127.0.0.1:3000/v1");
  if (typeof options.apiKey !== "string" || options.apiKey.trim() === "")
    throw new TypeError("apiKey must be the API key (not empty)");
  const policy = retryPolicy(options.retry);
  const attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  if (!Number.isFinite(attemptTimeoutMs) || attemptTimeoutMs <= 0)
    throw new RangeError("attemptTimeoutMs must be more than 0");
  const onDeprecation = options.onDeprecation ?? warnByDefault;
  const warned = new Set<string>();
  const api = createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { Authorization: `Bearer ${options.apiKey}` },
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

  /** One attempt within its time limit: its result, or the network error (a time-out counts as one). */
  async function attemptOnce<T>(
    attempt: Attempt<T>,
    signal: AbortSignal | undefined,
  ): Promise<{ result: Awaited<ReturnType<Attempt<T>>> } | { networkError: unknown }> {
    const limit = attemptSignal(signal, attemptTimeoutMs);
    try {
      return { result: await attempt(limit.signal) };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      if (limit.timedOut()) return { networkError: limit.signal.reason };
      if (isNetworkError(error)) return { networkError: error };
      throw error;
    } finally {
      limit.dispose();
    }
  }

  /**
   * Runs `attempt` until it gets a 2xx, a final error or runs out of attempts. Only idempotent
   * requests are retried: GETs, and creates, which always carry an Idempotency-Key.
   */
  async function send<T>(
    operation: string,
    attempt: Attempt<T>,
    { idempotent, signal }: { idempotent: boolean; signal: AbortSignal | undefined },
  ): Promise<{ data: T; response: Response }> {
    for (let attempts = 1; ; attempts += 1) {
      signal?.throwIfAborted();
      const last = !idempotent || attempts >= policy.maxAttempts;
      const outcome = await attemptOnce(attempt, signal);
      if ("networkError" in outcome) {
        if (last) throw new PetStoreNetworkError(attempts, outcome.networkError);
        await sleep(backoffDelayMs(attempts, policy), signal);
        continue;
      }
      const { result } = outcome;
      const { response } = result;
      noticeDeprecation(operation, response);
      if (response.ok) return { data: result.data as T, response };
      const error = apiError(result.error, response, attempts);
      const retryable =
        RETRYABLE_STATUSES.has(response.status) || (response.status === 409 && error.code === IN_PROGRESS);
      // A longer wait than the client allows ends the retries: the caller sees retryAfterMs and decides.
      const waitMs = Math.max(error.retryAfterMs ?? 0, backoffDelayMs(attempts, policy));
      if (last || !retryable || (error.retryAfterMs ?? 0) > policy.maxDelayMs) throw error;
      await sleep(waitMs, signal);
    }
  }

  async function list(query: ListPetsQuery = {}, { signal }: CallOptions = {}): Promise<PetPage> {
    const { data, response } = await send(
      "listPets",
      (attemptSignal) => api.GET("/pets", { params: { query }, signal: attemptSignal }),
      {
        idempotent: true,
        signal,
      },
    );
    return { items: data, next: nextQuery(response.headers.get("Link")) };
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
      async create(pet, { idempotencyKey = globalThis.crypto.randomUUID(), signal } = {}) {
        const { data } = await send(
          "createPet",
          (attemptSignal) =>
            api.POST("/pets", {
              params: { header: { "Idempotency-Key": idempotencyKey } },
              body: pet,
              signal: attemptSignal,
            }),
          { idempotent: true, signal },
        );
        return data;
      },
      list,
      listAll,
      async get(petId, { signal } = {}) {
        const { data } = await send(
          "getPet",
          (attemptSignal) => api.GET("/pets/{petId}", { params: { path: { petId } }, signal: attemptSignal }),
          { idempotent: true, signal },
        );
        return data;
      },
    },
  };
}
