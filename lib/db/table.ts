/**
 * The one definition of the DynamoDB table: key schema, index and item keys. The repositories,
 * local table creation and the CDK table are all built from it.
 *
 * Single-table layout (pk, sk are both strings):
 * | item             | pk                       | sk                           |
 * |------------------|--------------------------|------------------------------|
 * | pet              | `PET`                    | id, zero-padded to 16 digits |
 * | synthetic pet    | `SYNTHETIC_PET#<keyId>`  | id, zero-padded to 16 digits |
 * | API key          | `APIKEY`                 | SHA-256 of the key, hex      |
 * | id counter       | `COUNTER`                | `pet`                        |
 * | idempotency rec. | `IDEMPOTENCY#<keyId>`    | the Idempotency-Key          |
 * | key's last use   | `KEYUSE`                 | `<keyId>#<operationId>`      |
 *
 * A key's last use (lib/auth/keyUsage.ts) is one small item per key and operation in one partition,
 * so that `keys list` and the deprecation report read all of them with one Query; a key and
 * operation pair is written at most once a day, so the partition stays far below its write limit.
 *
 * Idempotency records, synthetic pets and synthetic keys' uses carry `expiresAt` (epoch seconds), the table's TTL
 * attribute. DynamoDB deletes expired items lazily (within days) and dynalite never does, so
 * readers treat an expired item as absent; TTL keeps the table from growing.
 *
 * Clients' pets share one partition so that `GET /pets` is a single ordered Query (sk ascending = id
 * ascending). The `byStatus` index (status, id) is sparse: only pet items carry `status` and `id`,
 * so a status-filtered page is a Query too, reading only the items it returns.
 *
 * A synthetic key's pets (the project's own checks: lib/pets/collection.ts) live in a partition of
 * that key, and their `status` attribute, the index partition, names the key too
 * (`SYNTHETIC_PET#<keyId>#pending`): no query another key runs, on the table or the index, ever
 * reads them, so they cost clients nothing and never show in their answers.
 */
import type { CreateTableCommandInput, KeySchemaElement, TableDescription } from "@aws-sdk/client-dynamodb";
import type { PetCollection } from "../pets/collection";

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

/** A time as the TTL attribute holds it: whole seconds since the epoch. */
export function epochSeconds(date: Date): number {
  return Math.floor(date.getTime() / 1000);
}

const ID_DIGITS = 16; // Number.MAX_SAFE_INTEGER has 16 digits.
const IDEMPOTENCY_PARTITION_PREFIX = "IDEMPOTENCY#";
const SYNTHETIC_PET_PARTITION_PREFIX = "SYNTHETIC_PET#";

/** The partition holding a collection's pets. */
function petPartitionOf(collection: PetCollection): string {
  return collection.kind === "shared" ? "PET" : `${SYNTHETIC_PET_PARTITION_PREFIX}${collection.keyId}`;
}

export const itemKeys = {
  petPartition: petPartitionOf({ kind: "shared" }),
  pet: (id: number, collection: PetCollection) => ({
    pk: petPartitionOf(collection),
    sk: String(id).padStart(ID_DIGITS, "0"),
  }),
  /** The stored `status` of a collection's pet: its `byStatus` index partition. */
  petStatusKey: (status: string, collection: PetCollection) =>
    collection.kind === "shared" ? status : `${petPartitionOf(collection)}#${status}`,
  /** The status of a pet from its stored `status` (the inverse of petStatusKey). */
  petStatusOf: (statusKey: string) => statusKey.slice(statusKey.lastIndexOf("#") + 1),
  apiKeyPartition: "APIKEY",
  apiKey: (keyHash: string) => ({ pk: "APIKEY", sk: keyHash }),
  keyUsePartition: "KEYUSE",
  keyUse: (keyId: string, operationId: string) => ({ pk: "KEYUSE", sk: `${keyId}#${operationId}` }),
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
  /** Synthetic keys' pets: one partition per key (lib/pets/collection.ts). */
  syntheticPets: { partitionKeys: [`${SYNTHETIC_PET_PARTITION_PREFIX}*`] },
  /** The sparse `byStatus` index: only pet items (both collections') carry its key attributes. */
  petsByStatus: { index: STATUS_INDEX },
  petIdCounter: { partitionKeys: [itemKeys.petIdCounter.pk] },
  idempotencyRecords: { partitionKeys: [`${IDEMPOTENCY_PARTITION_PREFIX}*`] },
  apiKeys: { partitionKeys: [itemKeys.apiKeyPartition] },
  /** When each key last called each operation (lib/auth/keyUsage.ts). */
  keyUses: { partitionKeys: [itemKeys.keyUsePartition] },
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

type DescribedKeys = Pick<TableDescription, "AttributeDefinitions" | "KeySchema" | "GlobalSecondaryIndexes">;

/** Attribute types, keys and indexes of a table, in one comparable string. */
function keyShape(table: DescribedKeys): string {
  const keys = (schema: readonly KeySchemaElement[] | undefined) =>
    (schema ?? []).map((key) => `${key.AttributeName}:${key.KeyType}`).join(",");
  return JSON.stringify({
    attributes: (table.AttributeDefinitions ?? []).map((a) => `${a.AttributeName}:${a.AttributeType}`).sort(),
    keys: keys(table.KeySchema),
    indexes: (table.GlobalSecondaryIndexes ?? []).map((index) => `${index.IndexName}=${keys(index.KeySchema)}`).sort(),
  });
}

/**
 * Whether a described table has this definition's keys and index: this project's table, rather
 * than another that happens to have the same name.
 */
export function isPetTable(table: TableDescription): boolean {
  return keyShape(table) === keyShape(createTableInput(table.TableName ?? ""));
}
