/**
 * `npx tsx scripts/releaseCheck/deployedCommit.ts <github environment>`: prints `commit=<sha>` of the newest deployment
 * whose latest status is `success` (`commit=` if none: a first release), for .github/workflows/deploy.yml
 * (https://docs.github.com/en/rest/deployments/deployments#list-deployments,
 * https://docs.github.com/en/rest/deployments/statuses#list-deployment-statuses). Reads GITHUB_REPOSITORY, GITHUB_TOKEN
 * and GITHUB_API_URL. A failed call fails the step: "nothing deployed" would let everything pass.
 */
import { runAsScript } from "../entryPoint";

/** Answers a GET of a path of GitHub's REST API with its JSON body. */
export type GitHubGet = (path: string) => Promise<unknown>;

export class DeployedCommitError extends Error {}

/** Pages of 100 deployments looked through before giving up (a run of 1,000 failed deploys). */
const MAX_PAGES = 10;

export async function lastSuccessfulDeployment(
  repository: string,
  environment: string,
  get: GitHubGet,
): Promise<string | undefined> {
  for (let page = 1; page <= MAX_PAGES; page++) {
    const deployments = await get(
      `/repos/${repository}/deployments?environment=${encodeURIComponent(environment)}&per_page=100&page=${page}`,
    );
    if (!Array.isArray(deployments)) throw new DeployedCommitError("GitHub's list of deployments is not a list.");
    if (deployments.length === 0) return undefined;
    // Newest first, as GitHub lists them.
    for (const deployment of deployments as { id?: unknown; sha?: unknown }[]) {
      const statuses = await get(`/repos/${repository}/deployments/${deployment.id}/statuses?per_page=1`);
      const latest = Array.isArray(statuses) ? (statuses[0] as { state?: unknown } | undefined) : undefined;
      if (latest?.state === "success") {
        if (typeof deployment.sha !== "string" || !/^[0-9a-f]{40}$/.test(deployment.sha)) {
          throw new DeployedCommitError(`deployment ${deployment.id} names no commit.`);
        }
        return deployment.sha;
      }
    }
  }
  throw new DeployedCommitError(
    `none of the latest ${MAX_PAGES * 100} deployments of ${environment} succeeded; compare by hand with npm run release-check -- --base <commit>.`,
  );
}

/** GitHub's REST API through fetch, authenticated with the job's token. */
function gitHubGet(env: Readonly<Record<string, string | undefined>>, fetchImpl: typeof fetch = fetch): GitHubGet {
  const token = env.GITHUB_TOKEN;
  if (!token) throw new DeployedCommitError("GITHUB_TOKEN is not set (the job's token, with deployments: read).");
  const api = env.GITHUB_API_URL || "https://api.github.com";
  return async (path) => {
    let response: Response;
    try {
      response = await fetchImpl(`${api}${path}`, {
        headers: {
          Accept: "application/vnd.github+json",
          Authorization: `Bearer ${token}`,
          "X-GitHub-Api-Version": "2022-11-28",
        },
      });
    } catch (error) {
      throw new DeployedCommitError(`cannot reach ${api}: ${(error as Error).message}`);
    }
    if (!response.ok) {
      throw new DeployedCommitError(
        `GitHub answered ${response.status} to GET ${path.split("?")[0]} (does the job have deployments: read?).`,
      );
    }
    return response.json();
  };
}

export async function deployedCommitLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  fetchImpl: typeof fetch = fetch,
): Promise<string> {
  const [environment, ...rest] = argv;
  if (!environment || rest.length > 0 || environment.startsWith("-")) {
    throw new DeployedCommitError("Usage: tsx scripts/releaseCheck/deployedCommit.ts <github environment>");
  }
  const repository = env.GITHUB_REPOSITORY;
  if (!repository || !/^[\w.-]+\/[\w.-]+$/.test(repository)) {
    throw new DeployedCommitError("GITHUB_REPOSITORY must name the repository as owner/name.");
  }
  const commit = await lastSuccessfulDeployment(repository, environment, gitHubGet(env, fetchImpl));
  return `commit=${commit ?? ""}`;
}

await runAsScript(
  import.meta.url,
  async (argv) => console.log(await deployedCommitLine(argv, process.env)),
  (error) => (error instanceof DeployedCommitError ? `deployedCommit: ${error.message}` : undefined),
);
