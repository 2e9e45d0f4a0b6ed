/**
 * The requests the capacity page costs: shared by the model (./capacity.ts) and the measurement (./requestCost.ts),
 * which capacity.ts loads only after setting the handlers' environment.
 */
import type { OperationId } from "../../lib/routes";

/** Each log event as CloudWatch Logs counts it: its UTF-8 message plus 26 bytes (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html). */
export const LOG_EVENT_OVERHEAD_BYTES = 26;

/** The pets ./requestCost.ts seeds, which its gets ask for. */
export const SEEDED_PETS = 100;
const newPet = (index: number) => JSON.stringify({ name: `Rex the ${index}th`, categoryId: 3, status: "available" });

/**
 * One kind of request costed: its column title, its row's note, its function, its cold case in ./cold.ts if not the
 * function's, and its request number `index` (each create a new pet, each idempotent one a new key).
 */
interface Costed {
  readonly title: string;
  readonly note: string;
  readonly operation: OperationId;
  readonly coldCase?: string;
  readonly request: (index: number) => CostedCall;
}
type CostedCall = { search?: string; petId?: string; body?: string; headers?: Record<string, string> };

/** The requests costed, one per way an operation uses the table, in the page's column order. */
const costed = {
  listPets: { title: "list", note: " (20 pets)", operation: "listPets", request: () => ({ search: "limit=20" }) },
  listPetsByStatus: {
    title: "list by status",
    note: " (status, 20 pets)",
    operation: "listPets",
    request: () => ({ search: "status=available&limit=20" }),
  },
  getPet: { title: "get", note: "", operation: "getPet", request: (i) => ({ petId: String(1 + (i % SEEDED_PETS)) }) },
  createPet: { title: "create", note: "", operation: "createPet", request: (i) => ({ body: newPet(i) }) },
  createPetIdempotent: {
    title: "create, idempotent",
    note: " + Idempotency-Key",
    operation: "createPet",
    coldCase: "createPetIdempotent",
    request: (i) => ({
      body: newPet(i),
      headers: { "idempotency-key": `order-${String(i).padStart(8, "0")}-9f1c2b7e` },
    }),
  },
} satisfies Record<string, Costed>;
export type CostedRequest = keyof typeof costed;
export const COSTED_REQUESTS: Readonly<Record<CostedRequest, Costed>> = costed;
export const COSTED_KINDS = Object.keys(COSTED_REQUESTS) as CostedRequest[];
export const coldCaseOf = (kind: CostedRequest): string =>
  COSTED_REQUESTS[kind].coldCase ?? COSTED_REQUESTS[kind].operation;
