/**
 * `npm run rehearse`: synthesizes each rehearsal configuration (./configurations.ts) and rehearses its deploy offline;
 * `npm run rehearse -- --assembly DIR` rehearses a cloud assembly synthesized elsewhere (for example one whose template
 * was edited by hand). Exit 1 on any failure of the rehearsal; exit 2, with one line, on input it cannot work with (an
 * unknown option, a directory that is not a readable cloud assembly).
 */
import { existsSync, rmSync } from "node:fs";
import { parseArgs } from "node:util";
import { silenceSdkNodeVersionWarning } from "../../local/settings";
import { AssemblyError, readAssembly } from "./assembly";
import type { RehearsalReport } from "./report";

const USAGE = "Usage: npm run rehearse [-- --assembly DIR]";
const HELP = `${USAGE}
Synthesizes each rehearsal configuration and rehearses its deploy offline; with --assembly DIR,
rehearses the cloud assembly in DIR instead (one made with npx cdk synth -o DIR).`;

/** Wrong input, told in one line; exit 2. */
class UsageError extends Error {}

function parseArguments(args: string[]): { assembly?: string; help: boolean } {
  try {
    const { values } = parseArgs({
      args,
      options: { assembly: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    if (values.assembly === "") throw new UsageError("--assembly needs a directory");
    return { assembly: values.assembly, help: values.help ?? false };
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const { code, message } = error as Error & { code?: string };
    // `--assembly` last, or followed by another option: parseArgs calls the value missing or ambiguous.
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && message.includes("'--assembly")) {
      throw new UsageError("--assembly needs a directory");
    }
    // parseArgs's own messages ("Unknown option '--bogus'"); a few span lines, the first says it.
    const [firstLine = ""] = message.split("\n");
    throw new UsageError(firstLine.replace(/\.$/, ""));
  }
}

async function main(args: string[]): Promise<number> {
  const { assembly, help } = parseArguments(args);
  if (help) {
    console.log(HELP);
    return 0;
  }
  if (assembly) {
    if (!existsSync(assembly)) {
      console.error(`rehearse: ${assembly} does not exist; synthesize a cloud assembly first (npx cdk synth -o DIR)`);
      return 2;
    }
    // Refused before anything starts: a directory that is not a readable cloud assembly is wrong input (AssemblyError,
    // exit 2), however far the rehearsal would have got.
    readAssembly(assembly);
  }
  // Loaded only now: the CDK app and the rehearsal take seconds to load, which --help and a wrong argument need not
  // wait for.
  const [{ rehearseAssembly }, { formatReport, summaryLine }] = await Promise.all([
    import("./rehearse"),
    import("./report"),
  ]);
  const reports: { title: string; report: RehearsalReport }[] = [];
  if (assembly) {
    reports.push({ title: assembly, report: await rehearseAssembly(assembly) });
  } else {
    const [{ rehearsalConfigurations }, { synthesizeAll }] = await Promise.all([
      import("./configurations"),
      import("./synth"),
    ]);
    const directories = synthesizeAll(rehearsalConfigurations);
    try {
      for (const configuration of rehearsalConfigurations) {
        reports.push({
          title: `${configuration.name}: ${configuration.description}`,
          report: await rehearseAssembly(directories.get(configuration.name) as string),
        });
      }
    } finally {
      // Every configuration's copy, also those a failed rehearsal never reached.
      for (const directory of directories.values()) rmSync(directory, { recursive: true, force: true });
    }
  }
  for (const { title, report } of reports) console.log(formatReport(title, report));
  console.log(summaryLine(reports.map(({ report }) => report)));
  return reports.some(({ report }) => report.failures.length > 0) ? 1 : 0;
}

silenceSdkNodeVersionWarning();
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`rehearse: ${error.message}. ${USAGE}`);
      process.exitCode = 2;
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    console.error(`rehearse: ${message.split("\n")[0]}`);
    // An assembly that cannot be read is wrong input (2), like a wrong argument; anything else is the rehearsal failing
    // (1).
    process.exitCode = error instanceof AssemblyError ? 2 : 1;
  },
);
