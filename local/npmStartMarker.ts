/**
 * How `npm run keys` recognises this folder's running `npm start`, rather than trusting whatever
 * answers on the DynamoDB port. While it runs with the embedded DynamoDB, `npm start` leaves a note
 * in .data/npm-start/<pid>.json (its pid, DynamoDB port and endpoint, table and a random instance
 * id) and tags its table with the same instance id. A note whose process is gone is stale and
 * ignored; a database whose table does not carry the note's instance id is not this `npm start`'s
 * (something else answers on that port now), whatever the note says.
 */
import { randomUUID } from "node:crypto";
import { mkdir, readdir, readFile, rm, rmdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  DescribeTableCommand,
  type DynamoDBClient,
  ListTagsOfResourceCommand,
  TagResourceCommand,
} from "@aws-sdk/client-dynamodb";
import { LOCAL_RUN_DIR } from "./settings";

export const INSTANCE_TAG = "petstore:npm-start";

export interface NpmStartMarker {
  readonly pid: number;
  readonly port: number;
  readonly endpoint: string;
  readonly tableName: string;
  readonly instance: string;
  /** The data folder it holds open, or null when it keeps everything in memory. */
  readonly dataDir: string | null;
}

export interface Announcement {
  /** Removes the note (and the folders it created, when empty). */
  withdraw(): Promise<void>;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readMarkers(runDir: string): Promise<{ file: string; marker: NpmStartMarker }[]> {
  let names: string[];
  try {
    names = await readdir(runDir);
  } catch {
    return [];
  }
  const markers: { file: string; marker: NpmStartMarker }[] = [];
  for (const name of names.filter((candidate) => candidate.endsWith(".json"))) {
    const file = join(runDir, name);
    try {
      markers.push({ file, marker: JSON.parse(await readFile(file, "utf8")) as NpmStartMarker });
    } catch {
      // Half-written or removed meanwhile: not a running npm start.
    }
  }
  return markers;
}

/** The notes of the `npm start` processes of this folder that are still running. */
export async function runningNpmStarts(runDir: string = LOCAL_RUN_DIR): Promise<NpmStartMarker[]> {
  return (await readMarkers(runDir)).map(({ marker }) => marker).filter((marker) => isAlive(marker.pid));
}

/** Tags the table, then writes the note: a note never names a database that lacks its tag. */
export async function announceNpmStart(
  client: DynamoDBClient,
  details: { endpoint: string; tableName: string; dataDir: string | null },
  runDir: string = LOCAL_RUN_DIR,
): Promise<Announcement> {
  const marker: NpmStartMarker = {
    pid: process.pid,
    port: Number(new URL(details.endpoint).port),
    endpoint: details.endpoint,
    tableName: details.tableName,
    instance: randomUUID(),
    dataDir: details.dataDir,
  };
  const { Table } = await client.send(new DescribeTableCommand({ TableName: details.tableName }));
  await client.send(
    new TagResourceCommand({ ResourceArn: Table?.TableArn, Tags: [{ Key: INSTANCE_TAG, Value: marker.instance }] }),
  );
  await mkdir(runDir, { recursive: true });
  for (const stale of await readMarkers(runDir)) if (!isAlive(stale.marker.pid)) await rm(stale.file, { force: true });
  const file = join(runDir, `${marker.pid}.json`);
  await writeFile(file, `${JSON.stringify(marker)}\n`);
  return {
    withdraw: async () => {
      await rm(file, { force: true });
      // Only empty folders go: with --in-memory, nothing is left on disk.
      for (const folder of [runDir, dirname(runDir)]) await rmdir(folder).catch(() => undefined);
    },
  };
}

/** The instance id the table at `tableArn` is tagged with, if any. */
export async function instanceTag(client: DynamoDBClient, tableArn: string): Promise<string | undefined> {
  const { Tags } = await client.send(new ListTagsOfResourceCommand({ ResourceArn: tableArn }));
  return Tags?.find((tag) => tag.Key === INSTANCE_TAG)?.Value;
}
