import type { Pet } from "../contract/schemas";
import type {
  BeginResult,
  IdempotencyRecord,
  IdempotencyScope,
  IdempotencyStore,
  NewLock,
  TakeOverResult,
} from "./store";
import { isExpired } from "./store";

/** The same conditional writes on a Map, for unit tests and the benchmark. */
export class InMemoryIdempotencyStore implements IdempotencyStore {
  readonly records = new Map<string, IdempotencyRecord>();

  async begin(
    scope: IdempotencyScope,
    record: { requestHash: string; expiresAtSeconds: number } & NewLock,
    now: Date,
  ): Promise<BeginResult> {
    const current = this.records.get(this.key(scope));
    if (current && !isExpired(current, now)) return { acquired: false, current };
    this.records.set(this.key(scope), { state: "in_progress", ...record });
    return { acquired: true };
  }

  async takeOver(scope: IdempotencyScope, previousToken: string, lock: NewLock, now: Date): Promise<TakeOverResult> {
    const current = this.records.get(this.key(scope));
    if (
      current?.state !== "in_progress" ||
      current.lockToken !== previousToken ||
      current.lockedUntilMs > now.getTime() ||
      isExpired(current, now)
    ) {
      return { acquired: false };
    }
    this.records.set(this.key(scope), { ...current, ...lock });
    return { acquired: true, petId: current.petId };
  }

  async reservePetId(scope: IdempotencyScope, lockToken: string, petId: number): Promise<boolean> {
    const current = this.held(scope, lockToken);
    if (!current || current.petId !== undefined) return false;
    this.records.set(this.key(scope), { ...current, petId });
    return true;
  }

  async complete(scope: IdempotencyScope, lockToken: string, pet: Pet, expiresAtSeconds: number): Promise<boolean> {
    const current = this.held(scope, lockToken);
    if (!current) return false;
    this.records.set(this.key(scope), {
      state: "completed",
      requestHash: current.requestHash,
      expiresAtSeconds,
      pet: { ...pet },
    });
    return true;
  }

  async releaseLock(scope: IdempotencyScope, lockToken: string): Promise<void> {
    const current = this.held(scope, lockToken);
    if (current) this.records.set(this.key(scope), { ...current, lockedUntilMs: 0 });
  }

  async forget(scope: IdempotencyScope, lockToken: string): Promise<boolean> {
    const current = this.held(scope, lockToken);
    if (!current || current.petId !== undefined) return false;
    this.records.delete(this.key(scope));
    return true;
  }

  private held(scope: IdempotencyScope, lockToken: string) {
    const current = this.records.get(this.key(scope));
    return current?.state === "in_progress" && current.lockToken === lockToken ? current : undefined;
  }

  private key(scope: IdempotencyScope): string {
    return JSON.stringify([scope.apiKeyId, scope.key]);
  }
}
