import { fileURLToPath } from "node:url";

export const projectRoot = fileURLToPath(new URL("../../", import.meta.url));
/** Generated, git-ignored. */
export const distDir = `${projectRoot}dist`;
export const openApiFile = `${distDir}/openapi.json`;
export const docsPage = `${distDir}/docs/index.html`;
