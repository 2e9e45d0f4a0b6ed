/**
 * The `Link` header (RFC 8288): `<target>; rel="next", <target>; rel="successor-version"`.
 * Only what the API sends is needed (targets and their `rel`), but any valid header parses.
 */
const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^;,]+)*)/g;
const REL_PARAMETER = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i;

/** The target of the first link with relation `rel`, or undefined. */
export function linkTarget(header: string | null, rel: string): string | undefined {
  if (!header) return undefined;
  for (const match of header.matchAll(LINK_VALUE)) {
    const relations = REL_PARAMETER.exec(match[2] ?? "");
    const value = relations?.[1] ?? relations?.[2] ?? "";
    if (value.toLowerCase().split(/\s+/).includes(rel)) return match[1];
  }
  return undefined;
}
