/**
 * The middleware measurement in a process of its own, for another Node than the bench's: run as
 * `<node> --import tsx scripts/bench/middlewareChild.ts <iterations> <warm-up> <rounds>` (the same loader
 * the bench itself runs under), it prints the result as one JSON line.
 */
import { measureMiddlewareOverhead } from "./middleware";

const [iterations, warmup, rounds] = process.argv.slice(2).map(Number);
if (!Number.isInteger(iterations) || !Number.isInteger(warmup) || !Number.isInteger(rounds)) {
  console.error("usage: middlewareChild.ts <iterations> <warm-up> <rounds>");
  process.exit(2);
}
const result = await measureMiddlewareOverhead(iterations as number, warmup as number, rounds as number);
process.stdout.write(`${JSON.stringify(result)}\n`);
