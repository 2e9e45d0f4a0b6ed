/** Defaults of the local environment (`npm start`, `npm run keys`). */
export const LOCAL_TABLE_NAME = "petstore-local";
export const LOCAL_HOST = "127.0.0.1";
export const DEFAULT_API_PORT = 3000;
export const DEFAULT_DYNAMODB_PORT = 8000;
export const LOCAL_DATA_DIR = ".data/dynamodb";
export const LOCAL_REGION = "us-east-1";
/**
 * The local key `npm start` makes on its first start and reuses after, so that a key pasted into a
 * shell keeps working across restarts. Local keys only open this machine's data; the file is
 * readable by its owner alone, and the database still holds only the key's hash.
 */
export const LOCAL_KEY_FILE = ".data/local-api-key";
