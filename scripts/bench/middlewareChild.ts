/**
 * The middleware measurement's process (scripts/bench/middleware.ts).
 *
 * Started by middleware.ts as `<node> --expose-gc --import tsx scripts/bench/middlewareChild.ts
 * <iterations> <warm-up> <rounds>`, with a deployed function's environment and stdout /dev/null:
 * it measures (scripts/bench/middlewareMeasure.ts) and sends the result as JSON on fd 3.
 *
 * Run from a shell, `npx tsx scripts/bench/middlewareChild.ts <iterations> <warm-up> <rounds>
 * [lowest|lambda]…`, it has that measurement made on each pinned Node named (every one by default)
 * and prints each result as a JSON line.
 */
import { writeSync } from "node:fs";
import { MEASURING_CHILD_ENV, RESULT_FD } from "./stdoutCheck";
import { installSteppedClock } from "./steppedClock";

const [iterations, warmup, rounds] = process.argv.slice(2, 5).map(Number);
const runtimeNames = process.argv.slice(5);
const usage =
  "usage: middlewareChild.ts <iterations> <warm-up> <rounds> [lowest|lambda]… (whole numbers; iterations and rounds above 0)";

function countsAreValid(): boolean {
  return (
    Number.isInteger(iterations) &&
    Number.isInteger(warmup) &&
    Number.isInteger(rounds) &&
    (iterations as number) > 0 &&
    (warmup as number) >= 0 &&
    (rounds as number) > 0
  );
}

async function measureHere(): Promise<void> {
  // Before the code under test is loaded: nothing may keep the unstepped Date.now.
  installSteppedClock();
  const { measureInThisProcess } = await import("./middlewareMeasure");
  const result = await measureInThisProcess(iterations as number, warmup as number, rounds as number);
  writeSync(RESULT_FD, JSON.stringify(result));
  // Left to end by itself, as a function's process would; a handle left open must not hold it.
  setTimeout(() => process.exit(0), 5000).unref();
}

async function measureOnPinnedNodes(): Promise<void> {
  const { NODE_VERSIONS, ensureNode } = await import("../nodeVersions");
  const { measureMiddlewareOverheadOn } = await import("./middleware");
  const known = Object.keys(NODE_VERSIONS) as (keyof typeof NODE_VERSIONS)[];
  const names = runtimeNames.length > 0 ? runtimeNames : known;
  const unknown = names.filter((name) => !known.includes(name as keyof typeof NODE_VERSIONS));
  if (unknown.length > 0) throw new Error(`unknown Node version name ${unknown.join(", ")}: use ${known.join(" or ")}`);
  for (const name of names as (keyof typeof NODE_VERSIONS)[]) {
    const node = await ensureNode(NODE_VERSIONS[name]);
    const result = await measureMiddlewareOverheadOn(node, iterations as number, warmup as number, rounds as number);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
}

if (!countsAreValid()) {
  console.error(usage);
  process.exitCode = 2;
} else {
  const measuring = process.env[MEASURING_CHILD_ENV] === "1";
  (measuring ? measureHere() : measureOnPinnedNodes()).catch((error: unknown) => {
    console.error(`middleware bench: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
