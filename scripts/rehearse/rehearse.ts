/**
 * The rehearsal of one cloud assembly: each stage brought up locally (./stage.ts), its scenario run (./scenario.ts)
 * with every AWS call authorized when made against every policy AWS evaluates (./policies.ts, ./iam.ts), then the
 * matrix proven (./proof.ts). Nothing in the assembly may go undriven.
 */
import { deployedStages } from "../../infra/deployment";
import { type AccessRow, accessMatrix } from "./accessMatrix";
import { type AssemblyStack, readAssembly, resourcesOf } from "./assembly";
import { AwsStandIn, type Refusal } from "./awsStandIn";
import { type Decision, evaluate, type IamRequest } from "./iam";
import { asRole, functionPolicyOf, type RoleGrants, roleGrants, roleWithArn, trustPolicyOf } from "./policies";
import { checkCalls, proveMatrix } from "./proof";
import { failureBlocks, type RehearsalReport, type StageReport } from "./report";
import { requestsOf } from "./requests";
import { type ExpectedCall, runScenario } from "./scenario";
import { StageRehearsal } from "./stage";

/** A stack that holds functions this project uploads (a stage), as opposed to account-wide stacks. */
const isStageStack = (stack: AssemblyStack) => resourcesOf(stack.template, "AWS::Lambda::Function").length > 0;

export interface RehearseOptions {
  /** Only the stage stacks whose display name this matches (tests that break one stage). */
  readonly only?: RegExp;
  /** The access matrix (./accessMatrix.ts); tests pass their own. */
  readonly matrix?: readonly AccessRow[];
}

export async function rehearseAssembly(directory: string, options: RehearseOptions = {}): Promise<RehearsalReport> {
  const stacks = readAssembly(directory);
  const assemblyProblems: string[] = [];
  const stageStacks = stacks.filter(isStageStack);
  if (stageStacks.length === 0) {
    assemblyProblems.push(
      `${directory} holds no stage stack (no stack with a Lambda function of its own): there is nothing to rehearse, so the rehearsal fails rather than pass on nothing`,
    );
  }
  // A partial assembly (a stage missing) would rehearse, and deploy, less than the app defines.
  if (stageStacks.length > 0) {
    for (const stage of Object.values(deployedStages)) {
      if (!stageStacks.some((stack) => stack.displayName.startsWith(`${stage.id}/`))) {
        assemblyProblems.push(
          `${directory} has no stack of the ${stage.id} stage (${stage.stackName}): it is partial, so the rehearsal cannot vouch for that stage; synthesize the whole app (npx cdk synth -o DIR)`,
        );
      }
    }
  }
  for (const stack of stacks.filter((candidate) => !candidate.pinned)) {
    assemblyProblems.push(
      `${stack.displayName} is not pinned to an account and region (aws://${stack.account}/${stack.region}): a deploy could land anywhere, and the rehearsal cannot resolve its ARNs. Set the stage's account and region (cdk.json context <stage>:account and <stage>:region, or -c) and synthesize again`,
    );
  }
  const standIn = new AwsStandIn();
  await standIn.start();
  const stages: StageReport[] = [];
  try {
    for (const [index, stack] of stageStacks.entries()) {
      if (options.only && !options.only.test(stack.displayName)) continue;
      stages.push(await rehearseStage(stack, stacks, standIn, index));
    }
  } finally {
    await standIn.stop();
  }
  // The templates against the matrix, then the scenario's calls against its rows. An unpinned stack's ARNs cannot be
  // known: that problem, reported above, is the one to fix first.
  const pinned = stacks.every((stack) => stack.pinned);
  const proof = stageStacks.length && pinned ? await proveMatrix(stacks, options.matrix ?? accessMatrix) : undefined;
  const stopped = new Set(stages.flatMap((stage) => stage.stoppedPrincipals));
  const rehearsed = new Set(stages.map((stage) => stage.stack.split("/")[0]));
  const { outside: callsOutside, stale } = proof
    ? checkCalls(
        proof.rows.filter((bound) => rehearsed.has(bound.scope) || !options.only),
        stages.flatMap((stage) => stage.calls),
        stopped,
      )
    : { outside: [], stale: [] };
  return {
    stages,
    ...(proof ? { proof } : {}),
    callsOutside,
    staleRows: stale,
    assemblyProblems,
    failures: failureBlocks(stages, assemblyProblems, proof, callsOutside, stale),
  };
}

async function rehearseStage(
  stack: AssemblyStack,
  stacks: readonly AssemblyStack[],
  standIn: AwsStandIn,
  index: number,
): Promise<StageReport> {
  const stage = new StageRehearsal(stack, stacks, standIn, index);
  const { resolver } = stage;
  const grantsCache = new Map<string, RoleGrants>();
  const grantsOf = (roleLogicalId: string) => {
    if (!grantsCache.has(roleLogicalId)) grantsCache.set(roleLogicalId, roleGrants(resolver, roleLogicalId));
    return grantsCache.get(roleLogicalId) as RoleGrants;
  };
  const evaluateForRole = (roleLogicalId: string | undefined, request: IamRequest): Promise<Decision> => {
    if (roleLogicalId)
      return evaluate(request, asRole(resolver, grantsOf(roleLogicalId), request.caller, request.resource));
    // A caller the rehearsal cannot tie to a role of the stage has no grants at all.
    return evaluate(request, {
      principal: `arn:aws:sts::${resolver.account}:assumed-role/unknown-role/${request.caller}`,
      principalAccount: resolver.account,
    });
  };

  const calls: Decision[] = [];
  const unmodelled: StageReport["unmodelled"] = [];
  const wrongRegion: StageReport["wrongRegion"] = [];
  // Every call is authorized when it is made, as AWS does, and a denied one is refused with AWS's error: the function
  // then behaves as it would in AWS (a 500 from the API, a FAILED custom resource).
  standIn.authorize = async (call): Promise<Refusal | undefined> => {
    const fn = stage.byAccessKey(call.accessKeyId);
    const caller = fn?.logicalId ?? `unknown caller ${call.accessKeyId}`;
    const step = call.step === undefined ? {} : { step: call.step };
    if (call.region !== stack.region) {
      wrongRegion.push({ caller, call: `${call.service}:${call.operation}`, region: call.region, ...step });
      // SigV4's answer to a credential scope of another region than the endpoint's.
      return {
        status: 400,
        errorType: "InvalidSignatureException",
        message: `Credential should be scoped to a valid region, not '${call.region}'.`,
      };
    }
    const { requests, unmodelled: reason } = requestsOf(call, caller, resolver);
    if (reason) unmodelled.push({ caller, call: reason, ...step });
    let denied: Decision | undefined;
    for (const request of requests) {
      const decision = await evaluateForRole(fn?.roleLogicalId, request);
      calls.push(decision);
      if (!decision.allowed) denied ??= decision;
    }
    return denied ? { status: 400, errorType: "AccessDeniedException", message: denied.accessDenied ?? "" } : undefined;
  };

  /** A service assuming a role of the stage: its trust policy decides, and the decision is one of the calls. */
  const assumeRole = async (
    service: string,
    roleLogicalId: string,
    because: string,
    extra: { context?: IamRequest["context"]; step?: string } = {},
  ): Promise<Decision> => {
    const decision = await evaluate(
      {
        caller: service,
        action: "sts:AssumeRole",
        resource: resolver.getAtt(roleLogicalId, "Arn"),
        context: extra.context ?? {},
        because,
        ...(extra.step === undefined ? {} : { step: extra.step }),
      },
      {
        principal: service,
        principalAccount: resolver.account,
        resourcePolicy: trustPolicyOf(resolver, roleLogicalId),
      },
    );
    calls.push(decision);
    return decision;
  };

  // Each invocation by a service is authorized when it is made too: API Gateway by the function's permissions for the
  // method's source ARN, the scheduler by its role and the function's permissions.
  stage.authorizeInvocation = async (invocation) => {
    const roleLogicalId = invocation.roleArn ? roleWithArn(resolver, invocation.roleArn) : undefined;
    const resourcePolicy = functionPolicyOf(resolver, invocation.invokedArn);
    const step = standIn.step === undefined ? {} : { step: standIn.step };
    if (roleLogicalId) {
      // The service first assumes its role, for this account (the confused-deputy key it sends).
      const assumed = await assumeRole(invocation.service, roleLogicalId, `${invocation.service} assuming its role`, {
        context: { "aws:SourceAccount": resolver.account },
        ...step,
      });
      if (!assumed.allowed) return assumed.accessDenied;
    }
    const decision = await evaluate(
      {
        caller: invocation.service,
        action: "lambda:InvokeFunction",
        resource: invocation.invokedArn,
        context: invocation.sourceArn
          ? { "aws:SourceArn": invocation.sourceArn, "aws:SourceAccount": resolver.account }
          : {},
        because: `${invocation.service} invoking the function`,
        ...step,
      },
      roleLogicalId
        ? asRole(resolver, grantsOf(roleLogicalId), invocation.service, invocation.invokedArn)
        : {
            principal: invocation.service,
            principalAccount: resolver.account,
            ...(resourcePolicy ? { resourcePolicy } : {}),
          },
    );
    calls.push(decision);
    return decision.allowed ? undefined : decision.accessDenied;
  };
  try {
    await stage.start();
    const { checks: scenario, expectedCalls } = await runScenario(stage, standIn);
    standIn.authorize = undefined;
    // What Lambda itself does with the role for each function: write its logs, and send its traces when active tracing
    // is on.
    for (const fn of stage.functions) {
      const tracing = stack.template.Resources[fn.logicalId]?.Properties?.TracingConfig as
        | { Mode?: string }
        | undefined;
      const traces = "Lambda sends the function's traces with its role (active tracing)";
      const logs = "Lambda writes the function's logs with its role";
      const stream = `arn:aws:logs:${stack.region}:${stack.account}:log-group:${fn.spec.logGroupName}:log-stream:2026/01/01/[$LATEST]rehearsal`;
      const own = [
        ...(tracing?.Mode === "Active" ? ["xray:PutTraceSegments", "xray:PutTelemetryRecords"] : []).map((action) => ({
          action,
          resource: "*",
          because: traces,
        })),
        ...["logs:CreateLogStream", "logs:PutLogEvents"].map((action) => ({ action, resource: stream, because: logs })),
      ];
      for (const request of own)
        calls.push(await evaluateForRole(fn.roleLogicalId, { caller: fn.logicalId, context: {}, ...request }));
    }
    // Lambda assumed each function's role to run it: its trust policy decides.
    for (const fn of stage.functions) {
      if (fn.roleLogicalId)
        await assumeRole("lambda.amazonaws.com", fn.roleLogicalId, `Lambda assuming ${fn.logicalId}'s role to run it`);
    }
    // A function that failed or was refused a call could not exercise its rows: the failure that stopped it is the root
    // cause, reported once, and no least-privilege finding comes from it.
    const stopped = new Set([
      ...calls.filter((decision) => !decision.allowed).map((decision) => decision.request.caller),
      ...unmodelled.map((entry) => entry.caller),
      ...wrongRegion.map((entry) => entry.caller),
      ...stage.functions.filter((fn) => fn.errors.length > 0 || fn.refusedInvocations > 0).map((fn) => fn.logicalId),
    ]);
    const stoppedFunctions = stage.functions.filter((fn) => stopped.has(fn.logicalId));
    const undriven = undrivenParts(stage, expectedCalls, calls, stopped);
    return {
      stack: stack.displayName,
      account: stack.account,
      region: stack.region,
      functions: stage.functions.map((fn) => fn.logicalId),
      skipped: stage.skipped,
      redirected: stage.functions.flatMap((fn) =>
        Object.entries(fn.redirected).map(([name, { from, to }]) => `${fn.logicalId} ${name}: ${from} → ${to}`),
      ),
      scenario,
      expectedCalls,
      calls,
      unmodelled,
      wrongRegion,
      notAssessed: stoppedFunctions.map((fn) => fn.logicalId),
      stoppedPrincipals: stoppedFunctions.flatMap((fn) =>
        fn.roleLogicalId ? [resolver.getAtt(fn.roleLogicalId, "Arn")] : [],
      ),
      undriven,
      policyProblems: [...new Set([...grantsCache.values()].flatMap((grants) => grants.problems))],
      eventProblems: stage.api ? [...stage.api.eventProblems] : [],
      functionErrors: stage.functions.flatMap((fn) => {
        const byType = new Map<string, { caller: string; errorType: string; errorMessage: string; steps: string[] }>();
        for (const error of fn.errors) {
          const entry = byType.get(error.errorType) ?? {
            caller: fn.logicalId,
            errorType: error.errorType,
            errorMessage: error.errorMessage,
            steps: [],
          };
          if (error.step && !entry.steps.includes(error.step)) entry.steps.push(error.step);
          byType.set(error.errorType, entry);
        }
        return [...byType.values()];
      }),
    };
  } finally {
    standIn.authorize = undefined;
    await stage.stop();
  }
}

/**
 * Nothing rehearsed is optional: every function, alias and API method driven, and each scenario step made its AWS call
 * (unless its function failed or was refused one, the root cause reported then).
 */
export function undrivenParts(
  stage: Pick<StageRehearsal, "skipped" | "aliases" | "invokedAliases"> & {
    readonly functions: readonly Pick<
      StageRehearsal["functions"][number],
      "logicalId" | "invocations" | "refusedInvocations"
    >[];
    readonly api?: { methods(): string[]; readonly called: ReadonlySet<string> } | undefined;
  },
  expectedCalls: readonly ExpectedCall[],
  calls: readonly Decision[],
  stopped: ReadonlySet<string>,
): string[] {
  const undriven = [
    ...stage.skipped.map((skipped) => `function ${skipped.logicalId} was not run: ${skipped.reason}`),
    ...stage.functions
      .filter((fn) => fn.invocations === 0 && fn.refusedInvocations === 0)
      .map((fn) => `function ${fn.logicalId} was never invoked by any scenario step`),
    ...[...stage.aliases.keys()]
      .filter((alias) => !stage.invokedAliases.has(alias))
      .map((alias) => `alias ${alias} was never invoked`),
    ...(stage.api?.methods() ?? [])
      .filter((method) => !stage.api?.called.has(method))
      .map((method) => `API method ${method} was never called`),
  ];
  for (const expected of expectedCalls) {
    if (stopped.has(expected.caller)) continue;
    const made = calls.some(
      (decision) =>
        decision.request.step === expected.step &&
        decision.request.caller === expected.caller &&
        decision.request.action === expected.action,
    );
    if (!made) {
      undriven.push(
        `step "${expected.step}" made no ${expected.action} call from ${expected.caller}, which it exists to exercise`,
      );
    }
  }
  return undriven;
}
