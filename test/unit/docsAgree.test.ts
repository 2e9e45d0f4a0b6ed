/**
 * What the README and docs/ claim, checked where a test can: links land on headings that exist, the
 * one-time delivery set-up runs in an order that works, the documented values and commands are
 * the ones the code accepts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { logLevels } from "../../lib/observability/logger";
import { SYNTHETIC_PET_RETENTION_SECONDS } from "../../lib/pets/collection";
import { START_USAGE } from "../../local/startOptions";
import { parseKeysArguments } from "../../scripts/keys";
import { NODE_VERSIONS } from "../../scripts/nodeVersions";
import { parseStageArguments, stageNames } from "../../scripts/stageCommand";
import { usage as urlUsage } from "../../scripts/url";
import { projectRoot } from "../support/processes";

const read = (path: string) => readFileSync(join(projectRoot, path), "utf8");
const documents = ["README.md", ...readdirSync(join(projectRoot, "docs")).map((name) => `docs/${name}`)].filter(
  (path) => path.endsWith(".md"),
);

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^\p{L}\p{N} -]/gu, "")
    .replaceAll(" ", "-");

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchorsOf(text: string): Set<string> {
  const withoutCode = text.replace(/```[\s\S]*?```/g, "");
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] as string)));
}

/** Section `heading` (a `###` line starting with it) of a document, up to the next heading of its level or above. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}`);
  if (start < 0) throw new Error(`no section ${heading}`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

describe("the docs agree with each other and with the code", () => {
  it.each(documents)("%s: every link to a Markdown file's heading lands on a heading that exists", (path) => {
    const text = read(path);
    const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
    const links = [...text.matchAll(/\]\(([^)\s]*?)#([^)\s]+)\)/g)].map((match) => ({
      file: match[1] ? join(folder, match[1]) : path,
      anchor: match[2] as string,
    }));
    const broken = links.filter(({ file, anchor }) => {
      if (!file.endsWith(".md")) return false;
      try {
        return !anchorsOf(read(file)).has(anchor);
      } catch {
        return true;
      }
    });

    expect(broken).toEqual([]);
  });

  it("delivery.md's one-time set-up creates the environments, then the account stack, then the stages", () => {
    const setUp = section(read("docs/delivery.md"), "One-time set-up");
    const at = (marker: string) => {
      const index = setUp.indexOf(marker);
      expect(index, marker).toBeGreaterThan(-1);
      return index;
    };

    const settings = at('"prod:account"');
    const bootstrap = at("npx cdk bootstrap");
    const environments = at("### 4. Create the GitHub environments");
    const stagingAccount = at("npx cdk deploy 'PetStore-Account-*Staging*'");
    const staging = at("npx cdk deploy 'Staging/*'");
    const productionAccount = at("npx cdk deploy 'PetStore-Account-*Production*'");
    const production = at("npx cdk deploy 'Production/*'");

    expect(settings).toBeLessThan(bootstrap);
    expect(environments).toBeLessThan(stagingAccount);
    expect(stagingAccount).toBeLessThan(staging);
    expect(staging).toBeLessThan(productionAccount);
    expect(productionAccount).toBeLessThan(production);
    // No key secret to make: the pipeline mints its smoke key (test/unit/pipelineSmokeKey.test.ts).
    expect(setUp).not.toContain("gh secret set");
    expect(setUp).not.toContain("../README.md#deploy");
  });

  it("deploy.md refers to its own section on what a destroy leaves behind", () => {
    const deploy = read("docs/deploy.md");

    expect(deploy).toContain("[What a destroy leaves behind](#9-what-a-destroy-leaves-behind)");
    expect(deploy).not.toContain("the README's \"What a destroy leaves");
  });

  it("the README lists every LOG_LEVEL the functions accept", () => {
    const row = read("README.md")
      .split("\n")
      .find((line) => line.startsWith("| `LOG_LEVEL` |"));

    expect([...(row ?? "").matchAll(/`([A-Z]+)`/g)].map((match) => match[1]).slice(1)).toEqual([...logLevels]);
  });

  it("the README tells a staging tester how they get a key, with keys commands the CLI accepts", () => {
    const readme = read("README.md");
    const tester = readme.slice(readme.indexOf("**A staging tester who has only the URL**"));
    const commands = [
      ...tester.slice(0, tester.indexOf("## ")).matchAll(/^npm run (?:-s )?keys -- (.+?)\s{2,}#/gm),
    ].map((match) => (match[1] as string).match(/"[^"]*"|\S+/g)?.map((part) => part.replace(/^"|"$/g, "")) ?? []);

    expect(commands.map((argv) => argv[0])).toEqual(["create", "list", "revoke", "create"]);
    for (const argv of commands) {
      const parsed = parseKeysArguments(argv, {});
      expect(parsed, argv.join(" ")).toMatchObject({ target: { stage: "staging" } });
    }
    // The tester's own key only reads, and for a month; the key for anything that writes (smoke
    // included, which refuses any other there) is a synthetic one.
    expect(parseKeysArguments(commands[0] ?? [], {})).toMatchObject({ scope: "read", lifetimeSeconds: 30 * 86_400 });
    expect(parseKeysArguments(commands.at(-1) ?? [], {})).toMatchObject({ synthetic: true });
    expect(tester).toMatch(/\*\*read key\*\* for looking around, which cannot create anything clients\s+would see/);
    expect(tester).toMatch(/For anything that writes[^.]*\*\*synthetic key\*\*/);
    expect(tester).toMatch(/PETSTORE_API_KEY=<the synthetic key> npm run smoke/);
    expect(tester).toMatch(/created by someone with AWS\s+credentials for staging's account/);
    expect(tester).toMatch(/handed over through the team's secret manager/);
  });

  it("no doc hands the pipeline a smoke key: it mints its own, a one-hour synthetic key, as delivery.md shows", () => {
    for (const path of documents) expect(read(path), path).not.toMatch(/gh secret set PETSTORE_API_KEY/);
    const shown = /`npm run keys -- (create --stage <stage> [^`]+)`/.exec(
      section(read("docs/delivery.md"), "One-time set-up"),
    )?.[1];

    expect(shown).toBeDefined();
    expect(
      parseKeysArguments((shown ?? "").replace("<stage>", "staging").split(" ").concat("--name", "x"), {}),
    ).toMatchObject({ command: "create", synthetic: true, lifetimeSeconds: 3600, target: { stage: "staging" } });
  });

  it("says how long a synthetic key's pets are shown as the code keeps them", () => {
    expect(SYNTHETIC_PET_RETENTION_SECONDS).toBe(3600);
    expect(section(read("docs/api.md"), "Synthetic keys")).toMatch(/expire\*\* one hour after they were created/);
    expect(read("docs/alarms.md")).toMatch(/They expire one hour after they were created/);
  });

  it("the README says CI tests on the pinned Node versions (.ci/run), not on the machine's", () => {
    const testing = section(read("README.md"), "Testing");
    const lambdaMajor = NODE_VERSIONS.lambda.split(".")[0];

    expect(testing).not.toMatch(/machine's Node and/);
    expect(testing).toMatch(
      new RegExp(
        `CI \\(\`\\.ci/run\`\\) runs \`npm ci\`, then \`npm test\` on Node\\s+${NODE_VERSIONS.lowest.replaceAll(".", "\\.")} \\(the lowest supported\\) and again on Node\\s+${lambdaMajor}\\b`,
      ),
    );
  });

  it("no document hands testers a shared staging key: each non-synthetic one is one tester's, named after them", () => {
    const staging = documents.flatMap((path) =>
      [
        ...read(path).matchAll(
          /^npm run (?:-s |--silent )?keys -- (create [^|\n]*?--stage staging[^|\n]*?)\s*(?:#.*|\|.*)?$/gm,
        ),
      ].map((match) => ({
        path,
        argv: (match[1] as string).match(/"[^"]*"|\S+/g)?.map((part) => part.replace(/^"|"$/g, "")) ?? [],
      })),
    );
    const forPeople = staging
      .map(({ path, argv }) => ({ path, parsed: parseKeysArguments(argv, {}) }))
      .filter(({ parsed }) => parsed.command === "create" && !parsed.synthetic);

    expect(forPeople.map(({ path }) => path).sort()).toEqual(["README.md", "docs/deploy.md"]);
    for (const { path, parsed } of forPeople)
      expect(parsed, path).toMatchObject({ name: expect.stringMatching(/^tester [A-Z]\w+ [A-Z]\w+$/) });
    expect(read("README.md")).toMatch(/one per tester, named after them/);
    expect(read("docs/deploy.md")).toMatch(/One key per tester, named\s+# after them/);
  });

  it("the README tells a staging tester what running the smoke checks takes: a clone, a supported Node and npm install", () => {
    const readme = read("README.md");
    const tester = readme.slice(readme.indexOf("**A staging tester who has only the URL**"));
    const ownSection = tester.slice(0, tester.indexOf("\n## "));

    expect(ownSection).toMatch(/a clone of\s+this repository/);
    expect(ownSection).toContain(`Node.js ${NODE_VERSIONS.lowest} or newer`);
    expect(ownSection).toContain("`npm install`");
    expect(ownSection).toMatch(/^PETSTORE_API_KEY=.+ npm run smoke -- --base-url /m);
  });

  it("shows the command that prints BaseUrl wherever README and deploy.md tell where the stage's URL is, in a form it accepts", () => {
    for (const path of ["README.md", "docs/deploy.md"]) {
      const text = read(path);
      const commands = [...text.matchAll(/npm run -s url -- (--stage \S+?)\)?`?(?=[\s)"`]|$)/gm)].map(
        (match) => match[1] as string,
      );

      expect(commands.length, path).toBeGreaterThan(0);
      // A placeholder stands for every stage.
      for (const command of commands.flatMap((command) =>
        stageNames.map((stage) => command.replace("<stage>", stage)),
      )) {
        expect(parseStageArguments(command.split(" "), urlUsage), `${path}: ${command}`).not.toBe("help");
      }
    }
  });

  it("the README's npm start settings are the ones npm start -- --help names", () => {
    const rows = read("README.md")
      .split("\n")
      .filter((line) => /^\| `(?:PORT|DYNAMODB_PORT|--in-memory)`/.test(line));
    const flags = rows.flatMap((row) =>
      [...(row.split("|")[1] ?? "").matchAll(/`(--[a-z-]+)/g)].map((match) => match[1] as string),
    );

    expect(flags.sort()).toEqual(["--dynamodb-port", "--in-memory", "--port"]);
    for (const flag of flags) expect(START_USAGE).toMatch(new RegExp(`^  ${flag}\\b`, "m"));
  });
});
