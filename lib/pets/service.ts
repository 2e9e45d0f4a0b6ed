/** The pet operations, independent of HTTP and of the store behind `PetRepository`. */
import { DEFAULT_PET_STATUS, type NewPet, type Pet, type PetStatus } from "../contract/schemas";
import type { Deadline } from "../db/deadline";
import { PetNotFoundError } from "../errors";
import type { PetCollection } from "./collection";
import { decodeCursor, encodeCursor } from "./cursor";
import type { PetRepository } from "./repository";

export interface ListPetsQuery {
  readonly collection: PetCollection;
  readonly limit: number;
  readonly status: PetStatus | null;
  readonly cursor: string | null;
}

export interface PetList {
  readonly pets: Pet[];
  /** Cursor of the next page, or null on the last page. */
  readonly nextCursor: string | null;
}

export async function listPets(repository: PetRepository, query: ListPetsQuery, deadline?: Deadline): Promise<PetList> {
  const afterId = query.cursor === null ? 0 : decodeCursor(query.cursor, query.status).afterId;
  const page = await repository.page(
    { collection: query.collection, limit: query.limit, afterId, status: query.status },
    deadline,
  );
  const last = page.pets.at(-1);
  return {
    pets: page.pets,
    nextCursor: page.hasMore && last ? encodeCursor({ afterId: last.id, status: query.status }) : null,
  };
}

/** Builds the stored form of a new pet: the default status applies when none was sent. */
export function petFromRequest(id: number, newPet: NewPet): Pet {
  return { id, name: newPet.name, categoryId: newPet.categoryId, status: newPet.status ?? DEFAULT_PET_STATUS };
}

export async function createPet(
  repository: PetRepository,
  newPet: NewPet,
  collection: PetCollection,
  deadline?: Deadline,
): Promise<Pet> {
  const pet = petFromRequest(await repository.allocateId(deadline), newPet);
  await insertPet(repository, pet, collection, deadline);
  return pet;
}

/**
 * Stores `pet` under its reserved id. "Exists" is fine when the stored pet is this one: the SDK
 * retried a write whose answer was lost, or another request resumed the same idempotent create.
 */
export async function insertPet(
  repository: PetRepository,
  pet: Pet,
  collection: PetCollection,
  deadline?: Deadline,
): Promise<void> {
  if ((await repository.insert(pet, collection, deadline)) === "created") return;
  const stored = await repository.get(pet.id, collection, deadline);
  if (!stored || !samePet(stored, pet)) throw new Error(`Pet id ${pet.id} already holds another pet.`);
}

function samePet(a: Pet, b: Pet): boolean {
  return a.id === b.id && a.name === b.name && a.categoryId === b.categoryId && a.status === b.status;
}

export async function getPet(
  repository: PetRepository,
  id: number,
  collection: PetCollection,
  deadline?: Deadline,
): Promise<Pet> {
  const pet = await repository.get(id, collection, deadline);
  if (!pet) throw new PetNotFoundError(id);
  return pet;
}
