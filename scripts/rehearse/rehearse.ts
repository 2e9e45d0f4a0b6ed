/**
 * The rehearsal of one cloud assembly: every stage stack brought up locally (./stage.ts), its
 * scenario run (./scenario.ts), every AWS call the artifacts made checked against the caller's role
 * (./iam.ts), the calls each role must never be allowed checked denied (./mustDeny.ts), and the
 * calls AWS services make on the stage's behalf checked against its resource and key policies
 * (./servicePrincipals.ts).
 */
import { itemKeys } from "../../lib/db/table";
import { type AssemblyStack, readAssembly, resourcesOf } from "./assembly";
import { AwsStandIn } from "./awsStandIn";
import { type Decision, evaluate, keyPolicyOf, requestsOf, rolePolicies } from "./iam";
import { mustDenyRequests } from "./mustDeny";
import type { ScenarioCheck } from "./scenario";
import { runScenario } from "./scenario";
import { servicePrincipalChecks } from "./servicePrincipals";
import { StageRehearsal } from "./stage";

export interface StageReport {
  readonly stack: string;
  readonly account: string;
  readonly region: string;
  readonly functions: string[];
  readonly skipped: { logicalId: string; reason: string }[];
  readonly redirected: string[];
  readonly scenario: ScenarioCheck[];
  readonly calls: Decision[];
  readonly unmodelled: { caller: string; call: string }[];
  readonly mustDeny: Decision[];
  readonly services: { decision: Decision; expected: "allow" | "deny" }[];
}

export interface RehearsalReport {
  readonly stages: StageReport[];
  readonly failures: string[];
}

/** A stack that holds functions this project uploads (a stage), as opposed to account-wide stacks. */
const isStageStack = (stack: AssemblyStack) => resourcesOf(stack.template, "AWS::Lambda::Function").length > 0;

export interface RehearseOptions {
  /** Only the stage stacks whose display name this matches (tests that break one stage). */
  readonly only?: RegExp;
}

export async function rehearseAssembly(directory: string, options: RehearseOptions = {}): Promise<RehearsalReport> {
  const stacks = readAssembly(directory);
  const stageStacks = stacks.filter(isStageStack);
  const standIn = new AwsStandIn();
  await standIn.start();
  const stages: StageReport[] = [];
  try {
    for (const [index, stack] of stageStacks.entries()) {
      if (options.only && !options.only.test(stack.displayName)) continue;
      const stage = new StageRehearsal(stack, stacks, standIn, index);
      const firstCall = standIn.calls.length;
      try {
        await stage.start();
        const scenario = await runScenario(stage, standIn);
        const calls: Decision[] = [];
        const unmodelled: StageReport["unmodelled"] = [];
        const seen = new Set<string>();
        for (const call of standIn.calls.slice(firstCall)) {
          const fn = stage.byAccessKey(call.accessKeyId);
          const caller = fn?.logicalId ?? `unknown caller ${call.accessKeyId}`;
          const { requests, unmodelled: reason } = requestsOf(call, caller, stage.resolver);
          if (reason) unmodelled.push({ caller, call: reason });
          for (const request of requests) {
            const key = JSON.stringify([request.caller, request.action, request.resource, request.context]);
            if (seen.has(key)) continue;
            seen.add(key);
            calls.push(await evaluateForFunction(stage, fn?.roleLogicalId, request));
          }
        }
        // What Lambda itself does with the role for each function: write its logs, and send its
        // traces when active tracing is on.
        for (const fn of stage.functions) {
          const tracing = stack.template.Resources[fn.logicalId]?.Properties?.TracingConfig as
            | { Mode?: string }
            | undefined;
          if (tracing?.Mode === "Active") {
            for (const action of ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]) {
              calls.push(
                await evaluateForFunction(stage, fn.roleLogicalId, {
                  caller: fn.logicalId,
                  action,
                  resource: "*",
                  context: {},
                  because: "Lambda sends the function's traces with its role (active tracing)",
                }),
              );
            }
          }
          const stream = `arn:aws:logs:${stack.region}:${stack.account}:log-group:${fn.spec.logGroupName}:log-stream:2026/01/01/[$LATEST]rehearsal`;
          for (const action of ["logs:CreateLogStream", "logs:PutLogEvents"]) {
            calls.push(
              await evaluateForFunction(stage, fn.roleLogicalId, {
                caller: fn.logicalId,
                action,
                resource: stream,
                context: {},
                because: "Lambda writes the function's logs with its role",
              }),
            );
          }
        }
        const mustDeny: Decision[] = [];
        for (const { roleLogicalId, request } of mustDenyRequests(
          stage,
          stageStacks,
          itemKeys.apiKeyPartition,
          stacks,
        )) {
          mustDeny.push(await evaluateForFunction(stage, roleLogicalId, request));
        }
        stages.push({
          stack: stack.displayName,
          account: stack.account,
          region: stack.region,
          functions: stage.functions.map((fn) => fn.logicalId),
          skipped: stage.skipped,
          redirected: stage.functions.flatMap((fn) =>
            Object.entries(fn.redirected).map(([name, { from, to }]) => `${fn.logicalId} ${name}: ${from} → ${to}`),
          ),
          scenario,
          calls,
          unmodelled,
          mustDeny,
          services: await servicePrincipalChecks(stage),
        });
      } finally {
        await stage.stop();
      }
    }
  } finally {
    await standIn.stop();
  }
  return { stages, failures: failuresOf(stages) };
}

async function evaluateForFunction(
  stage: StageRehearsal,
  roleLogicalId: string | undefined,
  request: Decision["request"],
): Promise<Decision> {
  const { resolver } = stage;
  const { policies } = roleLogicalId ? rolePolicies(resolver, roleLogicalId) : { policies: [] };
  const roleName = roleLogicalId ? resolver.ref(roleLogicalId) : "unknown-role";
  const resourcePolicy = request.resource.includes(":kms:") ? keyPolicyOf(resolver, request.resource) : undefined;
  return evaluate(request, {
    principal: `arn:aws:sts::${resolver.account}:assumed-role/${roleName}/${request.caller}`,
    principalAccount: resolver.account,
    identityPolicies: policies,
    ...(resourcePolicy ? { resourcePolicy } : {}),
  });
}

function failuresOf(stages: readonly StageReport[]): string[] {
  const failures: string[] = [];
  for (const stage of stages) {
    const where = `${stage.stack} (${stage.account}, ${stage.region})`;
    for (const check of stage.scenario.filter((candidate) => !candidate.ok)) {
      failures.push(`${where}: ${check.caller}: ${check.name} failed: ${check.detail}`);
    }
    for (const entry of stage.unmodelled) failures.push(`${where}: ${entry.caller} calls ${entry.call}`);
    for (const decision of stage.calls.filter((candidate) => !candidate.allowed)) {
      const { request } = decision;
      failures.push(
        `${where}: ${request.caller} would be denied ${request.action} on ${request.resource} with ${JSON.stringify(request.context)} (${request.because}); ${decision.result}:\n    ${decision.explanation.replaceAll("\n", "\n    ")}`,
      );
    }
    for (const decision of stage.mustDeny.filter((candidate) => candidate.allowed)) {
      const { request } = decision;
      failures.push(
        `${where}: ${request.caller} is allowed ${request.action} on ${request.resource} with ${JSON.stringify(request.context)}, which it must never be (${request.because})`,
      );
    }
    for (const { decision, expected } of stage.services) {
      if (decision.allowed === (expected === "allow")) continue;
      const { request } = decision;
      failures.push(
        `${where}: ${request.caller} ${expected === "allow" ? "is denied" : "is allowed"} ${request.action} on ${request.resource} with ${JSON.stringify(request.context)} (${request.because})${decision.explanation ? `:\n    ${decision.explanation.replaceAll("\n", "\n    ")}` : ""}`,
      );
    }
  }
  return failures;
}
