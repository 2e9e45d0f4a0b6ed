/**
 * Acknowledged findings: release-acknowledgements.json at the project root, committed with the change
 * it acknowledges, so that a reviewer reads the reason in the pull request and the approver in the
 * run's summary. An entry names the stack (CloudFormation name; `*` matches any characters, so
 * `*-PetStoreData` covers both stages), the logical id, the kind of change (./compare.ts) and a
 * reason. An entry that matches no finding is reported as stale: once production runs the change,
 * remove it, or it would silently acknowledge the next such change to the same resource.
 */
import { existsSync, readFileSync } from "node:fs";
import { CHANGE_KINDS, type ChangeKind, type Finding } from "./compare";

export const ACKNOWLEDGEMENTS_FILE = "release-acknowledgements.json";

export interface Acknowledgement {
  readonly stack: string;
  readonly logicalId: string;
  readonly change: ChangeKind;
  readonly reason: string;
}

/** A mistake in the acknowledgements file: the check stops with one line (exit 2). */
export class AcknowledgementsError extends Error {}

const ENTRY_KEYS = ["stack", "logicalId", "change", "reason"] as const;

export function parseAcknowledgements(text: string, file = ACKNOWLEDGEMENTS_FILE): Acknowledgement[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AcknowledgementsError(`${file} is not valid JSON.`);
  }
  const list = (parsed as { acknowledgements?: unknown } | null)?.acknowledgements;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed) || !Array.isArray(list)) {
    throw new AcknowledgementsError(`${file} must be an object with an "acknowledgements" list.`);
  }
  return list.map((entry: unknown, index) => {
    const where = `${file}, acknowledgement ${index + 1}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new AcknowledgementsError(`${where} is not an object.`);
    }
    const record = entry as Record<string, unknown>;
    const unknownKeys = Object.keys(record).filter((key) => !(ENTRY_KEYS as readonly string[]).includes(key));
    if (unknownKeys.length > 0) {
      throw new AcknowledgementsError(
        `${where} has unknown keys ${unknownKeys.join(", ")}; expected ${ENTRY_KEYS.join(", ")}.`,
      );
    }
    for (const key of ENTRY_KEYS) {
      const value = record[key];
      if (typeof value !== "string" || value.trim() === "") {
        throw new AcknowledgementsError(`${where} needs a non-empty "${key}".`);
      }
    }
    if (!(CHANGE_KINDS as readonly string[]).includes(record.change as string)) {
      throw new AcknowledgementsError(
        `${where} has change "${record.change}"; expected one of ${CHANGE_KINDS.join(", ")}.`,
      );
    }
    return {
      stack: record.stack as string,
      logicalId: record.logicalId as string,
      change: record.change as ChangeKind,
      reason: (record.reason as string).trim(),
    };
  });
}

/** The project's acknowledgements; none when the file does not exist. */
export function readAcknowledgements(path: string): Acknowledgement[] {
  return existsSync(path) ? parseAcknowledgements(readFileSync(path, "utf8")) : [];
}

const stackPattern = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split("*")
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*")}$`,
  );

export const acknowledges = (acknowledgement: Acknowledgement, finding: Finding): boolean =>
  acknowledgement.change === finding.change &&
  acknowledgement.logicalId === finding.logicalId &&
  stackPattern(acknowledgement.stack).test(finding.stack);

export interface Verdict {
  /** Findings no acknowledgement covers: the release fails. */
  readonly failing: Finding[];
  readonly acknowledged: { finding: Finding; acknowledgement: Acknowledgement }[];
  /** Acknowledgements that match no finding. */
  readonly stale: Acknowledgement[];
}

export function judge(findings: readonly Finding[], acknowledgements: readonly Acknowledgement[]): Verdict {
  const failing: Finding[] = [];
  const acknowledged: Verdict["acknowledged"] = [];
  const used = new Set<Acknowledgement>();
  for (const finding of findings) {
    const acknowledgement = acknowledgements.find((candidate) => acknowledges(candidate, finding));
    if (acknowledgement) {
      used.add(acknowledgement);
      acknowledged.push({ finding, acknowledgement });
    } else {
      failing.push(finding);
    }
  }
  return { failing, acknowledged, stale: acknowledgements.filter((candidate) => !used.has(candidate)) };
}
