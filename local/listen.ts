import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/** Listens on host:port (0 = any free port) and resolves with the port, or rejects (EADDRINUSE…). */
export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
