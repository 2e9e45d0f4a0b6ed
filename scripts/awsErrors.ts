/**
 * What a person can do about an AWS call that failed, for the commands run against a deployed
 * stage (preflight, alarms:verify, restore, url, keys): which kind of failure an error's name says,
 * told once, and the lines for missing or expired credentials and a missing region, worded once
 * here for every command; each command words its own advice for a refusal or a passing failure
 * (CallFailures), and the plumbing that turns a failed call into its error is here once too.
 */

import { GetCallerIdentityCommand, type STSClient } from "@aws-sdk/client-sts";
import type { DeployedStageName } from "../infra/deployment";
import { contextKey } from "../infra/settings";

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

/**
 * What every stage command says about missing or expired credentials: the same words everywhere.
 * `account` names it when the command knows the stage ("prod's account").
 */
export function signInLine(kind: "no credentials" | "invalid credentials", account = "the stage's account"): string {
  return kind === "no credentials"
    ? `No AWS credentials: sign in to ${account} first (for example aws sso login, or set AWS_PROFILE).`
    : `Sign in to ${account} again: the credentials are expired or not valid.`;
}

/**
 * What every stage command says when no region is known: `pin` is the cdk.json key(s) to set,
 * `stage` the stage named in prose, `option` a command-line option that also names one.
 */
export function noRegionLine(pin: string, stage: string, option?: string): string {
  const pass = option === undefined ? "" : `, pass ${option}`;
  return `No AWS region: pin ${pin} in cdk.json's "context"${pass}, or set AWS_REGION to the region ${stage} is deployed to.`;
}

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
    kind === undefined ? "" : kind === "denied" || kind === "transient" ? advice(kind) : ` ${signInLine(kind)}`;
  return `${call} failed: ${name}${text ? `: ${text}` : ""}.${todo}`;
}

/** How a command words a failed call: its own error class for a line, its advice for a refusal or a passing failure. */
export interface CallFailures {
  readonly error: (line: string) => Error;
  readonly advice: (kind: "denied" | "transient", call: string) => string;
}

/** The command's error for a failed call: failedCallLine with the command's advice. */
export const callError = (how: CallFailures, call: string, error: unknown): Error =>
  how.error(failedCallLine(call, error, (kind) => how.advice(kind, call)));

/** `send`'s answer; any failure becomes the command's error of one line (callError). */
export async function awsCall<T>(how: CallFailures, call: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    throw callError(how, call, error);
  }
}

/** The line for credentials of another account than the one the stage is pinned to; undefined when they fit. */
export function wrongAccountProblem(
  stage: DeployedStageName,
  account: string,
  pinnedAccount: string | undefined,
): string | undefined {
  if (pinnedAccount === undefined || pinnedAccount === account) return undefined;
  return `credentials are for account ${account} but ${stage} is pinned to ${pinnedAccount} (${contextKey(stage, "account")} in cdk.json): sign in to ${pinnedAccount}.`;
}

/**
 * The account the credentials are for (sts:GetCallerIdentity). With `pin`, credentials for another account than the
 * stage's pinned one are the command's error (wrongAccountProblem).
 */
export async function callerAccount(
  sts: STSClient,
  how: CallFailures,
  pin?: { readonly stage: DeployedStageName; readonly account: string | undefined },
): Promise<string> {
  const { Account: account } = await awsCall(how, "sts:GetCallerIdentity", () =>
    sts.send(new GetCallerIdentityCommand({})),
  );
  if (!account) throw how.error("sts:GetCallerIdentity answered without an account.");
  const wrongAccount = pin && wrongAccountProblem(pin.stage, account, pin.account);
  if (wrongAccount) throw how.error(wrongAccount);
  return account;
}
