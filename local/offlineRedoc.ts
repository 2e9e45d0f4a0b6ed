/**
 * Redoc (the standalone bundle inside @redocly/cli, behind /docs and `npm run docs`) reaches for
 * Redocly's servers in places no option turns off:
 * - the "API docs by Redocly" badge in the sidebar loads Redocly's logo from their CDN;
 * - its icon component builds CSS image URLs on Redocly's icon CDN (for icons this project's pages
 *   do not use, but any use would go out);
 * - its telemetry posts to Redocly's collector (both pages also set disableTelemetry).
 * The reference must work offline and tell nobody it was opened, so each of these URLs is replaced
 * in the page's text before it is served or written: the logo by an inline picture of the word
 * (the badge keeps its credit), the others by an empty data: URL, which loads nothing.
 * test/support/outsideUrls.ts fails the tests if any other URL that could be loaded appears.
 */

const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="44" height="12" viewBox="0 0 44 12"><text x="0" y="10" font-family="sans-serif" font-size="10" fill="#5f6b7a">Redocly</text></svg>`;
const INLINE_LOGO = `data:image/svg+xml,${encodeURIComponent(LOGO)}`;
/** A data: URL of no content: whatever is appended to it, nothing is fetched. */
const NOTHING = "data:,";

const OUTSIDE_RESOURCES: readonly (readonly [RegExp, string])[] = [
  [/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(?:-full)?\.svg/g, INLINE_LOGO],
  [/https:\/\/cdn\.redocly\.com\/icons\/[\w./-]*/g, NOTHING],
  [/https:\/\/otel\.cloud\.redocly\.com\/v1\/traces/g, NOTHING],
];

/** `text` (Redoc's script, or a page that inlines it) with nothing left to fetch from elsewhere. */
export function withoutOutsideResources(text: string): string {
  return OUTSIDE_RESOURCES.reduce((result, [pattern, replacement]) => result.replace(pattern, replacement), text);
}
