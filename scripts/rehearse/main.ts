/**
 * `npm run rehearse`: synthesizes each rehearsal configuration (./configurations.ts) and rehearses
 * its deploy offline; `npm run rehearse -- --assembly DIR` rehearses a cloud assembly synthesized
 * elsewhere (for example one whose template was edited by hand). Exit 1 on any failure.
 */
import { existsSync, rmSync } from "node:fs";
import { silenceSdkNodeVersionWarning } from "../../local/settings";
import { AssemblyError } from "./assembly";
import { rehearsalConfigurations } from "./configurations";
import { type RehearsalReport, rehearseAssembly } from "./rehearse";
import { formatReport, summaryLine } from "./report";
import { synthesizeAll } from "./synth";

const USAGE = "Usage: npm run rehearse [-- --assembly DIR]";

async function main(args: string[]): Promise<number> {
  let assembly: string | undefined;
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index];
    if (arg === "--assembly" && args[index + 1]) assembly = args[++index];
    else if (arg === "--help" || arg === "-h") {
      console.log(USAGE);
      return 0;
    } else {
      console.error(`rehearse: unknown argument ${arg}. ${USAGE}`);
      return 2;
    }
  }
  const reports: { title: string; report: RehearsalReport }[] = [];
  if (assembly) {
    if (!existsSync(assembly)) {
      console.error(`rehearse: ${assembly} does not exist; synthesize a cloud assembly first (npx cdk synth -o DIR)`);
      return 2;
    }
    reports.push({ title: assembly, report: await rehearseAssembly(assembly) });
  } else {
    const directories = synthesizeAll(rehearsalConfigurations);
    for (const configuration of rehearsalConfigurations) {
      const directory = directories.get(configuration.name) as string;
      try {
        reports.push({
          title: `${configuration.name}: ${configuration.description}`,
          report: await rehearseAssembly(directory),
        });
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
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
    console.error(
      `rehearse: ${error instanceof AssemblyError ? error.message : error instanceof Error ? error.message : String(error)}`,
    );
    process.exitCode = 1;
  },
);
