/**
 * dynalite over https, for measuring a function's first request as Lambda makes it. Over plain
 * http the SDK imports `node:http` lazily, and that import alone loads modules (undici, http2,
 * zlib, worker_threads) the deployed function never does: its DynamoDB endpoint is always https.
 * dynalite's own certificate has expired, so each start makes a short-lived one for localhost.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { generate } from "selfsigned";
import { ensureTable } from "../../local/dynamo";
import { listen } from "../../local/listen";

const HOST = "127.0.0.1";

export interface HttpsDynamo {
  /** `https://localhost:<port>`: the name the certificate is for. */
  readonly endpoint: string;
  /** The certificate (PEM), for a child's NODE_EXTRA_CA_CERTS. */
  readonly caFile: string;
  /** A client of this process that trusts the certificate (static local credentials). */
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** The access key ids that have signed requests so far (from each request's Authorization header). */
  accessKeyIdsSeen(): ReadonlySet<string>;
  close(): Promise<void>;
}

/** A certificate valid for a day, for localhost and 127.0.0.1, with an RSA 2048 key like AWS endpoints'. */
async function localhostCertificate(): Promise<{ key: string; cert: string }> {
  const now = Date.now();
  const pems = await generate([{ name: "commonName", value: "localhost" }], {
    keySize: 2048,
    algorithm: "sha256",
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + 24 * 60 * 60_000),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          { type: 2, value: "localhost" },
          { type: 7, ip: HOST },
        ],
      },
    ],
  });
  return { key: pems.private, cert: pems.cert };
}

/** Starts an in-memory dynalite over https on a free port and creates `tableName` in it. */
export async function startHttpsDynamo(tableName: string): Promise<HttpsDynamo> {
  const dir = await mkdtemp(join(tmpdir(), "petstore-bench-tls-"));
  const { key, cert } = await localhostCertificate();
  const caFile = join(dir, "localhost.pem");
  await writeFile(caFile, cert);
  // dynalite passes key, cert and ca on to https.createServer (local/dynalite.d.ts does not list them).
  const options = { createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ssl: true, key, cert, ca: cert };
  const server = dynalite(options);
  const accessKeyIds = new Set<string>();
  server.on("request", (request: { headers: Record<string, string | string[] | undefined> }) => {
    const credential = /Credential=([^/,\s]+)\//.exec(String(request.headers.authorization ?? ""));
    if (credential?.[1]) accessKeyIds.add(credential[1]);
  });
  let port: number;
  try {
    port = await listen(server, 0, HOST);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const endpoint = `https://localhost:${port}`;
  const agent = new Agent({ ca: cert, keepAlive: true });
  const client = new DynamoDBClient({
    region: "us-east-1",
    endpoint,
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    requestHandler: { httpsAgent: agent },
  });
  const close = async () => {
    client.destroy();
    agent.destroy();
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await ensureTable(client, tableName);
  } catch (error) {
    await close();
    throw error;
  }
  return { endpoint, caFile, client, tableName, accessKeyIdsSeen: () => new Set(accessKeyIds), close };
}
