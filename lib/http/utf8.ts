/**
 * Throws on the first byte sequence that is not UTF-8 instead of replacing it with U+FFFD.
 * `ignoreBOM` keeps a leading byte order mark in the text (JSON then refuses it, as it always has).
 */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The text `bytes` spell in UTF-8, or undefined when they are not UTF-8 (RFC 8259 §8.1). */
export function utf8TextOf(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}
