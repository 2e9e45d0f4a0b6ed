/**
 * docs/performance.md publishes figures measured on the Node versions the project supports, and
 * only on those: the ones scripts/nodeVersions.ts pins, which are exactly what `npm run bench`
 * measures on, whatever Node starts it.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BUNDLE_CUTS } from "../../infra/bundling";
import { routeList } from "../../lib/routes";
import { BENCH_RUNTIMES, HOST_RUNTIME } from "../../scripts/bench/runtimes";
import { ensureNode, NODE_VERSIONS } from "../../scripts/nodeVersions";
import { projectRoot } from "../support/processes";

const read = (path: string) => readFileSync(join(projectRoot, path), "utf8");
const page = read("docs/performance.md");
const pinned = Object.values(NODE_VERSIONS).map((version) => `v${version}`);
const pinnedMajors = Object.values(NODE_VERSIONS).map((version) => version.split(".")[0]);

/** The cells of the Markdown table whose header row starts with `| ${firstHeader} `. */
function tableAfter(text: string, firstHeader: string): string[][] {
  const lines = text.split("\n");
  const start = lines.findIndex((line) => line.startsWith(`| ${firstHeader} `));
  if (start < 0) throw new Error(`no table headed ${firstHeader}`);
  const rows: string[][] = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .slice(1, -1)
        .split("|")
        .map((cell) => cell.trim()),
    );
  }
  return rows.filter((_, index) => index !== 1); // the header's --- row
}

const [figureHeader = [], ...figureRows] = tableAfter(page, "Section");
const nodeColumn = figureHeader.indexOf("Node");
const valueColumn = figureHeader.indexOf("Value");
const [stepHeader = []] = tableAfter(page, "Step ");

const figureColumn = figureHeader.indexOf("Figure");
const resultColumn = figureHeader.indexOf("Result");
const rowsOn = (version: string, pattern: RegExp) =>
  figureRows.filter((row) => row[nodeColumn] === version && pattern.test(row[figureColumn] ?? ""));

describe("docs/performance.md's figures", () => {
  const lambdaVersion = `v${NODE_VERSIONS.lambda}`;

  it.each(routeList.map((route) => route.operationId))(
    "give %s's whole cold request against the bare SDK handler, on Lambda's Node, with its target",
    (operation) => {
      const [row, ...others] = rowsOn(lambdaVersion, new RegExp(`^${operation} cold request / the bare SDK handler's`));
      expect(others).toEqual([]);
      expect(row?.[figureHeader.indexOf("Target")]).toBe("<= 0.85");
    },
  );

  it.each(routeList.map((route) => route.operationId))(
    "give %s's ratios against Powertools as documented and writing the same content, on both pinned versions",
    (operation) => {
      for (const version of pinned) {
        expect(rowsOn(version, new RegExp(`^${operation} added / Powertools' \\(as documented\\) added`))).toHaveLength(
          1,
        );
        expect(
          rowsOn(version, new RegExp(`^${operation} added / Powertools' writing the same content added`)),
        ).toHaveLength(1);
      }
    },
  );

  it("list the cuts in the order infra/bundling.ts makes them, each with what the table measured", () => {
    const section = page.slice(page.indexOf("## What each cut saved"));
    const cutRows = tableAfter(section, "Cut").slice(1);
    expect(cutRows.map((row) => row[0])).toEqual(BUNDLE_CUTS.map((cut) => cut.name));
    for (const [index, cut] of BUNDLE_CUTS.entries()) {
      const [figure] = rowsOn(lambdaVersion, new RegExp(`^cut ${index + 1}, ${cut.name}:`));
      const saved = cutRows[index]?.[3]?.replace(" ms", "");
      expect(figure?.[valueColumn]).toBe(`${saved} ms`);
    }
  });

  it("say in words whether the warm chain meets its targets, as the table's results do", () => {
    const stands = page.split("\n\n").find((paragraph) => paragraph.startsWith("Where it stands:")) ?? "";
    const middlewareMissed = figureRows.some((row) => row[0] === "3 Middleware" && row[resultColumn] === "FAIL");
    const coldMissed = figureRows.some((row) => row[0] === "2 Cold start" && row[resultColumn] === "FAIL");
    expect(stands.includes("does not yet meet its targets")).toBe(middlewareMissed);
    expect(stands.includes("every cold request answers faster than the bare SDK handler")).toBe(!coldMissed);
  });
});

describe("docs/performance.md", () => {
  it("names a pinned version for every figure but the bundle sizes, and both pinned versions", () => {
    expect(nodeColumn).toBeGreaterThan(0);
    const named = new Set(figureRows.map((row) => row[nodeColumn]).filter((cell) => cell !== ""));
    expect([...named].sort()).toEqual([...pinned].sort());
    // esbuild's output is the same whatever Node runs it; everything else was measured on one.
    const unnamed = figureRows.filter((row) => row[nodeColumn] === "");
    expect(unnamed.length).toBeGreaterThan(0);
    for (const row of unnamed) expect(row[valueColumn]).toMatch(/^[\d,]+ (B|modules)$/);
  });

  it("breaks the middleware down on both pinned versions", () => {
    const versions = new Set(stepHeader.slice(1).map((title) => /\bv\d+\.\d+\.\d+$/.exec(title)?.[0]));
    expect([...versions].sort()).toEqual([...pinned].sort());
  });

  it("names no other Node version anywhere, in full or by major", () => {
    const full = new Set([...page.matchAll(/\bv\d+\.\d+\.\d+\b/g)].map((match) => match[0]));
    expect([...full].filter((version) => !pinned.includes(version))).toEqual([]);
    const majors = new Set([...page.matchAll(/\bNode(?:\.js)? v?(\d+)\b/g)].map((match) => match[1]));
    expect([...majors].filter((major) => !pinnedMajors.includes(major as string))).toEqual([]);
  });

  it("says in the latest run's paragraph which versions it ran on", () => {
    const latest = page.split("\n\n").find((paragraph) => paragraph.startsWith("Latest run:"));
    for (const version of pinned) expect(latest).toContain(version);
  });

  it("is what docs/testing.md says the bench measures on", () => {
    const row = read("docs/testing.md")
      .split("\n")
      .find((line) => line.startsWith("| `npm run bench` |"));
    const majors = [...(row ?? "").matchAll(/\bNode (\d+)(?: and (\d+))?/g)].flatMap((match) =>
      match.slice(1).filter(Boolean),
    );
    expect(majors.sort()).toEqual([...pinnedMajors].sort());
  });
});

/** Runs the bench with `node` (tsx as its loader) and bad input, which ends it before it measures anything. */
async function benchWithBadInput(node: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(node, ["--import", "tsx", "scripts/bench/run.ts"], {
    cwd: projectRoot,
    env: { ...process.env, BENCH_DURATION: "soon" },
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, output };
}

describe("npm run bench", () => {
  it("measures on exactly the pinned versions, the lowest in its own process", () => {
    expect(BENCH_RUNTIMES.map((runtime) => runtime.version)).toEqual(pinned);
    expect(HOST_RUNTIME.version).toBe(`v${NODE_VERSIONS.lowest}`);
    // Each version's figures get ids of their own in .bench/results.json.
    expect(new Set(BENCH_RUNTIMES.map((runtime) => runtime.idPart)).size).toBe(BENCH_RUNTIMES.length);
  });

  it("started on another Node, runs itself once on the lowest", { timeout: 60_000 }, async () => {
    const { code, output } = await benchWithBadInput(await ensureNode(NODE_VERSIONS.lambda));
    // The run on the lowest is the one that reads the settings: one that was not would start again.
    expect(output.match(/started on Node/g)).toEqual(["started on Node"]);
    expect(output).toContain(`started on Node v${NODE_VERSIONS.lambda}; the bench runs on v${NODE_VERSIONS.lowest}`);
    expect(output).toContain('bench: BENCH_DURATION must be a number above 0, not "soon".');
    expect(code).toBe(1);
  });

  it("answers bad input with one line and exit code 1", { timeout: 60_000 }, async () => {
    const { code, output } = await benchWithBadInput(await ensureNode(NODE_VERSIONS.lowest));
    expect(output.trim()).toBe('bench: BENCH_DURATION must be a number above 0, not "soon".');
    expect(code).toBe(1);
  });
});

describe("every published page", () => {
  const pages = [
    "README.md",
    "client/README.md",
    ...readdirSync(join(projectRoot, "docs"))
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name}`),
  ];
  /** Each sentence of a page that names a Node.js version (`Node 24`, `Node.js 22.19.0`, `Node v22.19.0`). */
  const sentencesNamingNode = pages.flatMap((path) =>
    read(path)
      .split(/(?<=[.!?])\s+|\n\n/)
      .filter((sentence) => /\bNode(?:\.js)? v?\d/.test(sentence))
      .map((sentence) => ({ path, sentence })),
  );

  it("names a Node.js major the project does not support only to say it has reached its end of life", () => {
    const unsupported = sentencesNamingNode.filter(
      ({ sentence }) =>
        [...sentence.matchAll(/\bNode(?:\.js)? v?(\d+)/g)].some(
          (match) => !pinnedMajors.includes(match[1] as string),
        ) && !/end of (its )?life/.test(sentence),
    );

    expect(unsupported).toEqual([]);
  });

  it("gives figures measured on a full Node.js version only for a pinned one", () => {
    const measuredOn = pages.flatMap((path) =>
      [...read(path).matchAll(/\bNode(?:\.js)? (v?\d+\.\d+\.\d+)/g)].map((match) => ({
        path,
        version: (match[1] as string).replace(/^v?/, "v"),
      })),
    );

    expect(measuredOn.filter(({ version }) => !pinned.includes(version))).toEqual([]);
    expect(measuredOn.map(({ path }) => path)).toEqual(
      expect.arrayContaining(["docs/capacity.md", "docs/reliability.md"]),
    );
  });
});
