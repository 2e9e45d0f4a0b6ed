/** The client package's types (client/src/schema.ts) are generated from the OpenAPI document and must not drift from it. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { clientTypesFile, generateClientTypes } from "../../scripts/clientTypes";

describe("the client package's generated types", () => {
  it("are exactly what `npm run client:types` generates from the current document", async () => {
    const committed = readFileSync(clientTypesFile, "utf8");

    const fresh = await generateClientTypes();

    expect(committed === fresh, "client/src/schema.ts is stale: run `npm run client:types` and commit it").toBe(true);
  });

  it("describe the three operations and leave the create's status optional", async () => {
    const fresh = await generateClientTypes();

    expect(fresh).toMatch(/get: operations\["listPets"\]/);
    expect(fresh).toMatch(/post: operations\["createPet"\]/);
    expect(fresh).toMatch(/@deprecated\s+[\s\S]*get: operations\["getPet"\]/);
    expect(fresh).toMatch(/NewPet: \{[^}]*status\?: components\["schemas"\]\["PetStatus"\];/);
  });
});
