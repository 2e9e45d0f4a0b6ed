/**
 * `npm run restore`: the exact DynamoDB calls a point-in-time restore makes against mocked answers
 * (each setting the restore leaves out brought back), the recovery window check, continuing an
 * interrupted run, the one-line failures and the `<stage>:tableName` setting it prints.
 */
import {
  DescribeContinuousBackupsCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  RestoreTableToPointInTimeCommand,
  type TableDescription,
  TagResourceCommand,
  UpdateContinuousBackupsCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { GetCallerIdentityCommand, STSClient } from "@aws-sdk/client-sts";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { readStageSettings, SettingsError } from "../../infra/settings";
import { createTableInput } from "../../lib/db/table";
import { defaultTableName, main, parseRestoreArguments } from "../../scripts/restore/main";
import type { RestoreClients } from "../../scripts/restore/restore";
import { captureOutput } from "../support/consoleOutput";
import { runWithoutCredentials } from "../support/stageCommand";

const dynamo = mockClient(DynamoDBClient);
const sts = mockClient(STSClient);

const ACCOUNT = "222222222222";
const REGION = "eu-west-1";
const TO = "2026-05-04T09:30:00Z";
const TARGET = "petstore-prod-restored-202605040930";
const arn = (name: string) => `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;
const KMS_KEY = `arn:aws:kms:${REGION}:${ACCOUNT}:key/0f2c6c1e-2d3b-4c1a-9a57-0d7c1f1f2b11`;

const clients: RestoreClients = {
  dynamo: new DynamoDBClient({ region: REGION }),
  sts: new STSClient({ region: REGION }),
};
const sleep = vi.fn(async (_milliseconds: number) => {});

function awsError(name: string, message = `${name} (test)`): Error {
  return Object.assign(new Error(message), { name });
}

/** A table with the project's keys and index, as DescribeTable answers. */
function described(name: string, extra: Partial<TableDescription> = {}): TableDescription {
  const { AttributeDefinitions, KeySchema, GlobalSecondaryIndexes } = createTableInput(name);
  return {
    TableName: name,
    TableArn: arn(name),
    TableStatus: "ACTIVE",
    AttributeDefinitions,
    KeySchema,
    GlobalSecondaryIndexes: GlobalSecondaryIndexes?.map((index) => ({ ...index, IndexStatus: "ACTIVE" })),
    ...extra,
  };
}

const restoredFrom = (source: string) => ({
  RestoreSummary: { SourceTableArn: arn(source), RestoreDateTime: new Date(TO), RestoreInProgress: false },
});

/** The DynamoDB calls made, in order, as [command, input]. */
const dynamoCalls = () =>
  dynamo.calls().map((call) => {
    const command = call.args[0] as { constructor: { name: string }; input: unknown };
    return [command.constructor.name.replace(/Command$/, ""), command.input] as const;
  });
const callsOf = (name: string) => dynamoCalls().filter(([command]) => command === name);

/** Each DescribeTable answer of the target, in turn (the last repeats); undefined: no such table. */
let targetAnswers: (TableDescription | undefined)[];

/** DescribeTable of `name` answers targetAnswers in turn. */
function answerTarget(name: string) {
  let reads = 0;
  dynamo.on(DescribeTableCommand, { TableName: name }).callsFake(async () => {
    const answer = targetAnswers[Math.min(reads, targetAnswers.length - 1)];
    reads += 1;
    if (!answer) throw awsError("ResourceNotFoundException", `Requested resource not found: Table: ${name} not found`);
    return { Table: answer };
  });
}

beforeEach(() => {
  dynamo.reset();
  sts.reset();
  sleep.mockClear();
  sts.on(GetCallerIdentityCommand).resolves({ Account: ACCOUNT, Arn: `arn:aws:iam::${ACCOUNT}:role/admin` });
  dynamo.on(DescribeTableCommand, { TableName: "petstore-prod" }).resolves({ Table: described("petstore-prod") });
  dynamo.on(DescribeTableCommand, { TableName: "petstore-staging" }).resolves({ Table: described("petstore-staging") });
  targetAnswers = [
    undefined,
    described(TARGET, { TableStatus: "CREATING" }),
    described(TARGET, restoredFrom("petstore-prod")),
  ];
  answerTarget(TARGET);
  dynamo.on(DescribeContinuousBackupsCommand).resolves({
    ContinuousBackupsDescription: {
      ContinuousBackupsStatus: "ENABLED",
      PointInTimeRecoveryDescription: {
        PointInTimeRecoveryStatus: "ENABLED",
        EarliestRestorableDateTime: new Date("2026-04-01T00:00:00Z"),
        LatestRestorableDateTime: new Date("2026-05-04T10:55:00Z"),
      },
    },
  });
  dynamo
    .on(RestoreTableToPointInTimeCommand)
    .resolves({ TableDescription: described(TARGET, { TableStatus: "CREATING" }) });
  dynamo.on(DescribeTimeToLiveCommand).resolves({ TimeToLiveDescription: { TimeToLiveStatus: "DISABLED" } });
  dynamo.on(UpdateTimeToLiveCommand).resolves({});
  dynamo.on(UpdateContinuousBackupsCommand).resolves({});
  dynamo.on(UpdateTableCommand).resolves({});
  dynamo.on(TagResourceCommand).resolves({});
});

const context =
  (extra: Record<string, unknown> = {}) =>
  () => ({ "prod:region": REGION, "staging:region": REGION, ...extra });
const restore = (argv: string[], extra: Record<string, unknown> = {}) =>
  main(argv, { env: {}, context: context(extra), clients: () => clients, sleep });

describe("npm run restore", () => {
  it("restores into a new table with the definition's billing and indexes, waits for it, and brings back TTL, PITR, deletion protection and tags", async () => {
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(0);

    expect(dynamoCalls()).toEqual([
      ["DescribeTable", { TableName: "petstore-prod" }],
      ["DescribeTable", { TableName: TARGET }],
      ["DescribeContinuousBackups", { TableName: "petstore-prod" }],
      [
        "RestoreTableToPointInTime",
        {
          SourceTableName: "petstore-prod",
          TargetTableName: TARGET,
          RestoreDateTime: new Date(TO),
          BillingModeOverride: "PAY_PER_REQUEST",
          GlobalSecondaryIndexOverride: [
            {
              IndexName: "byStatus",
              KeySchema: [
                { AttributeName: "status", KeyType: "HASH" },
                { AttributeName: "id", KeyType: "RANGE" },
              ],
              Projection: { ProjectionType: "ALL" },
            },
          ],
        },
      ],
      ["DescribeTable", { TableName: TARGET }],
      ["DescribeTable", { TableName: TARGET }],
      ["DescribeTimeToLive", { TableName: TARGET }],
      [
        "UpdateTimeToLive",
        { TableName: TARGET, TimeToLiveSpecification: { Enabled: true, AttributeName: "expiresAt" } },
      ],
      [
        "UpdateContinuousBackups",
        {
          TableName: TARGET,
          PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true, RecoveryPeriodInDays: 35 },
        },
      ],
      ["UpdateTable", { TableName: TARGET, DeletionProtectionEnabled: true }],
      [
        "TagResource",
        {
          ResourceArn: arn(TARGET),
          Tags: [
            { Key: "project", Value: "petstore" },
            { Key: "stage", Value: "prod" },
          ],
        },
      ],
    ]);
    // It waited for CREATING to become ACTIVE.
    expect(sleep).toHaveBeenCalledTimes(1);
    expect(output.out).toEqual([
      expect.stringMatching(
        new RegExp(
          `^restore: ${TARGET} is ACTIVE in ${ACCOUNT}/${REGION}: petstore-prod as it was at 2026-05-04T09:30:00.000Z, with TTL on expiresAt, 35 days of point-in-time recovery, deletion protection on, tags project=petstore, stage=prod,`,
        ),
      ),
      `restore: 1. In cdk.json's "context" set "prod:tableName": "${TARGET}" and commit it in a pull request.`,
      expect.stringMatching(
        /^restore: 2\. npm run release-check -- --base origin\/main shows the switch: Production-PetStore's/,
      ),
      expect.stringMatching(/^restore: 3\. Deploy as usual\./),
    ]);
    expect(output.err.every((line) => line.startsWith("restore: "))).toBe(true);
  });

  it("restores a KMS-encrypted table under the same key", async () => {
    const encrypted = {
      SSEDescription: { Status: "ENABLED" as const, SSEType: "KMS" as const, KMSMasterKeyArn: KMS_KEY },
    };
    dynamo
      .on(DescribeTableCommand, { TableName: "petstore-prod" })
      .resolves({ Table: described("petstore-prod", encrypted) });
    targetAnswers = [undefined, described(TARGET, { ...encrypted, ...restoredFrom("petstore-prod") })];
    captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(0);
    expect(callsOf("RestoreTableToPointInTime")[0]?.[1]).toMatchObject({
      SSESpecificationOverride: { Enabled: true, SSEType: "KMS", KMSMasterKeyId: KMS_KEY },
    });
  });

  it("refuses to hand over a restored table whose encryption is not the source's", async () => {
    const encrypted = {
      SSEDescription: { Status: "ENABLED" as const, SSEType: "KMS" as const, KMSMasterKeyArn: KMS_KEY },
    };
    dynamo
      .on(DescribeTableCommand, { TableName: "petstore-prod" })
      .resolves({ Table: described("petstore-prod", encrypted) });
    targetAnswers = [undefined, described(TARGET, restoredFrom("petstore-prod"))];
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(1);
    expect(output.err.at(-1)).toMatch(
      /is encrypted with DynamoDB's own key, not arn:aws:kms:.* do not switch to it\.$/,
    );
    expect(callsOf("TagResource")).toEqual([]);
  });

  it("gives a staging restore staging's settings: no deletion protection to switch on, staging's tags", async () => {
    const target = "petstore-staging-restored-202605040930";
    targetAnswers = [undefined, described(target, restoredFrom("petstore-staging"))];
    answerTarget(target);
    captureOutput();
    expect(await restore(["--stage", "staging", "--to", TO])).toBe(0);
    expect(callsOf("UpdateTable")).toEqual([]);
    expect(callsOf("TagResource")[0]?.[1]).toEqual({
      ResourceArn: arn(target),
      Tags: [
        { Key: "project", Value: "petstore" },
        { Key: "stage", Value: "staging" },
      ],
    });
  });

  it("restores from the table the stage uses now when <stage>:tableName names a restored one", async () => {
    const current = "petstore-prod-restored-202604010000";
    dynamo.on(DescribeTableCommand, { TableName: current }).resolves({ Table: described(current) });
    targetAnswers = [undefined, described(TARGET, restoredFrom(current))];
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO], { "prod:tableName": current })).toBe(0);
    expect(callsOf("RestoreTableToPointInTime")[0]?.[1]).toMatchObject({ SourceTableName: current });
    expect(output.out.at(-1)).toContain(`Until then the stage keeps using ${current}`);
  });

  it("refuses a time outside the recovery window in one line, before restoring anything", async () => {
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", "2026-03-01T00:00:00Z", "--table-name", TARGET])).toBe(1);
    expect(output.err).toEqual([
      expect.stringContaining("restore: restoring petstore-prod"),
      "restore: 2026-03-01T00:00:00.000Z is outside petstore-prod's recovery window, 2026-04-01T00:00:00.000Z to 2026-05-04T10:55:00.000Z: pass a --to inside it.",
    ]);
    expect(callsOf("RestoreTableToPointInTime")).toEqual([]);
    expect(output.out).toEqual([]);
  });

  it("refuses a source without point-in-time recovery", async () => {
    dynamo.on(DescribeContinuousBackupsCommand).resolves({
      ContinuousBackupsDescription: {
        ContinuousBackupsStatus: "ENABLED",
        PointInTimeRecoveryDescription: { PointInTimeRecoveryStatus: "DISABLED" },
      },
    });
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(1);
    expect(output.err.at(-1)).toBe(
      "restore: petstore-prod has no point-in-time recovery: there is nothing to restore from.",
    );
  });

  it("says in one line that there are no credentials", async () => {
    sts
      .on(GetCallerIdentityCommand)
      .rejects(awsError("CredentialsProviderError", "Could not load credentials from any providers"));
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(1);
    expect(output.err).toEqual([
      expect.stringContaining("restore: restoring petstore-prod"),
      "restore: sts:GetCallerIdentity failed: CredentialsProviderError: Could not load credentials from any providers. No AWS credentials: sign in to the stage's account first (for example aws sso login, or set AWS_PROFILE).",
    ]);
    expect(dynamoCalls()).toEqual([]);
  });

  it("refuses credentials of another account than the stage is pinned to", async () => {
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO], { "prod:account": "333333333333" })).toBe(1);
    expect(output.err.at(-1)).toBe(
      `restore: credentials are for account ${ACCOUNT} but prod is pinned to 333333333333 (prod:account in cdk.json): sign in to 333333333333.`,
    );
    expect(dynamoCalls()).toEqual([]);
  });

  it("refuses a target table that exists and is no restore of this source at this time", async () => {
    targetAnswers = [described(TARGET)];
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(1);
    expect(output.err.at(-1)).toBe(
      `restore: table ${TARGET} exists already and is no restore of petstore-prod at 2026-05-04T09:30:00.000Z: pass --table-name with a new name.`,
    );
    expect(callsOf("RestoreTableToPointInTime")).toEqual([]);
  });

  it("continues an interrupted run: no second restore, and no setting the table has already set again", async () => {
    targetAnswers = [described(TARGET, { ...restoredFrom("petstore-prod"), DeletionProtectionEnabled: true })];
    dynamo.on(DescribeTimeToLiveCommand).resolves({
      TimeToLiveDescription: { TimeToLiveStatus: "ENABLED", AttributeName: "expiresAt" },
    });
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(0);
    expect(callsOf("RestoreTableToPointInTime")).toEqual([]);
    expect(callsOf("DescribeContinuousBackups")).toEqual([]);
    expect(callsOf("UpdateTimeToLive")).toEqual([]);
    expect(callsOf("UpdateTable")).toEqual([]);
    // Setting PITR and tags again changes nothing, so they are simply set.
    expect(callsOf("UpdateContinuousBackups")).toHaveLength(1);
    expect(callsOf("TagResource")).toHaveLength(1);
    expect(output.err).toContain(`restore: ${TARGET} is being or was restored by an earlier run: continuing it.`);
  });

  it("waits for backups of the new table before turning point-in-time recovery on", async () => {
    dynamo
      .on(UpdateContinuousBackupsCommand)
      .rejectsOnce(awsError("ContinuousBackupsUnavailableException", "Backups are being enabled for the table"))
      .resolves({});
    captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(0);
    expect(callsOf("UpdateContinuousBackups")).toHaveLength(2);
  });

  it("says in one line what it needs when a call is denied", async () => {
    dynamo
      .on(RestoreTableToPointInTimeCommand)
      .rejects(
        awsError("AccessDeniedException", "User is not authorized to perform: dynamodb:RestoreTableToPointInTime"),
      );
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO])).toBe(1);
    expect(output.err.at(-1)).toMatch(
      /^restore: dynamodb:RestoreTableToPointInTime failed: AccessDeniedException: .* The credentials need dynamodb:RestoreTableToPointInTime: restore with an administrator's role/,
    );
  });
});

describe("restore's arguments", () => {
  it("names the new table after the stage and the point in time, in UTC", () => {
    expect(defaultTableName("prod", new Date("2026-05-04T11:30:00+02:00"))).toBe(TARGET);
    expect(parseRestoreArguments(["--stage", "staging", "--to", TO])).toEqual({
      stage: "staging",
      restoreTo: new Date(TO),
      tableName: "petstore-staging-restored-202605040930",
    });
  });

  it.each([
    [["--to", TO], "--stage is required."],
    [["--stage", "prod"], "--to is required."],
    [["--stage", "prod", "--to", "2026-05-04 09:30"], '--to "2026-05-04 09:30" is no ISO time with a zone'],
    [["--stage", "prod", "--to", "2026-05-04T09:30:00"], '--to "2026-05-04T09:30:00" is no ISO time with a zone'],
    [
      ["--stage", "prod", "--to", TO, "--table-name", "petstore-staging-copy"],
      "--table-name must be petstore-prod or start with petstore-prod-",
    ],
    [
      ["--stage", "prod", "--to", TO, "--table-name", "petstore-prod/x"],
      "--table-name must be one DynamoDB table name.",
    ],
    [["--stage", "prod", "--to", TO, "--region", REGION], "Unknown option '--region'."],
  ])("refuses %j with one usage line, exit 2", async (argv, start) => {
    const output = captureOutput();
    expect(await restore(argv)).toBe(2);
    expect(output.err).toHaveLength(1);
    expect(output.err[0]).toContain(`restore: ${start}`);
    expect(output.err[0]).toMatch(/Usage: npm run restore -- --stage <staging\|prod> --to /);
    expect(dynamoCalls()).toEqual([]);
  });

  it("refuses to restore into the table the stage uses now", async () => {
    const output = captureOutput();
    expect(await restore(["--stage", "prod", "--to", TO, "--table-name", TARGET], { "prod:tableName": TARGET })).toBe(
      1,
    );
    expect(output.err.at(-1)).toBe(`restore: ${TARGET} is the table prod uses now: pass --table-name with a new name.`);
  });
});

describe("the <stage>:tableName setting", () => {
  const read = (stage: "prod" | "staging", value: string) =>
    readStageSettings(stage, (key) => ({ [`${stage}:tableName`]: value })[key], {});

  it("takes the stage's own table names", () => {
    expect(read("prod", TARGET).tableName).toBe(TARGET);
    expect(read("staging", "petstore-staging").tableName).toBe("petstore-staging");
  });

  it.each([
    ["staging", "petstore-prod-restored-202605040930"],
    ["prod", "petstore-production"],
    ["prod", "other-table"],
    ["prod", "petstore-prod restored"],
  ] as const)("refuses %s:tableName %j, naming the setting", (stage, value) => {
    expect(() => read(stage, value)).toThrow(SettingsError);
    expect(() => read(stage, value)).toThrow(`${stage}:tableName`);
  });
});

describe("npm run restore as npm runs it", () => {
  it("without credentials prints one line, no stack trace, exit 1", async () => {
    const { code, stdout, stderr } = await runWithoutCredentials(
      "scripts/restore/main.ts",
      ["--stage", "staging", "--to", TO],
      {
        AWS_REGION: REGION,
      },
    );
    expect(code).toBe(1);
    expect(stdout).toBe("");
    const lines = stderr.trim().split("\n");
    expect(lines.at(-1)).toMatch(/^restore: sts:GetCallerIdentity failed: .*No AWS credentials/);
    expect(stderr).not.toMatch(/\n\s+at /);
  });
});
