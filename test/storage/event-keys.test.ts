/**
 * The Idempotency-Keys of store events on every engine (docs/decisions/0023): a key is taken by one
 * request at a time (a lease), keeps the event id it was given until it expires, frees itself when its
 * holder died, and is deleted by the sweep once expired, never while a request holds it.
 */
import { EventKeysRepository, eventKeyId } from "../../services/stores/event-keys.repository";
import { describeEachEngine, uid } from "./engines";

const T0 = new Date("2030-01-01T12:00:00.000Z");
const LEASE_MS = 130_000;
const TTL_MS = 24 * 3600_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

describeEachEngine("EventKeysRepository", (store) => {
  let keys: EventKeysRepository;
  const key = () => eventKeyId(uid("user-"), uid("key-"));

  beforeAll(async () => {
    keys = new EventKeysRepository(store());
    await keys.init();
  });

  it("when a key is first claimed, then it gets an event id, and another request is refused while the lease runs", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    expect(first).toEqual({ claimed: true, eventId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(await keys.claim(id, "lease-b", at(1000), LEASE_MS, TTL_MS)).toEqual({ claimed: false });
    expect(await keys.eventIdOf(id, at(1000))).toBe((first as { eventId: string }).eventId);
  });

  it("when the same request claims again (a repeated call), then it holds the key with the same event id", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    expect(await keys.claim(id, "lease-a", at(10), LEASE_MS, TTL_MS)).toEqual(first);
  });

  it("when the holder gives the key back, then the next request takes it with the same event id", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    expect(await keys.release(id, "lease-a", at(5000))).toBe(true);
    expect(await keys.claim(id, "lease-b", at(6000), LEASE_MS, TTL_MS)).toEqual(first);
  });

  it("when another request gives back a key it no longer holds, then the holder keeps it", async () => {
    const id = key();
    await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    expect(await keys.release(id, "lease-b", at(10))).toBe(false);
    expect(await keys.claim(id, "lease-c", at(20), LEASE_MS, TTL_MS)).toEqual({ claimed: false });
  });

  it("when the holder died (its lease ran out), then a retry takes the key over with the same event id", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    expect(await keys.claim(id, "lease-b", at(LEASE_MS - 1), LEASE_MS, TTL_MS)).toEqual({ claimed: false });
    expect(await keys.claim(id, "lease-b", at(LEASE_MS), LEASE_MS, TTL_MS)).toEqual(first);
  });

  it("when two retries take over a free key at once, then exactly one holds it", async () => {
    const id = key();
    await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    await keys.release(id, "lease-a", at(1));
    const outcomes = await Promise.all(
      ["lease-b", "lease-c", "lease-d"].map((lease) => keys.claim(id, lease, at(2), LEASE_MS, TTL_MS)),
    );
    expect(outcomes.filter((o) => o.claimed)).toHaveLength(1);
  });

  it("when the key has expired, then it is unknown, and claiming it again gives a new event id", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    await keys.release(id, "lease-a", at(1));
    expect(await keys.eventIdOf(id, at(TTL_MS - 1))).toBe((first as { eventId: string }).eventId);
    expect(await keys.eventIdOf(id, at(TTL_MS))).toBeNull();
    const again = await keys.claim(id, "lease-b", at(TTL_MS), LEASE_MS, TTL_MS);
    expect(again).toEqual({ claimed: true, eventId: expect.any(String) });
    expect((again as { eventId: string }).eventId).not.toBe((first as { eventId: string }).eventId);
  });

  it("when the sweep runs, then expired keys go and the others stay", async () => {
    const sweepAt = at(10 * TTL_MS);
    const old = key();
    const young = key();
    await keys.claim(old, "lease-a", at(10 * TTL_MS - TTL_MS - 1), LEASE_MS, TTL_MS);
    await keys.claim(young, "lease-b", at(10 * TTL_MS - 1), LEASE_MS, TTL_MS);
    expect(await keys.deleteExpired(sweepAt)).toBeGreaterThanOrEqual(1);
    expect(await keys.eventIdOf(old, at(0))).toBeNull();
    expect(await keys.eventIdOf(young, sweepAt)).not.toBeNull();
  });

  it("when a request takes a key over near its expiry, then the key outlives that request's lease", async () => {
    const id = key();
    const first = await keys.claim(id, "lease-a", T0, LEASE_MS, TTL_MS);
    await keys.release(id, "lease-a", at(1));
    const late = at(TTL_MS - 1000);
    expect(await keys.claim(id, "lease-b", late, LEASE_MS, TTL_MS)).toEqual(first);
    await keys.deleteExpired(at(TTL_MS + 1000));
    expect(await keys.eventIdOf(id, at(TTL_MS + 1000))).toBe((first as { eventId: string }).eventId);
    expect(await keys.claim(id, "lease-c", at(TTL_MS + 1000), LEASE_MS, TTL_MS)).toEqual({ claimed: false });
  });

  it("when a TTL shorter than the lease is configured, then a new key still outlives its first lease", async () => {
    const id = key();
    await keys.claim(id, "lease-a", T0, LEASE_MS, 60_000);
    expect(await keys.eventIdOf(id, at(LEASE_MS - 1))).not.toBeNull();
  });
});

describe("eventKeyId", () => {
  it("when two users send the same key, then their keys are different records", () => {
    expect(eventKeyId("alice", "k")).not.toBe(eventKeyId("bob", "k"));
    expect(eventKeyId("alice", "k")).toBe(eventKeyId("alice", "k"));
    // The separator keeps ("ab", "c") and ("a", "bc") apart.
    expect(eventKeyId("ab", "c")).not.toBe(eventKeyId("a", "bc"));
  });
});
