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
 */
import { Stack, type StackProps } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type { Construct } from "constructs";
import { petTable, TTL_ATTRIBUTE } from "../../lib/db/table";
import type { StageConfig } from "../config";

const keyType = (type: "S" | "N") => (type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER);

/**
 * The stage's table as it is defined, for the data stack and for tests that define it elsewhere (the
 * release check's, which move it to prove that a new logical id is refused).
 */
export function petTableProps(config: StageConfig): dynamodb.TablePropsV2 {
  return {
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
      recoveryPeriodInDays: config.table.pointInTimeRecoveryDays,
    },
    deletionProtection: config.table.deletionProtection,
    removalPolicy: config.table.removalPolicy,
    timeToLiveAttribute: TTL_ATTRIBUTE,
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
