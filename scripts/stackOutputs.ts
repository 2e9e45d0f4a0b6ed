/**
 * One output of a deployed stage's CloudFormation stack (DescribeStacks, read-only), for the commands that find a stage
 * from outside the CDK app: `npm run keys -- --stage …` (its table) and `npm run url -- --stage …` (its BaseUrl).
 */
import {
  type CloudFormationClient,
  DescribeStacksCommand,
  type DescribeStacksCommandOutput,
} from "@aws-sdk/client-cloudformation";

export type StackOutput =
  | { readonly found: "value"; readonly value: string }
  /** No stack of that name in the client's region (and account). */
  | { readonly found: "no stack" }
  /** The stack exists, without that output (yet): its status says why, e.g. CREATE_IN_PROGRESS. */
  | { readonly found: "no output"; readonly stackStatus: string };

/** The output `outputKey` of stack `stackName`; other AWS errors (credentials, access) are thrown as they come. */
export async function readStackOutput(
  cloudFormation: CloudFormationClient,
  stackName: string,
  outputKey: string,
): Promise<StackOutput> {
  let stacks: DescribeStacksCommandOutput["Stacks"];
  try {
    ({ Stacks: stacks } = await cloudFormation.send(new DescribeStacksCommand({ StackName: stackName })));
  } catch (error) {
    // CloudFormation answers a missing stack with a ValidationError "Stack with id X does not exist", not a not-found
    // error of its own: https://github.com/boto/boto3/issues/2807
    if ((error as Error).name === "ValidationError" && /does not exist/.test((error as Error).message)) {
      return { found: "no stack" };
    }
    throw error;
  }
  const [stack] = stacks ?? [];
  if (!stack) return { found: "no stack" };
  const value = stack.Outputs?.find((candidate) => candidate.OutputKey === outputKey)?.OutputValue;
  return value ? { found: "value", value } : { found: "no output", stackStatus: String(stack.StackStatus) };
}
