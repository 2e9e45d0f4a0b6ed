/**
 * The curl loop of docs/api.md ("List pets"), run as the page gives it against the local server:
 * following `Link: rel="next"` it must collect every pet once, in order, a full page at a time.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pet } from "../../lib/contract/schemas";
import type { LocalApi } from "../../local/server";
import { fetchJson, issueTestKey, startTestApi } from "../support/api";

const run = promisify(execFile);
const guide = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
const listSection = guide.slice(guide.indexOf("## List pets"), guide.indexOf("## Create a pet"));
/** The section's shell block that follows rel="next". */
const loop = [...listSection.matchAll(/```sh\n([\s\S]*?)```/g)]
  .map((match) => match[1] as string)
  .find((block) => block.includes('rel="next"'));
if (!loop) throw new Error('docs/api.md\'s "List pets" has no shell block following rel="next"');
/** The page size the loop asks for, read from the loop itself. */
const pageSize = Number(/[?&]limit=(\d+)/.exec(loop)?.[1]);

let api: LocalApi;
let key: string;
let folder: string;
const created: Pet[] = [];

beforeAll(async () => {
  api = await startTestApi();
  // A synthetic key lists only the pets it created: the test's pets alone, whatever else the table holds.
  key = (await issueTestKey("curl paging", { synthetic: true })).key;
  // Two full pages and a short last one.
  for (let i = 0; i < 2 * pageSize + 3; i++) {
    const response = await fetchJson(`${api.baseUrl}/pets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: `paged ${i}`, categoryId: 1 }),
    });
    created.push(response.json as Pet);
  }
  folder = mkdtempSync(join(tmpdir(), "petstore-paging-"));
  writeFileSync(join(folder, "all-pages.sh"), loop);
});
afterAll(async () => {
  await api?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe("the curl loop of docs/api.md that follows Link", () => {
  it.each(["sh", "bash"])("collects every pet once, in order, in full pages, run by %s", async (shell) => {
    const { stdout, stderr } = await run(shell, [join(folder, "all-pages.sh")], {
      cwd: folder,
      env: { PATH: process.env.PATH, BASE: api.baseUrl, KEY: key },
      timeout: 30_000,
    });

    const pages = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Pet[]);
    expect(stderr).toBe("");
    expect(pages.map((page) => page.length)).toEqual([pageSize, pageSize, 3]);
    expect(pages.flat()).toEqual(created);
  });
});
