/**
 * `npm run rehearse`: synthesizes each rehearsal configuration (./configurations.ts) and rehearses its deploy offline;
 * `npm run rehearse -- --assembly DIR` rehearses a cloud assembly synthesized elsewhere (for example one whose template
 * was edited by hand). Exit 1 on any failure of the rehearsal; exit 2, with one line, on input it cannot work with (an
 * unknown option, a directory that is not a readable cloud assembly).
 */
import { existsSync } from "node:fs";
import { firstLine, runAsScript } from "../entryPoint";
import { AssemblyArgumentError, AssemblyError, assemblyArguments, readAssembly } from "./assembly";
import type { RehearsalReport } from "./report";

const USAGE = "Usage: npm run rehearse [-- --assembly DIR]";
const HELP = `${USAGE}
Synthesizes each rehearsal configuration and rehearses its deploy offline; with --assembly DIR,
rehearses the cloud assembly in DIR instead (one made with npx cdk synth -o DIR).`;

async function main(args: string[]): Promise<number> {
  const { assembly, help } = assemblyArguments(args);
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
    const { withRehearsalAssemblies } = await import("./synth");
    await withRehearsalAssemblies(async (assemblies) => {
      for (const { configuration, directory } of assemblies) {
        const title = `${configuration.name}: ${configuration.description}`;
        reports.push({ title, report: await rehearseAssembly(directory) });
      }
    });
  }
  for (const { title, report } of reports) console.log(formatReport(title, report));
  console.log(summaryLine(reports.map(({ report }) => report)));
  return reports.some(({ report }) => report.failures.length > 0) ? 1 : 0;
}

await runAsScript(
  import.meta.url,
  main,
  (error) =>
    error instanceof AssemblyArgumentError ? `rehearse: ${error.message}. ${USAGE}` : `rehearse: ${firstLine(error)}`,
  // An assembly that cannot be read is wrong input (2), like a wrong argument; anything else is the rehearsal failing (1).
  (error) => (error instanceof AssemblyArgumentError || error instanceof AssemblyError ? 2 : 1),
);
