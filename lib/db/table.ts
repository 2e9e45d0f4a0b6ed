/**
 * The one definition of the DynamoDB table: key schema, index and item keys. The repositories,
 * local table creation and the CDK table are all built from it.
 *
 * Single-table layout (pk, sk are both strings):
 * | item             | pk                     | sk                          |
 * |------------------|------------------------|-----------------------------|
 * | pet              | `PET`                  | id, zero-padded to 16 digits |
 * | API key          | `APIKEY`               | SHA-256 of the key, hex     |
 * | id counter       | `COUNTER`              | `pet`                       |
 * | idempotency rec. | `IDEMPOTENCY#<keyId>`  | the Idempotency-Key         |
 *
 * Idempotency records carry `expiresAt` (epoch seconds), the table's TTL attribute. DynamoDB
 * deletes expired items lazily (often days later) and dynalite never does, so readers treat an
 * expired record as absent; TTL only keeps the table from growing. No other item has `expiresAt`.
 *
 * Pets share one partition so that `GET /pets` is a single ordered Query (sk ascending = id
 * ascending). The `byStatus` index (status, id) is sparse: only pet items carry `status` and `id`,
 * so a status-filtered page is a Query too, reading only the items it returns.
 */
import type { CreateTableCommandInput } from "@aws-sdk/client-dynamodb";

type KeyType = "S" | "N";
interface KeyAttribute {
  readonly name: string;
  readonly type: KeyType;
}

export interface TableDefinition {
  readonly partitionKey: KeyAttribute;
  readonly sortKey: KeyAttribute;
  readonly globalSecondaryIndexes: readonly {
    readonly indexName: string;
    readonly partitionKey: KeyAttribute;
    readonly sortKey: KeyAttribute;
  }[];
  /** Number attribute (epoch seconds) after which DynamoDB may delete the item. */
  readonly timeToLiveAttribute: string;
}

export const petTable = {
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  globalSecondaryIndexes: [
    {
      indexName: "byStatus",
      partitionKey: { name: "status", type: "S" },
      sortKey: { name: "id", type: "N" },
    },
  ],
  timeToLiveAttribute: "expiresAt",
} as const satisfies TableDefinition;

export const STATUS_INDEX = petTable.globalSecondaryIndexes[0].indexName;
export const TTL_ATTRIBUTE = petTable.timeToLiveAttribute;

const ID_DIGITS = 16; // Number.MAX_SAFE_INTEGER has 16 digits.
const IDEMPOTENCY_PARTITION_PREFIX = "IDEMPOTENCY#";

export const itemKeys = {
  petPartition: "PET",
  pet: (id: number) => ({ pk: "PET", sk: String(id).padStart(ID_DIGITS, "0") }),
  apiKeyPartition: "APIKEY",
  apiKey: (keyHash: string) => ({ pk: "APIKEY", sk: keyHash }),
  petIdCounter: { pk: "COUNTER", sk: "pet" },
  idempotency: (apiKeyId: string, idempotencyKey: string) => ({
    pk: `${IDEMPOTENCY_PARTITION_PREFIX}${apiKeyId}`,
    sk: idempotencyKey,
  }),
} as const;

/**
 * The parts of the table a piece of code may be granted, as IAM names them: the partition key
 * values (`*` matches any run of characters) that `dynamodb:LeadingKeys` is checked against, or an
 * index. The CDK stack grants each function exactly the areas its route lists (lib/routes.ts).
 */
export const tableAreas = {
  pets: { partitionKeys: [itemKeys.petPartition] },
  /** The sparse `byStatus` index: only pet items carry its key attributes, so it holds nothing else. */
  petsByStatus: { index: STATUS_INDEX },
  petIdCounter: { partitionKeys: [itemKeys.petIdCounter.pk] },
  idempotencyRecords: { partitionKeys: [`${IDEMPOTENCY_PARTITION_PREFIX}*`] },
  apiKeys: { partitionKeys: [itemKeys.apiKeyPartition] },
} as const satisfies Record<string, { partitionKeys: readonly string[] } | { index: string }>;
export type TableArea = keyof typeof tableAreas;

/** The table as a CreateTable request, for the local engine and tests. */
export function createTableInput(tableName: string): CreateTableCommandInput {
  const { partitionKey, sortKey, globalSecondaryIndexes } = petTable;
  const attributes = new Map<string, KeyType>();
  for (const key of [partitionKey, sortKey, ...globalSecondaryIndexes.flatMap((i) => [i.partitionKey, i.sortKey])]) {
    attributes.set(key.name, key.type);
  }
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({ AttributeName, AttributeType })),
    KeySchema: [
      { AttributeName: partitionKey.name, KeyType: "HASH" },
      { AttributeName: sortKey.name, KeyType: "RANGE" },
    ],
    GlobalSecondaryIndexes: globalSecondaryIndexes.map((index) => ({
      IndexName: index.indexName,
      KeySchema: [
        { AttributeName: index.partitionKey.name, KeyType: "HASH" },
        { AttributeName: index.sortKey.name, KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: "ALL" },
    })),
  };
}
