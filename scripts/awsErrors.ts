/**
 * What a person can do about an AWS call that failed, for the commands run against a deployed
 * stage (preflight, alarms:verify, url, keys): which kind of failure an error's name says, told
 * once; each command words its own advice.
 */

export type AwsErrorKind = "no credentials" | "invalid credentials" | "denied" | "transient";

export function errorParts(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "Error", message: String(error) };
}

/** The kind of failure an AWS error's name says, when it says one a person can act on. */
export function awsErrorKind(name: string): AwsErrorKind | undefined {
  if (name === "CredentialsProviderError") return "no credentials";
  if (/^ExpiredToken|^RequestExpired$|^InvalidClientTokenId$|^UnrecognizedClient/.test(name))
    return "invalid credentials";
  // IAM denies as AccessDenied(Exception); EC2-style APIs as UnauthorizedOperation; SNS as
  // AuthorizationError(Exception).
  if (/^AccessDenied|^UnauthorizedOperation$|^AuthorizationError/.test(name)) return "denied";
  if (/Throttl|TooManyRequests|RequestLimitExceeded|^Timeout|^TimeoutError$|^ECONN|^ENOTFOUND|^EAI_AGAIN/.test(name))
    return "transient";
  return undefined;
}

/** What every stage command says about missing or expired credentials: the same words everywhere. */
const SIGN_IN_ADVICE: Readonly<Record<"no credentials" | "invalid credentials", string>> = {
  "no credentials":
    " No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).",
  "invalid credentials": " Sign in to the stage's account again: the credentials are expired or not valid.",
};

/**
 * The one line for a failed call: `<call> failed: <Name>: <message>.` and what to do about its kind:
 * sign in again for credentials, the command's own advice (a sentence starting with a space, or "")
 * for a refusal or a passing failure. One line whatever AWS or the network put in the message; never
 * the stack.
 */
export function failedCallLine(call: string, error: unknown, advice: (kind: "denied" | "transient") => string): string {
  const { name, message } = errorParts(error);
  const text = message.replace(/\s+/g, " ").trim().replace(/\.$/, "");
  const kind = awsErrorKind(name);
  const todo =
    kind === undefined ? "" : kind === "denied" || kind === "transient" ? advice(kind) : SIGN_IN_ADVICE[kind];
  return `${call} failed: ${name}${text ? `: ${text}` : ""}.${todo}`;
}
