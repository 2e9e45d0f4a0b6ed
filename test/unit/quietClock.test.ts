import { afterEach, describe, expect, it } from "vitest";
import { issueApiKey, KEY_CACHE_TTL_MS } from "../../lib/auth/apiKeys";
import { InMemoryApiKeyStore } from "../../lib/auth/inMemoryApiKeyStore";
import { createApiKeyVerifier } from "../../lib/auth/verifier";
import { CLOCK_STEP_MS, enterContainer, installSteppedClock, type QuietClock } from "../../scripts/bench/steppedClock";

const realDateNow = Date.now;
afterEach(() => {
  Date.now = realDateNow;
});

describe("the warm bench's quiet-container clock (scripts/bench/steppedClock.ts)", () => {
  it("moves each container on by just over a second per request of its own, whatever the others do", () => {
    installSteppedClock();
    const ours: QuietClock = { offsetMs: 0 };
    const other: QuietClock = { offsetMs: 0 };
    const seconds: number[] = [];
    for (let request = 0; request < 5; request++) {
      enterContainer(ours);
      seconds.push(Math.floor(Date.now() / 1000));
      for (let i = 0; i < 3; i++) enterContainer(other);
    }
    enterContainer(ours);
    expect(new Set(seconds).size).toBe(5);
    expect(ours.offsetMs).toBe(6 * CLOCK_STEP_MS);
    expect(other.offsetMs).toBe(15 * CLOCK_STEP_MS);
  });

  it("has the key cache look the key up once in 30 of a container's requests, as the bench checks", async () => {
    installSteppedClock();
    const store = new InMemoryApiKeyStore();
    const { key } = await issueApiKey(store, "prod", "bench");
    const verifier = createApiKeyVerifier(store, "prod", Date.now);
    const ours: QuietClock = { offsetMs: 0 };
    const other: QuietClock = { offsetMs: 0 };
    for (let request = 0; request < 300; request++) {
      enterContainer(ours);
      await verifier.verify(key);
      enterContainer(other);
    }
    expect(Math.ceil(KEY_CACHE_TTL_MS / CLOCK_STEP_MS)).toBe(30);
    expect(store.lookups).toBe(10);
  });
});
