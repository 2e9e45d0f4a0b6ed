/**
 * The API key `npm start` serves with. Pinned with PETSTORE_API_KEY; otherwise a new key at every
 * start, shown once in the banner, and every earlier key `npm start` made in the same table is
 * revoked, so that restarts never leave more than one of them working. A key is never written
 * anywhere but as its SHA-256 hash in the table (not even a local one, not even in .data/); a key
 * that lasts across restarts is one made with `npm run keys -- create` and pinned.
 */
import { readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
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

/** The name `npm start` gives the keys it makes; `npm run keys` refuses it locally (see isNpmStartKeyName). */
export const NPM_START_KEY_NAME = "npm start";

/**
 * Names earlier versions gave the keys `npm start` made: "npm start <ISO time>" at every start,
 * then "npm start --in-memory" for in-memory runs.
 */
const EARLIER_NPM_START_KEY_NAMES = [
  /^npm start \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/,
  /^npm start --in-memory$/,
];

/** True for a key `npm start` made (this version or an earlier one), which the next start revokes. */
export function isNpmStartKeyName(name: string): boolean {
  return name === NPM_START_KEY_NAME || EARLIER_NPM_START_KEY_NAMES.some((pattern) => pattern.test(name));
}

export type LocalKey =
  /** PETSTORE_API_KEY; `madeByNpmStart` when it is a key an earlier start made, which an unpinned start revokes. */
  | { readonly key: string; readonly source: "pinned"; readonly madeByNpmStart: boolean }
  /** Made now; `revoked` counts the earlier starts' keys revoked in its place. */
  | { readonly key: string; readonly source: "new"; readonly revoked: number };

const KEY_SHAPE = `${apiKeyPrefix("local")}<43 letters or digits>`;
const MAKE_ONE = "npm run keys -- create --name me";

/** One readable line for a PETSTORE_API_KEY that is not a local key; never repeats the value. */
function pinnedKeyProblem(value: string): string {
  const slip = describeKeySlip(value);
  if (slip) return `PETSTORE_API_KEY is not valid: ${slip}; set it to the key alone (${KEY_SHAPE}).`;
  const otherStage = stages.find((stage) => stage !== "local" && hasApiKeyShape(value, stage));
  if (otherStage)
    return `PETSTORE_API_KEY is a ${otherStage} key; npm start takes a local one (${KEY_SHAPE}), or unset it for a new key at each start.`;
  return `PETSTORE_API_KEY must look like ${KEY_SHAPE}; make one with: ${MAKE_ONE} (or unset it for a new key at each start).`;
}

/**
 * Why a key an earlier start made stopped working, said to whoever still sends it: the API answers
 * it with "The API key was revoked: <this>" (lib/http/middleware/bearerAuth.ts) instead of a bare
 * "not valid", so that a client left with the last start's key knows to take the new one.
 */
export const REPLACED_BY_RESTART_NOTE =
  "npm start replaced it when it restarted; use the key its latest start printed, or pin one with PETSTORE_API_KEY.";

/** Revokes every working key an earlier `npm start` made in `store`; returns how many. */
async function revokeEarlierStartKeys(store: ApiKeyStore, now: Date): Promise<number> {
  const earlier = (await store.list()).filter((record) => !record.revokedAt && isNpmStartKeyName(record.name));
  let revoked = 0;
  for (const record of earlier) if (await store.revoke(record.keyId, now, REPLACED_BY_RESTART_NOTE)) revoked++;
  return revoked;
}

/** The key to serve with; its hash is stored in `store` if it is not there yet. */
export async function localApiKey(
  store: ApiKeyStore,
  options: { readonly pinned: string | undefined },
  now = new Date(),
): Promise<LocalKey> {
  const { pinned } = options;
  if (pinned !== undefined) {
    if (!hasApiKeyShape(pinned, "local")) throw new StartupError(pinnedKeyProblem(pinned));
    const record = await store.findByHash(hashApiKey(pinned));
    if (record?.revokedAt)
      throw new StartupError(
        `PETSTORE_API_KEY was revoked; create another with: ${MAKE_ONE} (or unset it for a new key at each start).`,
      );
    if (!record) await issueApiKey(store, "local", "PETSTORE_API_KEY", { now, key: pinned });
    return { key: pinned, source: "pinned", madeByNpmStart: record !== undefined && isNpmStartKeyName(record.name) };
  }
  // Revoked before the new key exists, so that a failure in between never leaves two working.
  const revoked = await revokeEarlierStartKeys(store, now);
  const { key } = await issueApiKey(store, "local", NPM_START_KEY_NAME, { now });
  return { key, source: "new", revoked };
}

/**
 * Where earlier versions saved the local key in plain text (written through a `<file>.<pid>.partial`
 * file first). That key was named "npm start", so the next unpinned start revokes it.
 */
export const KEY_FILE_OF_EARLIER_VERSIONS = ".data/local-api-key";

/** Deletes the key file of earlier versions and any partial copy of it; true when there was one. */
export async function deleteKeyFileOfEarlierVersions(file = KEY_FILE_OF_EARLIER_VERSIONS): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir(dirname(file));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  const name = basename(file);
  const keyFiles = entries.filter(
    (entry) => entry.startsWith(name) && /^(?:\.\d+\.partial)?$/.test(entry.slice(name.length)),
  );
  for (const entry of keyFiles) await rm(join(dirname(file), entry), { force: true });
  return keyFiles.length > 0;
}
