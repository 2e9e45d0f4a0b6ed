/**
 * Finding what a page could load from elsewhere. Redoc's bundle holds dozens of absolute URLs that
 * are never fetched (XML namespace names, links a reader may click, placeholders in error
 * messages); each kind is listed here with why it is inert. Any other http(s) URL, and any URL that
 * names a file a browser would load (image, style, script, font), counts: a new one fails the test
 * that looks, until someone decides which it is.
 */

const INERT: readonly { readonly pattern: RegExp; readonly why: string }[] = [
  { pattern: /^http:\/\/www\.w3\.org\//, why: "XML namespace names (SVG, XLink, MathML, XHTML)" },
  {
    pattern:
      /^https:\/\/(?:redocly\.com\/(?:learn|docs|docs-legacy|redoc)\/|github\.com\/|react\.dev\/errors\/|reactrouter\.com\/|yarnpkg\.com\/en\/docs\/|en\.wikipedia\.org\/wiki\/|commonmark\.org\/|chatgpt\.com(?:[/?#]|$)|claude\.ai\/)/,
    why: "pages a reader may open by clicking, or that error messages name",
  },
  { pattern: /^https?:\/\/(?:localhost|example\.com)(?:[:/?#]|$)/, why: "placeholders in Redoc's examples" },
  {
    pattern: /^https:\/\/\{apiId\}\.execute-api\.\{region\}\.amazonaws\.com\//,
    why: "this API's deployed servers, as the document lists them",
  },
  { pattern: /^http:\/\/127\.0\.0\.1:\d+\//, why: "this API's local server, as the document lists it" },
];

/** A file a browser fetches to show a page, rather than a page to go to. */
const LOADED_FILE = /\.(?:svg|png|jpe?g|gif|webp|avif|ico|css|m?js|woff2?|ttf|otf|eot|json)(?:[?#]|$)/i;

const ABSOLUTE_URL = /\b(?:https?|wss?):\/\/[^\s"'`<>()\\]+|(?<=["'`(])\/\/[a-z0-9-]+(?:\.[a-z0-9-]+)+\//gi;

/** Every URL in `text` that could be loaded from somewhere other than where the page came from. */
export function outsideUrls(text: string): string[] {
  const found = new Set<string>();
  for (const [url] of text.matchAll(ABSOLUTE_URL)) {
    const inert = !LOADED_FILE.test(url) && INERT.some(({ pattern }) => pattern.test(url));
    if (!inert) found.add(url);
  }
  return [...found].sort();
}
