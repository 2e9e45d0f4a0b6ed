/**
 * Fault injection on a real DynamoDB client (SDK middleware), for the integration tests of
 * idempotency and of store failures. Commands still reach dynalite unless a fault stops them.
 */
import { DynamoDBServiceException, ThrottlingException } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

const WRITE = /^(Put|Update|Delete)(Item)?Command$/;

/** Thrown for every call once the simulated process has died: nothing reaches the table any more. */
export class ProcessCrashed extends Error {
  override readonly name = "ProcessCrashed";
}

export function throttling(): Error {
  return new ThrottlingException({
    message: "Rate of requests exceeds the allowed throughput.",
    $metadata: { httpStatusCode: 400 },
  });
}

export function accessDenied(): Error {
  return new DynamoDBServiceException({
    name: "AccessDeniedException",
    $fault: "client",
    message:
      "User: arn:aws:sts::123456789012:assumed-role/petstore/fn is not authorized to perform: dynamodb:PutItem on resource: arn:aws:dynamodb:eu-west-1:123456789012:table/secret-table",
    $metadata: { httpStatusCode: 400 },
  });
}

type CommandMatcher = (command: string, callIndex: number) => boolean;

export interface DynamoFaults {
  /** Commands sent (one per `send`, however many attempts the SDK made), in order. */
  readonly calls: string[];
  /** Attempts the SDK made (below its retries), each with the index of its call in `calls`. */
  readonly attempts: { readonly command: string; readonly call: number }[];
  /** Writes that reached the table. */
  writesApplied(): number;
  /** The process dies right after its `count`-th write reached the table: that call and all later ones fail. */
  crashAfterWrites(count: number): void;
  /** The `count`-th write reaches the table, then its answer is lost: the caller sees `error` once. */
  loseAnswerOfWrite(count: number, error: () => Error): void;
  /** Every SDK attempt of matching calls fails with `error`, below the SDK's retry logic. */
  failAttempts(matches: CommandMatcher, error: () => Error): void;
}

export const isWrite = (command: string) => WRITE.test(command);

export function injectFaults(client: DynamoDBDocumentClient): DynamoFaults {
  const calls: string[] = [];
  const attempts: { command: string; call: number }[] = [];
  let writes = 0;
  let crashAt = Number.POSITIVE_INFINITY;
  let crashed = false;
  let loseAt = Number.POSITIVE_INFINITY;
  let loseError: () => Error = throttling;
  let attemptFault: { matches: CommandMatcher; error: () => Error } | undefined;

  // Above the retry middleware: what the caller of `send` experiences.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      const index = calls.push(command) - 1;
      (context as { faultCallIndex?: number }).faultCallIndex = index;
      if (crashed) throw new ProcessCrashed("the process is gone");
      const result = await next(args);
      if (isWrite(command)) {
        writes += 1;
        if (writes === crashAt) {
          crashed = true;
          throw new ProcessCrashed("the process died after this write");
        }
        if (writes === loseAt) throw loseError();
      }
      return result;
    },
    { step: "initialize", name: "testFaultsPerCall", priority: "high" },
  );
  // Below the retry middleware: every attempt the SDK makes.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      const index = (context as { faultCallIndex?: number }).faultCallIndex ?? -1;
      attempts.push({ command, call: index });
      if (attemptFault?.matches(command, index)) throw attemptFault.error();
      return next(args);
    },
    { step: "deserialize", name: "testFaultsPerAttempt", priority: "high" },
  );

  return {
    calls,
    attempts,
    writesApplied: () => writes,
    crashAfterWrites: (count) => {
      crashAt = count;
    },
    loseAnswerOfWrite: (count, error) => {
      loseAt = count;
      loseError = error;
    },
    failAttempts: (matches, error) => {
      attemptFault = { matches, error };
    },
  };
}
