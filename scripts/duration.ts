/**
 * The one reading of a duration on the command line (`90s`, `30m`, `1h`, `7d`, `2w`), shared by `keys create
 * --expires-in`, `keys rotate --overlap`, `keys list --unused-for` and `deprecation-report --since`, so that each
 * accepts the same forms and says so in the same words.
 */

/** Seconds per unit; the usage texts and messages name the units from here. */
export const durationUnits: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

const unitList = Object.keys(durationUnits);
const DURATION = new RegExp(`^([0-9]{1,9})([${unitList.join("")}])$`);

/** A command-line value that is not a duration, in one line naming the option and the form it takes. */
export class DurationError extends Error {
  override readonly name = "DurationError";
}

/**
 * Seconds from a whole number and a unit. `option` names the option in the message; `allowZero`: `0s` is a duration too
 * (an overlap of none), which a lifetime or a window cannot be.
 */
export function parseDuration(text: string, option: string, { allowZero = false } = {}): number {
  const match = DURATION.exec(text);
  const seconds = match ? Number(match[1]) * (durationUnits[match[2] as string] as number) : -1;
  if (seconds < 0 || (seconds === 0 && !allowZero)) {
    throw new DurationError(
      `${option} must be a whole number${allowZero ? "" : " above 0"} and a unit, ${unitList.slice(0, -1).join(", ")} or ${unitList.at(-1)} (for example 1h or 30d), not "${text}".`,
    );
  }
  return seconds;
}

/** Seconds as the largest unit that divides them (`604800` → `1w`, `90` → `90s`), for messages. */
export function formatDuration(seconds: number): string {
  if (seconds === 0) return "0s";
  const unit = [...unitList].reverse().find((name) => seconds % (durationUnits[name] as number) === 0) ?? "s";
  return `${seconds / (durationUnits[unit] as number)}${unit}`;
}
