import type { MiddlewareObj } from "@middy/core";
import type { Context } from "aws-lambda";
import type { ApiEvent, ApiResult } from "../types";
import { CHAIN_HEADERS, type ChainHeader, type ChainHeaders, type ChainMultiValueHeaders } from "../types";

/**
 * The chain's headers by name length: a client's header is lower-cased (a new string) only when its
 * length and first letter match one of them, which most of the ten or so names a request carries
 * do not (Accept, Host, User-Agent, X-Forwarded-*, …).
 */
const byLength: (readonly ChainHeader[] | undefined)[] = [];
for (const name of CHAIN_HEADERS) byLength[name.length] = [...(byLength[name.length] ?? []), name];

function chainHeaderOf(name: string): ChainHeader | undefined {
  // An array indexed by length: cheaper than a Map lookup, made for every header twice a request.
  const candidates = byLength[name.length];
  if (candidates === undefined) return undefined;
  // ASCII letters only differ in bit 0x20 between cases; a first letter that differs cannot match.
  const first = name.charCodeAt(0) | 0x20;
  for (const candidate of candidates) {
    if (candidate.charCodeAt(0) === first && name.toLowerCase() === candidate) return candidate;
  }
  return undefined;
}

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
      const chainHeader = chainHeaderOf(name);
      if (chainHeader !== undefined) headers[chainHeader] = single[name];
    }
  }
  const multiple = event.multiValueHeaders;
  if (multiple) {
    for (const name in multiple) {
      const chainHeader = chainHeaderOf(name);
      if (chainHeader !== undefined) multiValueHeaders[chainHeader] = multiple[name];
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
