/**
 * The package's version, sent in `User-Agent`. package.json's `version` is the source;
 * test/unit/clientPackage.test.ts fails when this differs from it (raise both together).
 */
export const CLIENT_VERSION = "2.1.0";

/**
 * `petstore-client/<version> (node/<version>)`, so the API's operators can tell the client's
 * versions apart in their logs. Runtimes without `process.versions.node` say `runtime/unknown`;
 * browsers may drop the header, which costs nothing but that line in the logs. `runtime` is the
 * global scope, a parameter so that other runtimes can be tested.
 */
export function userAgent(runtime: object = globalThis): string {
  const node = (runtime as { process?: { versions?: { node?: unknown } } }).process?.versions?.node;
  return `petstore-client/${CLIENT_VERSION} (${typeof node === "string" ? `node/${node}` : "runtime/unknown"})`;
}
