import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ApiEvent, ApiResult } from "../types";
import { CHAIN_HEADERS, type ChainHeader, type ChainHeaders, type ChainMultiValueHeaders } from "../types";

const wanted: ReadonlySet<string> = new Set(CHAIN_HEADERS);

/**
 * The headers the chain and the operations read (CHAIN_HEADERS), found whatever case the client
 * sent them in, under their lower-case names; when a name comes twice in different cases, the last
 * wins, as with @middy/http-header-normalizer, which this replaces. A real API Gateway event carries
 * about ten headers, each twice (`headers` and `multiValueHeaders`); copying all of them on every
 * request cost more than everything else the chain does with headers (npm run bench).
 */
export function pickChainHeaders(event: {
  readonly headers?: Record<string, string | undefined> | null;
  readonly multiValueHeaders?: Record<string, string[] | undefined> | null;
}): { headers: ChainHeaders; multiValueHeaders: ChainMultiValueHeaders } {
  const headers: ChainHeaders = {};
  const multiValueHeaders: ChainMultiValueHeaders = {};
  const single = event.headers;
  if (single) {
    for (const name in single) {
      const lower = name.toLowerCase();
      if (wanted.has(lower)) headers[lower as ChainHeader] = single[name];
    }
  }
  const multiple = event.multiValueHeaders;
  if (multiple) {
    for (const name in multiple) {
      const lower = name.toLowerCase();
      if (wanted.has(lower)) multiValueHeaders[lower as ChainHeader] = multiple[name];
    }
  }
  return { headers, multiValueHeaders };
}

/** Gives the request only the headers the chain reads, under lower-case names (pickChainHeaders). */
export function requestHeaders(): MiddlewareObj<ApiEvent, ApiResult, Error, Context> {
  return {
    before: (request) => {
      const picked = pickChainHeaders(request.event as Parameters<typeof pickChainHeaders>[0]);
      request.event.headers = picked.headers;
      request.event.multiValueHeaders = picked.multiValueHeaders;
    },
  };
}
