/** The deployment settings the docs tell a team to commit, read from the docs themselves. */
import { readFileSync } from "node:fs";

/** The settings a document shows for cdk.json's "context" (its first such block). */
export function documentedSettings(doc: string): Record<string, string> {
  const text = readFileSync(new URL(`../../${doc}`, import.meta.url), "utf8");
  const block = /```jsonc\n\/\/ cdk\.json, "context"\n([\s\S]*?)```/.exec(text)?.[1];
  if (!block) throw new Error(`${doc} shows no cdk.json context example`);
  return JSON.parse(`{${block}}`) as Record<string, string>;
}
