import { deriveSnapshot } from "../../../../services/rounds/round-snapshot";
import type { UserProfile } from "../../../../shared/contracts/users";
import {
  ALICE,
  BOB,
  makeItem,
  makeRoundDoc,
  makeSnapshot,
  membersOf,
  OWNER,
  profiles,
} from "../../support/fixtures";

const TTL = 60_000;
const profileOf = (id: string): UserProfile => ({ ...profiles[ALICE], id, username: `user_${id}` });

describe("deriveSnapshot", () => {
  const base = makeSnapshot(
    { members: membersOf(ALICE) },
    { [OWNER]: profiles[OWNER], [ALICE]: profiles[ALICE] },
  );
  const joined = makeRoundDoc({ members: membersOf(ALICE, BOB), members_count: 2, rev: 2 });

  it("when a member joined, then only the newcomer's profile is read and the rest is reused", async () => {
    const fetch = jest.fn(async (ids: string[]) => Object.fromEntries(ids.map((id) => [id, profileOf(id)])));
    const snap = await deriveSnapshot(base, joined, base.assembled_at + 1_000, TTL, fetch);
    expect(fetch).toHaveBeenCalledWith([BOB]);
    expect(snap?.members.map((m) => m.user_id)).toEqual([ALICE, BOB]);
    expect(snap?.profiles[BOB]).toEqual(profileOf(BOB));
    expect(snap?.profiles[OWNER]).toBe(base.profiles[OWNER]);
    expect(snap?.item).toBe(base.item);
    expect(snap?.members_count).toBe(2);
  });

  it("when derived, then it keeps its base's assembly time, so it is never older than one lifetime", async () => {
    const snap = await deriveSnapshot(base, joined, base.assembled_at + 1_000, TTL, async () => ({}));
    expect(snap?.assembled_at).toBe(base.assembled_at);
  });

  it("when the newcomer has no profile (removed meanwhile), then the snapshot has none for it", async () => {
    const snap = await deriveSnapshot(base, joined, base.assembled_at, TTL, async () => ({}));
    expect(snap && Object.keys(snap.profiles).sort()).toEqual([ALICE, OWNER].sort());
  });

  it("when the base has less than a quarter of its lifetime left, then nothing is derived", async () => {
    const fetch = jest.fn(async () => ({}));
    expect(await deriveSnapshot(base, joined, base.assembled_at + 0.8 * TTL, TTL, fetch)).toBeNull();
    expect(fetch).not.toHaveBeenCalled();
  });

  it("when the base is of another item or has no assembly time, then nothing is derived", async () => {
    const otherItem = makeSnapshot({}, profiles, { ...makeItem(), id: "another-item" });
    expect(await deriveSnapshot(otherItem, joined, otherItem.assembled_at, TTL, async () => ({}))).toBeNull();
    const older = { ...base, assembled_at: undefined } as unknown as typeof base;
    expect(await deriveSnapshot(older, joined, Date.now(), TTL, async () => ({}))).toBeNull();
  });
});
