/** The bench's figures: each one says how it was measured and whether it meets its target. */
export interface Target {
  readonly op: "<=" | "<" | "==";
  readonly value: number;
}

export interface Figure {
  /** Stable key, e.g. `bundle.listPets.bytes`. */
  readonly id: string;
  readonly section: string;
  /** The Node version the figure was measured on (`v24.21.0`); absent for bundle sizes, which are
   * esbuild's output whatever Node runs it. */
  readonly runtime?: string;
  readonly label: string;
  readonly value: number;
  readonly unit: string;
  readonly method: string;
  readonly target: Target | null;
  /** null when the figure is informational (no target). */
  readonly pass: boolean | null;
}

export function figure(fields: Omit<Figure, "pass" | "target"> & { target?: Target | null }): Figure {
  const target = fields.target ?? null;
  return { ...fields, target, pass: target === null ? null : meets(fields.value, target) };
}

function meets(value: number, target: Target): boolean {
  switch (target.op) {
    case "<=":
      return value <= target.value;
    case "<":
      return value < target.value;
    case "==":
      return value === target.value;
  }
}

function formatValue(figure: Figure): string {
  const value = Number.isInteger(figure.value) ? figure.value.toLocaleString("en-US") : String(figure.value);
  return figure.unit ? `${value} ${figure.unit}` : value;
}

function formatTarget(target: Target | null): string {
  return target === null ? "" : `${target.op} ${target.value.toLocaleString("en-US")}`;
}

/** A Markdown table, readable on a terminal and pasteable into the README. */
export function markdownTable(figures: readonly Figure[]): string {
  const rows = figures.map((f) => [
    f.section,
    f.runtime ?? "",
    f.label,
    formatValue(f),
    formatTarget(f.target),
    f.pass === null ? "" : f.pass ? "pass" : "FAIL",
  ]);
  const header = ["Section", "Node", "Figure", "Value", "Target", "Result"];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) => `| ${cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

/** Each step's median µs per request, one column per operation and runtime. */
export function stepTable(
  overheads: Record<string, { readonly operations: Record<string, { readonly steps: Record<string, number> }> }>,
): string {
  const columns = Object.entries(overheads).flatMap(([runtime, overhead]) =>
    Object.entries(overhead.operations).map(([operation, result]) => ({
      title: `${operation} ${runtime}`,
      steps: result.steps,
    })),
  );
  // Steps in the order they run: one a route lacks is slotted in after the step that precedes it.
  const names: string[] = [];
  for (const column of columns) {
    let after = -1;
    for (const name of Object.keys(column.steps)) {
      const at = names.indexOf(name);
      if (at === -1) names.splice(after + 1, 0, name);
      after = at === -1 ? after + 1 : at;
    }
  }
  const rows = names.map((name) => [name, ...columns.map((column) => String(column.steps[name] ?? ""))]);
  const header = ["Step", ...columns.map((column) => column.title)];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ")} |`;
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}
