/**
 * The API key `npm start` serves with. Pinned with PETSTORE_API_KEY; otherwise the key saved in
 * .data/ on the first start and reused at every start after, so that one key keeps working (and
 * restarts do not pile up keys that never expire); with --in-memory, a new one each run, since the
 * database it lives in goes away with the process. The table only ever holds the key's hash.
 */
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import {
  type ApiKeyStore,
  apiKeyPrefix,
  describeKeySlip,
  hasApiKeyShape,
  hashApiKey,
  issueApiKey,
} from "../lib/auth/apiKeys";
import { stages } from "../lib/config";
import { StartupError } from "./startOptions";

export type LocalKeySource =
  /** PETSTORE_API_KEY. */
  | "pinned"
  /** The key saved by an earlier start. */
  | "saved"
  /** Made now and saved for the next starts. */
  | "new"
  /** Made now because the saved one was revoked or unreadable; saved in its place. */
  | "replaced"
  /** Made now for an in-memory run; not saved. */
  | "in-memory";

export interface LocalKey {
  readonly key: string;
  readonly source: LocalKeySource;
}

const SAVED_KEY_NAME = "npm start";
const IN_MEMORY_KEY_NAME = "npm start --in-memory";
const KEY_SHAPE = `${apiKeyPrefix("local")}<43 letters or digits>`;

/** One readable line for a PETSTORE_API_KEY that is not a local key; never repeats the value. */
function pinnedKeyProblem(value: string): string {
  const slip = describeKeySlip(value);
  if (slip) return `PETSTORE_API_KEY is not valid: ${slip}; set it to the key alone (${KEY_SHAPE}).`;
  const otherStage = stages.find((stage) => stage !== "local" && hasApiKeyShape(value, stage));
  if (otherStage)
    return `PETSTORE_API_KEY is a ${otherStage} key; npm start takes a local one (${KEY_SHAPE}), or unset it to use the saved key.`;
  return `PETSTORE_API_KEY must look like ${KEY_SHAPE}; make one with: npm run keys -- create --name me (or unset it to use the saved key).`;
}

async function readSavedKey(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Written whole (a rename) and readable by its owner only. */
async function saveKey(file: string, key: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, `${key}\n`, { mode: 0o600 });
  await rename(partial, file);
}

/**
 * The key to serve with, its hash stored in `store` if it is not there yet. `keyFile` unset means
 * an in-memory run: nothing is read or written.
 */
export async function localApiKey(
  store: ApiKeyStore,
  options: { readonly pinned: string | undefined; readonly keyFile: string | undefined },
  now = new Date(),
): Promise<LocalKey> {
  const { pinned, keyFile } = options;
  if (pinned !== undefined) {
    if (!hasApiKeyShape(pinned, "local")) throw new StartupError(pinnedKeyProblem(pinned));
    const record = await store.findByHash(hashApiKey(pinned));
    if (record?.revokedAt)
      throw new StartupError(
        "PETSTORE_API_KEY was revoked; create another with: npm run keys -- create --name me (or unset it to use the saved key).",
      );
    if (!record) await issueApiKey(store, "local", "PETSTORE_API_KEY", now, pinned);
    return { key: pinned, source: "pinned" };
  }
  if (keyFile === undefined) {
    const { key } = await issueApiKey(store, "local", IN_MEMORY_KEY_NAME, now);
    return { key, source: "in-memory" };
  }
  const saved = await readSavedKey(keyFile);
  if (saved !== undefined && hasApiKeyShape(saved, "local")) {
    const record = await store.findByHash(hashApiKey(saved));
    if (record && !record.revokedAt) {
      // Tightened in case it was copied or restored with looser permissions.
      await chmod(keyFile, 0o600);
      return { key: saved, source: "saved" };
    }
    if (!record) {
      // Another table or a wiped database: the saved key is stored there too.
      await issueApiKey(store, "local", SAVED_KEY_NAME, now, saved);
      await chmod(keyFile, 0o600);
      return { key: saved, source: "saved" };
    }
  }
  const { key } = await issueApiKey(store, "local", SAVED_KEY_NAME, now);
  await saveKey(keyFile, key);
  return { key, source: saved === undefined ? "new" : "replaced" };
}
