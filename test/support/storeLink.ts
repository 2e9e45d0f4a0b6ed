/**
 * A TCP link between a server under test and its DynamoDB that the test can cut and restore: an
 * outage as the server sees it (connections reset, then refused), while the engine behind it keeps
 * running. Stopping dynalite itself does not make an outage: its close is graceful (it keeps serving
 * open keep-alive connections until they go idle), and closing its database under requests in
 * flight makes it throw.
 */
import { connect, createServer, type Socket } from "node:net";

export interface StoreLink {
  /** Where the server under test should send its DynamoDB requests. */
  readonly endpoint: string;
  /**
   * Cuts the link at the first answer the engine sends once `when()` holds: that answer is lost
   * (its request was applied), every open connection is reset and new ones are refused.
   * Resolves once the link is down.
   */
  cutAtAnswer(when: () => boolean): Promise<void>;
  /** Accepts connections again, on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startStoreLink(engineEndpoint: string): Promise<StoreLink> {
  const engine = new URL(engineEndpoint);
  const sockets = new Set<Socket>();
  let cutRequest: { when: () => boolean; done: () => void } | undefined;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    // A reset is the point of this link; the other side sees it.
    socket.on("error", () => undefined);
  };
  const server = createServer((client) => {
    const upstream = connect(Number(engine.port), engine.hostname);
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.on("data", (chunk: Buffer) => {
      if (cutRequest?.when()) return cut();
      client.write(chunk);
    });
    upstream.once("end", () => client.end());
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const stopListening = () => new Promise<void>((resolve) => server.close(() => resolve()));

  function cut(): void {
    const request = cutRequest;
    cutRequest = undefined;
    const stopped = stopListening();
    for (const socket of sockets) socket.resetAndDestroy();
    void stopped.then(() => request?.done());
  }

  const port = await listen(0);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    cutAtAnswer: (when) =>
      new Promise<void>((resolve) => {
        cutRequest = { when, done: resolve };
      }),
    restore: async () => {
      await listen(port);
    },
    close: async () => {
      cutRequest = undefined;
      const stopped = server.listening ? stopListening() : Promise.resolve();
      for (const socket of sockets) socket.destroy();
      await stopped;
    },
  };
}
