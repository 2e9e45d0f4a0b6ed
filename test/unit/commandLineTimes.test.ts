/** The durations and times the keys and deprecation-report commands read (scripts/duration.ts, keys --expires-at). */
import { describe, expect, it } from "vitest";
import { DurationError, formatDuration, parseDuration } from "../../scripts/duration";
import { parseExpiresAt, UsageError } from "../../scripts/keys";

describe("a duration on the command line", () => {
  it.each([
    ["90s", 90],
    ["15m", 900],
    ["1h", 3600],
    ["7d", 604_800],
    ["2w", 1_209_600],
    ["999999999s", 999_999_999],
  ])("reads %s as %i seconds", (text, seconds) => {
    expect(parseDuration(text, "--since")).toBe(seconds);
  });

  it.each(["0s", "0d", "1", "d", "1.5h", "-1h", "1y", "1 h", " 1h", "1H", "", "1h30m", "1000000000s"])(
    'refuses "%s", naming the option and the form it takes',
    (text) => {
      const parse = () => parseDuration(text, "--unused-for");

      expect(parse).toThrow(DurationError);
      expect(parse).toThrow(
        `--unused-for must be a whole number above 0 and a unit, s, m, h, d or w (for example 1h or 30d), not "${text}".`,
      );
    },
  );

  it("takes 0 where none is a duration (a rotation's overlap), and says so when refusing another value", () => {
    expect(parseDuration("0s", "--overlap", { allowZero: true })).toBe(0);
    expect(parseDuration("0w", "--overlap", { allowZero: true })).toBe(0);
    expect(() => parseDuration("-1s", "--overlap", { allowZero: true })).toThrow(
      '--overlap must be a whole number and a unit, s, m, h, d or w (for example 1h or 30d), not "-1s".',
    );
  });

  it.each([
    [0, "0s"],
    [90, "90s"],
    [3600, "1h"],
    [30 * 86_400, "30d"],
    [604_800, "1w"],
  ])("writes %i seconds as %s, which it reads back", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
    expect(parseDuration(text, "--x", { allowZero: true })).toBe(seconds);
  });
});

describe("keys create --expires-at", () => {
  const now = new Date("2026-12-01T12:00:00Z");

  it.each([
    ["2027-03-01", "2027-03-01T00:00:00.000Z"],
    ["2027-03-01T00:00:00Z", "2027-03-01T00:00:00.000Z"],
    ["2027-03-01T09:30+01:00", "2027-03-01T08:30:00.000Z"],
    ["2026-12-01T12:00:01.250Z", "2026-12-01T12:00:01.250Z"],
    ["2028-02-29", "2028-02-29T00:00:00.000Z"],
  ])("reads %s as %s", (text, iso) => {
    expect(parseExpiresAt(text, now).toISOString()).toBe(iso);
  });

  it.each([
    "2027-02-30",
    "2027-02-29",
    "2027-13-01",
    "2027-03-01T00:00:00",
    "2027-03-01T24:00Z",
    "2027-03-01 00:00Z",
    "next week",
    "1767225600",
  ])('refuses "%s": no calendar day, or no zone, in one line', (text) => {
    const parse = () => parseExpiresAt(text, now);

    expect(parse).toThrow(UsageError);
    expect(parse).toThrow(
      `--expires-at must be a date-time with a zone, such as 2027-03-01T00:00:00Z, or a date, 2027-03-01 (00:00 UTC), not "${text}".`,
    );
  });

  it.each(["2026-12-01T12:00:00Z", "2026-12-01", "2020-01-01"])("refuses %s, which is not in the future", (text) => {
    expect(() => parseExpiresAt(text, now)).toThrow(/^--expires-at must be in the future; \S+ has passed\.$/);
  });
});
