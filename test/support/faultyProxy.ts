/**
 * A local HTTP proxy in front of the API that misbehaves on the requests a test chooses, the way
 * networks and load balancers do: it answers 503 itself (or 502 with an HTML page), drops the
 * connection before forwarding, or forwards the request and then drops the connection or stalls
 * instead of passing the answer on (the server did the work, the client saw a network error or no
 * answer at all).
 */
import { createServer, request as forward, type IncomingMessage, type ServerResponse } from "node:http";
import { listen } from "../../local/listen";

export type Fault =
  /** Pass the request on and the answer back. */
  | "forward"
  /** Answer 503 with the API's error body and `Retry-After: 0`, without forwarding. */
  | "503"
  /** Answer 502 with an HTML page (a load balancer's "Bad gateway"), without forwarding. */
  | "502"
  /** Close the connection without forwarding. */
  | "drop"
  /** Forward, wait for the whole answer, then close the connection without passing it on. */
  | "dropAfterForwarding"
  /** Forward, wait for the whole answer, then keep the connection open and never pass the answer on. */
  | "stallAfterForwarding";

export interface ProxiedRequest {
  readonly method: string;
  /** Path and query, as the client sent them. */
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly fault: Fault;
  /** The API's status, when the request was forwarded. */
  readonly upstreamStatus?: number;
  readonly upstreamHeaders?: IncomingMessage["headers"];
}

export interface FaultyProxy {
  /** The API's base URL through the proxy, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly baseUrl: string;
  /** Every request the proxy received, in order, with what it did. */
  readonly requests: ProxiedRequest[];
  /** Decides what happens to each request (by default: forward it). */
  plan(decide: (request: IncomingMessage, index: number) => Fault): void;
  close(): Promise<void>;
}

const UNAVAILABLE = JSON.stringify({
  code: "service_unavailable",
  message: "The service is briefly unavailable; retry later.",
  status: 503,
});

const BAD_GATEWAY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>Bad gateway</body></html>";

/** Forwards `request` (with `body`) to `target` and resolves with the whole answer. */
function send(target: URL, request: IncomingMessage, body: Buffer) {
  return new Promise<{ status: number; headers: IncomingMessage["headers"]; body: Buffer }>((resolve, reject) => {
    const upstream = forward(
      new URL(request.url ?? "/", target),
      { method: request.method, headers: { ...request.headers, host: target.host } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on("data", (chunk: Buffer) => chunks.push(chunk));
        answer.on("end", () =>
          resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }),
        );
        answer.on("error", reject);
      },
    );
    upstream.on("error", reject);
    upstream.end(body);
  });
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Starts the proxy on a free port in front of the API at `apiBaseUrl` (`http://host:port/v1`). */
export async function startFaultyProxy(apiBaseUrl: string): Promise<FaultyProxy> {
  const target = new URL(apiBaseUrl);
  const requests: ProxiedRequest[] = [];
  let decide: (request: IncomingMessage, index: number) => Fault = () => "forward";

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const fault = decide(request, requests.length);
    const seen = { method: request.method ?? "GET", url: request.url ?? "/", headers: request.headers, fault };
    const body = await readBody(request);
    if (fault === "drop") {
      requests.push(seen);
      request.socket.destroy();
      return;
    }
    if (fault === "502") {
      requests.push(seen);
      response.writeHead(502, { "Content-Type": "text/html" }).end(BAD_GATEWAY_PAGE);
      return;
    }
    if (fault === "503") {
      requests.push(seen);
      response.writeHead(503, { "Content-Type": "application/json", "Retry-After": "0" }).end(UNAVAILABLE);
      return;
    }
    const answer = await send(target, request, body);
    requests.push({ ...seen, upstreamStatus: answer.status, upstreamHeaders: answer.headers });
    if (fault === "dropAfterForwarding") {
      request.socket.destroy();
      return;
    }
    // The client gives up on its own; closing the proxy ends the connection.
    if (fault === "stallAfterForwarding") return;
    response.writeHead(answer.status, answer.headers).end(answer.body);
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(() => request.socket.destroy());
  });
  const port = await listen(server, 0, "127.0.0.1");
  return {
    baseUrl: `http://127.0.0.1:${port}${target.pathname}`,
    requests,
    plan: (next) => {
      decide = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
