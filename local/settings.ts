/** Defaults of the local environment (`npm start`, `npm run keys`). */
export const LOCAL_TABLE_NAME = "petstore-local";
export const LOCAL_HOST = "127.0.0.1";
export const DEFAULT_API_PORT = 3000;
export const DEFAULT_DYNAMODB_PORT = 8000;
export const LOCAL_DATA_DIR = ".data/dynamodb";
export const LOCAL_REGION = "us-east-1";
