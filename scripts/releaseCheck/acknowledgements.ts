/**
 * Acknowledged findings: release-acknowledgements.json, committed with the change so reviewers read the reason. An
 * entry names the stack (`*` matches any characters), logical id, change kind (./compare.ts) and reason; one matching
 * nothing is stale and reported, since it would silently acknowledge the next such change. An unbuildable base is
 * acknowledged by `{ "change": "unbuildable-base", "base": "<commit>", "reason": "..." }`.
 */
import { existsSync, readFileSync } from "node:fs";
import { CHANGE_KINDS, type ChangeKind, type Finding, wildcardPattern } from "./compare";

export const ACKNOWLEDGEMENTS_FILE = "release-acknowledgements.json";

export interface Acknowledgement {
  readonly stack: string;
  readonly logicalId: string;
  readonly change: ChangeKind;
  readonly reason: string;
  /** For `unbuildable-base` only: the base commit (at least 7 hex digits of it) that cannot be built. */
  readonly base?: string;
}

/** The finding of a base commit that cannot be built: no stack, the commit as its logical id. */
export const UNBUILDABLE_BASE = "unbuildable-base" satisfies ChangeKind;

/** A mistake in the acknowledgements file: the check stops with one line (exit 2). */
export class AcknowledgementsError extends Error {}

const ENTRY_KEYS = ["stack", "logicalId", "change", "reason"] as const;
const BASE_ENTRY_KEYS = ["change", "base", "reason"] as const;

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
    const keys: readonly string[] = record.change === UNBUILDABLE_BASE ? BASE_ENTRY_KEYS : ENTRY_KEYS;
    const unknownKeys = Object.keys(record).filter((key) => !keys.includes(key));
    if (unknownKeys.length > 0) {
      throw new AcknowledgementsError(
        `${where} has unknown keys ${unknownKeys.join(", ")}; expected ${keys.join(", ")}.`,
      );
    }
    for (const key of keys) {
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
    if (record.change === UNBUILDABLE_BASE) {
      const base = (record.base as string).trim().toLowerCase();
      if (!/^[0-9a-f]{7,40}$/.test(base)) {
        throw new AcknowledgementsError(`${where} needs "base" to be the commit (7 to 40 hex digits), not "${base}".`);
      }
      return { stack: "", logicalId: "", change: UNBUILDABLE_BASE, base, reason: (record.reason as string).trim() };
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

export const acknowledges = (acknowledgement: Acknowledgement, finding: Finding): boolean =>
  acknowledgement.change === UNBUILDABLE_BASE
    ? finding.change === UNBUILDABLE_BASE && finding.logicalId.startsWith(acknowledgement.base ?? "-")
    : acknowledgement.change === finding.change &&
      acknowledgement.logicalId === finding.logicalId &&
      wildcardPattern(acknowledgement.stack).test(finding.stack);

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
