import type { Pet } from "../contract/schemas";
import type { PetCollection } from "./collection";
import type { PetPage, PetPageQuery, PetRepository } from "./repository";

/** A PetRepository in Maps, with the same ordering and paging rules, for unit tests and benchmarks. */
export class InMemoryPetRepository implements PetRepository {
  private lastId = 0;
  /** The clients' pets (the shared collection). */
  readonly pets = new Map<number, Pet>();
  /** Each synthetic key's pets, by key id. */
  private readonly synthetic = new Map<string, Map<number, Pet>>();

  private collection(collection: PetCollection): Map<number, Pet> {
    if (collection.kind === "shared") return this.pets;
    const pets = this.synthetic.get(collection.keyId) ?? new Map<number, Pet>();
    this.synthetic.set(collection.keyId, pets);
    return pets;
  }

  async allocateId(): Promise<number> {
    this.lastId += 1;
    return this.lastId;
  }

  async insert(pet: Pet, collection: PetCollection): Promise<"created" | "exists"> {
    const pets = this.collection(collection);
    if (pets.has(pet.id)) return "exists";
    pets.set(pet.id, { ...pet });
    return "created";
  }

  async get(id: number, collection: PetCollection): Promise<Pet | undefined> {
    const pet = this.collection(collection).get(id);
    return pet ? { ...pet } : undefined;
  }

  async page({ collection, limit, afterId, status }: PetPageQuery): Promise<PetPage> {
    const matches = [...this.collection(collection).values()]
      .filter((pet) => pet.id > afterId && (status === null || pet.status === status))
      .sort((a, b) => a.id - b.id);
    return { pets: matches.slice(0, limit).map((pet) => ({ ...pet })), hasMore: matches.length > limit };
  }
}
