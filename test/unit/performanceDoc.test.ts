/**
 * docs/performance.md's tables are written by `npm run bench` (scripts/bench/report.ts). These
 * tests hold the page to that: every pass or miss recomputed from the published value and target,
 * every target the one the bench checks, every operation compared on every pinned Node.
 */
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { routeList } from "../../lib/routes";
import {
  FIGURE_COLUMNS,
  formatTarget,
  judge,
  PAGE_MARKERS,
  readPublishedFigures,
  TARGETS,
  type Target,
} from "../../scripts/bench/report";
import { BENCH_RUNTIMES, HOST_RUNTIME } from "../../scripts/bench/runtimes";
import { ensureNode, NODE_VERSIONS } from "../../scripts/nodeVersions";
import { projectRoot } from "../support/processes";

const read = (path: string) => readFileSync(join(projectRoot, path), "utf8");
const page = read("docs/performance.md");
const pinned = Object.values(NODE_VERSIONS).map((version) => `v${version}`);
const pinnedMajors = Object.values(NODE_VERSIONS).map((version) => version.split(".")[0]);

/** The target the bench holds each kind of figure to, by its id. */
function targetOf(id: string): Target | undefined {
  if (routeList.some((route) => id === `bundle.${route.operationId}.bytes`)) return TARGETS.bundleBytes;
  if (/^coldStart\..*\.floorRatio$/.test(id)) return TARGETS.coldFloorRatio;
  if (/^coldStart\..*\.peerRatio$/.test(id)) return TARGETS.coldPeerRatio;
  if (/\.equalPeerRatio$/.test(id)) return TARGETS.warmEqualPeerRatio;
  if (/\.peerRatio$/.test(id)) return TARGETS.warmPeerRatio;
  return undefined;
}

const rows = readPublishedFigures(page);
const operations = routeList.map((route) => route.operationId);
const onNode = (version: string, pattern: RegExp) => rows.filter((row) => row.node === version && pattern.test(row.id));

describe("docs/performance.md's tables", () => {
  it("are there, between the markers the bench writes between, each headed by the bench's columns", () => {
    const generated = page.slice(page.indexOf(PAGE_MARKERS.start), page.indexOf(PAGE_MARKERS.end));
    const headers = generated.split("\n").filter((line) => line.startsWith(`| ${FIGURE_COLUMNS[0]} |`));
    expect(headers.length).toBeGreaterThan(0);
    for (const header of headers) expect(header).toBe(`| ${FIGURE_COLUMNS.join(" | ")} |`);
    expect(page.indexOf(PAGE_MARKERS.start)).toBeGreaterThan(0);
    expect(page.indexOf(PAGE_MARKERS.end)).toBeGreaterThan(page.indexOf(PAGE_MARKERS.start));
    expect(rows.length).toBeGreaterThan(20);
    expect(new Set(rows.map((row) => `${row.node} ${row.id}`)).size).toBe(rows.length);
  });

  it("give every figure with a target the target the bench checks, and no target to any other", () => {
    for (const row of rows) {
      const target = targetOf(row.id);
      expect({ id: row.id, target: row.target }).toEqual({ id: row.id, target: formatTarget(target ?? null) });
    }
  });

  it("say pass or miss exactly as the published value and target do, judged on the upper quartile", () => {
    for (const row of rows.filter((candidate) => candidate.target !== "")) {
      const verdict = judge(row, targetOf(row.id) ?? null);
      expect({ id: row.id, node: row.node, result: row.result }).toEqual({
        id: row.id,
        node: row.node,
        result: verdict ? "pass" : "MISS",
      });
    }
  });

  it("give every ratio measured over rounds its upper quartile", () => {
    for (const row of rows.filter((candidate) => /Ratio$/.test(candidate.id))) {
      expect({ id: row.id, upperQuartile: row.upperQuartile }).toEqual({
        id: row.id,
        upperQuartile: expect.any(Number),
      });
    }
  });

  it.each([...operations, "createPetIdempotent"])(
    "compare %s's cold first response with both bare handlers on every pinned Node",
    (operation) => {
      for (const version of pinned) {
        expect(onNode(version, new RegExp(`^coldStart\\..*\\b${operation}\\.floorRatio$`))).toHaveLength(1);
        expect(onNode(version, new RegExp(`^coldStart\\..*\\b${operation}\\.peerRatio$`))).toHaveLength(1);
      }
    },
  );

  it.each(operations)("compare %s's warm chain with both Powertools peers on every pinned Node", (operation) => {
    for (const version of pinned) {
      expect(onNode(version, new RegExp(`^(?!coldStart).*\\b${operation}\\.peerRatio$`))).toHaveLength(1);
      expect(onNode(version, new RegExp(`^(?!coldStart).*\\b${operation}\\.equalPeerRatio$`))).toHaveLength(1);
    }
  });

  it.each(operations)("give %s's deployed bundle size, whatever Node built it", (operation) => {
    expect(rows.filter((row) => row.id === `bundle.${operation}.bytes` && row.node === "")).toHaveLength(1);
  });

  it("name exactly the pinned versions, in the figures and in the latest run's summary", () => {
    expect([...new Set(rows.map((row) => row.node).filter(Boolean))].sort()).toEqual([...pinned].sort());
    const latest = page.split("\n\n").find((paragraph) => paragraph.startsWith("Latest run:"));
    for (const version of pinned) expect(latest).toContain(version);
  });
});

describe("a figure's verdict", () => {
  const target = TARGETS.coldPeerRatio;

  it("is a miss when the median passes but the upper quartile of the rounds does not", () => {
    expect(judge({ value: target.value - 0.05, upperQuartile: target.value + 0.01 }, target)).toBe(false);
    expect(judge({ value: target.value - 0.05, upperQuartile: target.value - 0.01 }, target)).toBe(true);
  });

  it("is judged on the value when there are no rounds, and is none without a target", () => {
    expect(judge({ value: TARGETS.bundleBytes.value }, TARGETS.bundleBytes)).toBe(true);
    expect(judge({ value: TARGETS.bundleBytes.value + 1 }, TARGETS.bundleBytes)).toBe(false);
    expect(judge({ value: 1 }, null)).toBeNull();
  });
});

/** Runs the bench with `node` (tsx as its loader) and bad input, which ends it before it measures anything. */
async function benchWithBadInput(node: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(node, ["--import", "tsx", "scripts/bench/run.ts"], {
    cwd: projectRoot,
    env: { ...process.env, BENCH_COLD_ROUNDS: "soon" },
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
  const badInput = 'bench: BENCH_COLD_ROUNDS must be a whole number of at least 4, not "soon".';

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
    expect(output).toContain(badInput);
    expect(code).toBe(1);
  });

  it("answers bad input with one line and exit code 1", { timeout: 60_000 }, async () => {
    const { code, output } = await benchWithBadInput(await ensureNode(NODE_VERSIONS.lowest));
    expect(output.trim()).toBe(badInput);
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
