/**
 * Just enough YAML to read the structure of our workflow files without a YAML dependency: nested
 * block mappings (`key: value` or `key:` followed by more indented lines). Sequences, flow
 * collections and block scalars are left as raw text inside their parent's block. Anything it does
 * not understand at the indentation it reads throws, so a test never passes by misreading.
 */

export interface YamlEntry {
  /** The text after `key:` on the same line, without a trailing comment. */
  readonly value: string;
  /** The more indented lines under the key. */
  readonly block: readonly string[];
}

const indentOf = (line: string): number => line.length - line.trimStart().length;
const isSkippable = (line: string): boolean => line.trim() === "" || line.trimStart().startsWith("#");

/** The entries of the block mapping made of `lines` (all at one indentation and deeper). */
export function mappingOf(lines: readonly string[]): Map<string, YamlEntry> {
  const entries = new Map<string, { value: string; block: string[] }>();
  const first = lines.find((line) => !isSkippable(line));
  if (first === undefined) return entries;
  const indent = indentOf(first);
  let current: { value: string; block: string[] } | undefined;
  for (const line of lines) {
    if (isSkippable(line)) {
      current?.block.push(line);
      continue;
    }
    if (indentOf(line) > indent && current) {
      current.block.push(line);
      continue;
    }
    const match = /^\s*([A-Za-z0-9_.-]+):(?:\s+(.*?))?\s*$/.exec(line.replace(/\s+#\s.*$/, ""));
    if (indentOf(line) !== indent || !match?.[1]) throw new Error(`not a block mapping entry: ${JSON.stringify(line)}`);
    current = { value: match[2] ?? "", block: [] };
    entries.set(match[1], current);
  }
  return entries;
}

/** The mapping found by following `path` from the top of a YAML document. */
export function mappingAt(text: string, path: readonly string[]): Map<string, YamlEntry> {
  let mapping = mappingOf(text.split("\n"));
  for (const key of path) {
    const entry = mapping.get(key);
    if (!entry) throw new Error(`no "${key}" in path ${path.join(".")}`);
    mapping = mappingOf(entry.block);
  }
  return mapping;
}
