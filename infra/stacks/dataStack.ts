/**
 * A stage's data: the DynamoDB table (pets, API key records, the id counter, idempotency records),
 * in a stack of its own that `cdk deploy '<Stage>/*'` creates before the service stack
 * (./petStoreStack.ts). Kept apart so that the first create of the service stack, where deploys
 * usually fail (a certificate not yet issued, a DNS record that already exists, the account's Lambda
 * concurrency), rolls back without ever having to delete a deletion-protected table: CloudFormation
 * rolls a failed create back by deleting what it created, and DynamoDB refuses to delete a protected
 * table, which would leave the stack in ROLLBACK_FAILED and the table orphaned
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-deletionpolicy.html,
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/WorkingWithTables.Basics.html#WorkingWithTables.Basics.DeletionProtection).
 * AWS's own advice for CDK apps is the same: "keep stateful resources in a separate stack"
 * (https://docs.aws.amazon.com/cdk/v2/guide/best-practices.html).
 *
 * The table has a fixed name (`petstore-<stage>`), and the service stack finds it by that name rather
 * than through a cross-stack reference: a change that CloudFormation could only apply by replacing
 * the table then fails instead of silently creating a new, empty one ("CloudFormation can't update a
 * stack when a custom-named resource requires replacing":
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-name.html).
 *
 * A point-in-time restore (`npm run restore`, scripts/restore) makes a new table, never this one, and
 * the stage switches to it with the `<stage>:tableName` setting: the service stack then finds the
 * restored table by that name, and this stack stays exactly as it is, so the switch can neither
 * delete nor replace the old table (test/infra/restoredTable.test.ts). The restored table is managed
 * by no stack; the command gives it this table's settings (stageTableSettings below).
 */
import { Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { petTable, TTL_ATTRIBUTE } from "../../lib/db/table";
import type { StageConfig } from "../config";
import { costTags } from "../tags";

const keyType = (type: "S" | "N") => (type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

/**
 * What the stage's table has beyond its keys, indexes and items: what this stack gives its table and
 * what `npm run restore` gives a restored one, which DynamoDB restores without TTL, point-in-time
 * recovery, tags or deletion protection
 * (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_RestoreTableToPointInTime.html).
 * The tags are the stage's cost tags, which this stack's table gets from its stage (./petStoreStack.ts).
 */
export function stageTableSettings(config: Pick<StageConfig, "stage" | "table">) {
  return {
    timeToLiveAttribute: TTL_ATTRIBUTE,
    pointInTimeRecoveryDays: config.table.pointInTimeRecoveryDays,
    deletionProtection: config.table.deletionProtection,
    tags: costTags([config.stage]),
  } as const;
}

/**
 * The stage's table as it is defined, for the data stack and for tests that define it elsewhere (the
 * release check's, which move it to prove that a new logical id is refused).
 */
export function petTableProps(config: StageConfig): dynamodb.TablePropsV2 {
  const settings = stageTableSettings(config);
  return {
    // Always the stage's fixed name, also when the stage uses a restored table (`<stage>:tableName`).
    tableName: config.tableName,
    partitionKey: { name: petTable.partitionKey.name, type: keyType(petTable.partitionKey.type) },
    sortKey: { name: petTable.sortKey.name, type: keyType(petTable.sortKey.type) },
    billing: dynamodb.Billing.onDemand(),
    globalSecondaryIndexes: petTable.globalSecondaryIndexes.map((index) => ({
      indexName: index.indexName,
      partitionKey: { name: index.partitionKey.name, type: keyType(index.partitionKey.type) },
      sortKey: { name: index.sortKey.name, type: keyType(index.sortKey.type) },
      projectionType: dynamodb.ProjectionType.ALL,
    })),
    pointInTimeRecoverySpecification: {
      pointInTimeRecoveryEnabled: true,
      recoveryPeriodInDays: settings.pointInTimeRecoveryDays,
    },
    deletionProtection: settings.deletionProtection,
    removalPolicy: config.table.removalPolicy,
    timeToLiveAttribute: settings.timeToLiveAttribute,
  };
}

export interface PetStoreDataStackProps extends StackProps {
  readonly config: StageConfig;
}

export class PetStoreDataStack extends Stack {
  readonly table: dynamodb.TableV2;

  constructor(scope: Construct, id: string, props: PetStoreDataStackProps) {
    super(scope, id, props);
    // The construct id and its place in the tree make the table's logical id (TableCD117FA1): a new one
    // is a new, empty table to CloudFormation, and the old one is removed (test/infra/statefulResources.test.ts,
    // and `npm run release-check`, refuse that: docs/deploy.md, "Stateful resources").
    this.table = new dynamodb.TableV2(this, "Table", petTableProps(props.config));
  }
}
