import type { Pet } from "../contract/schemas";
import type { PetPage, PetPageQuery, PetRepository } from "./repository";

/** A PetRepository in a Map, with the same ordering and paging rules, for unit tests and benchmarks. */
export class InMemoryPetRepository implements PetRepository {
  private lastId = 0;
  readonly pets = new Map<number, Pet>();

  async allocateId(): Promise<number> {
    this.lastId += 1;
    return this.lastId;
  }

  async insert(pet: Pet): Promise<"created" | "exists"> {
    if (this.pets.has(pet.id)) return "exists";
    this.pets.set(pet.id, { ...pet });
    return "created";
  }

  async get(id: number): Promise<Pet | undefined> {
    const pet = this.pets.get(id);
    return pet ? { ...pet } : undefined;
  }

  async page({ limit, afterId, status }: PetPageQuery): Promise<PetPage> {
    const matches = [...this.pets.values()]
      .filter((pet) => pet.id > afterId && (status === null || pet.status === status))
      .sort((a, b) => a.id - b.id);
    return { pets: matches.slice(0, limit).map((pet) => ({ ...pet })), hasMore: matches.length > limit };
  }
}
