/**
 * The bench's figures, their targets, and the tables of docs/performance.md they are published in. Every pass or miss
 * is computed here from the figure and its target, and the page's tables are written from the figures
 * (writePerformancePage), never by hand; test/unit/performanceDoc.test.ts recomputes each result from the page.
 */
import { readFile, writeFile } from "node:fs/promises";

export interface Target {
  readonly op: "<=" | "<" | "==";
  readonly value: number;
}

/** Every target the bench checks, in one place: the page's Target column and the test read them here. */
export const TARGETS = {
  /** Bytes of each function's deployed bundle. */
  bundleBytes: { op: "<=", value: 240_000 },
  /** Cold first response, ours / a bare handler built with exactly our options and cuts. */
  coldFloorRatio: { op: "<", value: 1.1 },
  /** Cold first response, ours / a bare handler bundled as CDK's NodejsFunction does by default. */
  coldPeerRatio: { op: "<", value: 0.85 },
  /** Warm added time per request, ours / Powertools Logger + Metrics as documented. */
  warmPeerRatio: { op: "<", value: 0.5 },
  /** Warm added time per request, ours / Powertools made to write what our chain writes. */
  warmEqualPeerRatio: { op: "<", value: 0.4 },
} as const satisfies Record<string, Target>;

export interface Figure {
  /** Stable key, e.g. `coldStart.createPet.floorRatio`. */
  readonly id: string;
  readonly section: string;
  /**
   * The Node version the figure was measured on (`v24.21.0`); absent when it does not depend on Node (bundle sizes are
   * esbuild's output whatever Node runs it).
   */
  readonly runtime?: string;
  readonly label: string;
  /** The median, for a figure measured over rounds. */
  readonly value: number;
  /**
   * For a ratio measured over rounds: the upper quartile of the per-round ratios. When present, it is what the target
   * is judged on, so that a pass is not one lucky median.
   */
  readonly upperQuartile?: number;
  readonly unit: string;
  readonly method: string;
  readonly target: Target | null;
  /** null when the figure is informational (no target). */
  readonly pass: boolean | null;
}

export function figure(fields: Omit<Figure, "pass" | "target"> & { target?: Target | null }): Figure {
  const target = fields.target ?? null;
  return { ...fields, target, pass: judge(fields, target) };
}

/** Whether a figure meets its target: its upper quartile when it has one, else its value. */
export function judge(figure: Pick<Figure, "value" | "upperQuartile">, target: Target | null): boolean | null {
  if (target === null) return null;
  const judged = figure.upperQuartile ?? figure.value;
  switch (target.op) {
    case "<=":
      return judged <= target.value;
    case "<":
      return judged < target.value;
    case "==":
      return judged === target.value;
  }
}

const number = (value: number) => (Number.isInteger(value) ? value.toLocaleString("en-US") : String(value));

export const formatTarget = (target: Target | null) =>
  target === null ? "" : `${target.op} ${target.value.toLocaleString("en-US")}`;

// No label column: the id names the figure, and the page stays short (results.json keeps each label).
export const FIGURE_COLUMNS = ["Node", "Id", "Value", "Upper quartile", "Target", "Result"] as const;

function table(figures: readonly Figure[]): string {
  const rows = figures.map((f) => [
    f.runtime ?? "",
    `\`${f.id}\``,
    f.unit ? `${number(f.value)} ${f.unit}` : number(f.value),
    f.upperQuartile === undefined ? "" : number(f.upperQuartile),
    formatTarget(f.target),
    f.pass === null ? "" : f.pass ? "pass" : "MISS",
  ]);
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  // A row may end early: Markdown tables fill the missing cells with empty ones, and the page stays short.
  const row = (cells: readonly string[]) => line(cells.slice(0, cells.findLastIndex((cell) => cell !== "") + 1));
  return [line(FIGURE_COLUMNS), line(FIGURE_COLUMNS.map(() => "---")), ...rows.map(row)].join("\n");
}

/** One Markdown table per section, under a heading of its own, followed by how its figures were measured. */
export function markdownTables(figures: readonly Figure[]): string {
  const sections = [...new Set(figures.map((f) => f.section))];
  return sections
    .map((section) => {
      const inSection = figures.filter((f) => f.section === section);
      const methods = [...new Set(inSection.map((f) => f.method))].map((method) => `- ${method}`);
      return `### ${section}\n\n${table(inSection)}\n\nHow:\n\n${methods.join("\n")}`;
    })
    .join("\n\n");
}

export const PAGE = "docs/performance.md";
export const PAGE_MARKERS = {
  start: "<!-- Written by npm run bench: do not edit by hand. -->",
  end: "<!-- End of what npm run bench writes. -->",
} as const;

/** Replaces what lies between the page's markers with `generated`. */
export async function writePerformancePage(path: string, generated: string): Promise<void> {
  const page = await readFile(path, "utf8");
  const start = page.indexOf(PAGE_MARKERS.start);
  const end = page.indexOf(PAGE_MARKERS.end);
  if (start < 0 || end < start) throw new Error(`${path} has lost its bench markers; put them back to publish.`);
  const before = page.slice(0, start + PAGE_MARKERS.start.length);
  await writeFile(path, `${before}\n\n${generated}\n\n${page.slice(end)}`);
}

/** A row of the page's tables, as published. */
export interface PublishedFigure {
  readonly node: string;
  readonly id: string;
  readonly value: number;
  readonly upperQuartile: number | undefined;
  readonly target: string;
  readonly result: string;
}

const numberIn = (cell: string) => Number(cell.replace(/,/g, "").split(" ")[0]);

/** Every row of the tables between the page's markers (what writePerformancePage wrote). */
export function readPublishedFigures(page: string): PublishedFigure[] {
  const generated = page.slice(page.indexOf(PAGE_MARKERS.start), page.indexOf(PAGE_MARKERS.end));
  const rows: PublishedFigure[] = [];
  for (const line of generated.split("\n")) {
    if (!line.startsWith("| ") || line.startsWith("| ---") || line.startsWith(`| ${FIGURE_COLUMNS[0]} |`)) continue;
    const cells = line.slice(2, -2).split(" | ");
    const cell = (name: (typeof FIGURE_COLUMNS)[number]) => cells[FIGURE_COLUMNS.indexOf(name)]?.trim() ?? "";
    rows.push({
      node: cell("Node"),
      id: cell("Id").replace(/`/g, ""),
      value: numberIn(cell("Value")),
      upperQuartile: cell("Upper quartile") === "" ? undefined : numberIn(cell("Upper quartile")),
      target: cell("Target"),
      result: cell("Result"),
    });
  }
  return rows;
}
