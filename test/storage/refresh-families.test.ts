/**
 * RefreshFamiliesRepository on every engine: the conditional updates behind refresh-token rotation with
 * one document per sign-in (docs/decisions/0003), written once in MongoDB's query language.
 */
import {
  RefreshFamiliesRepository,
  type NextToken,
  type RefreshFamilyDoc,
} from "../../services/auth/refresh-families.repository";
import { describeEachEngine, uid } from "./engines";

const at = (iso: string) => new Date(iso);

describeEachEngine("RefreshFamiliesRepository", (store) => {
  let repo: RefreshFamiliesRepository;
  const created = at("2030-06-01T00:00:00.000Z");
  const expires = at("2030-07-01T00:00:00.000Z");
  const rotatedAt = at("2030-06-02T10:00:00.000Z");
  const later = at("2030-06-02T10:00:05.000Z");

  beforeAll(async () => {
    repo = new RefreshFamiliesRepository(store());
    await repo.init();
  });

  /** A new family at generation 0; resolves to its id. */
  async function family(userId = uid("user"), expiresAt = expires): Promise<string> {
    const id = uid("family");
    const doc: RefreshFamilyDoc = {
      _id: id,
      user_id: userId,
      generation: 0,
      current_hash: uid("hash"),
      parent_generation: null,
      rotated_at: null,
      grace_used_at: null,
      lost_generations: [],
      legacy_hash: null,
      created_at: created,
      expires_at: expiresAt,
      revoked_at: null,
    };
    expect(await repo.insert(doc)).toBe(true);
    return id;
  }

  const next = (generation: number): NextToken => ({
    generation,
    hash: uid("hash"),
    expiresAt: at("2030-07-02T10:00:00.000Z"),
  });

  /** A family rotated once, at `rotatedAt`: generation 1, parent 0. */
  async function rotated(): Promise<string> {
    const id = await family();
    expect(await repo.rotate(id, 0, next(1), rotatedAt)).toBe(true);
    return id;
  }

  it("when a family is inserted, then find returns it with its Dates, and a second insert with its id resolves false", async () => {
    const id = await family("user-1");
    const found = await repo.find(id);
    expect(found).toMatchObject({ _id: id, user_id: "user-1", generation: 0, lost_generations: [] });
    expect(found?.created_at).toEqual(created);
    expect(found?.expires_at).toBeInstanceOf(Date);
    await expect(repo.insert({ ...(found as RefreshFamilyDoc), user_id: "someone" })).resolves.toBe(false);
    expect((await repo.find(id))?.user_id).toBe("user-1");
    await expect(repo.find("missing")).resolves.toBeNull();
  });

  describe("rotate", () => {
    it("when the live generation is rotated, then it resolves true and the document names the new token, its parent, the time and the new expiry", async () => {
      const id = await family();
      const n = next(1);
      await expect(repo.rotate(id, 0, n, rotatedAt)).resolves.toBe(true);
      expect(await repo.find(id)).toMatchObject({
        generation: 1,
        current_hash: n.hash,
        parent_generation: 0,
        rotated_at: rotatedAt,
        grace_used_at: null,
        expires_at: n.expiresAt,
      });
    });

    it("when a generation that is no longer live is rotated, then it resolves false and nothing changes", async () => {
      const id = await rotated();
      const before = await repo.find(id);
      await expect(repo.rotate(id, 0, next(1), later)).resolves.toBe(false);
      expect(await repo.find(id)).toEqual(before);
    });

    it("when a revoked family is rotated, then it resolves false", async () => {
      const id = await family();
      await repo.revoke(id, created);
      await expect(repo.rotate(id, 0, next(1), rotatedAt)).resolves.toBe(false);
      expect((await repo.find(id))?.generation).toBe(0);
    });

    it("when 20 rotations of one generation run concurrently, then exactly one wins and its token is recorded", async () => {
      const id = await family();
      const candidates = Array.from({ length: 20 }, () => next(1));
      const results = await Promise.all(candidates.map((n) => repo.rotate(id, 0, n, rotatedAt)));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await repo.find(id))?.current_hash).toBe(candidates[results.indexOf(true)].hash);
    });

    it("when a rotation follows a spent grace window, then the window is open again for the new parent", async () => {
      const id = await rotated();
      await repo.useGrace(id, 1, created, next(2), later, [1]);
      await expect(repo.rotate(id, 2, next(3), later)).resolves.toBe(true);
      expect(await repo.find(id)).toMatchObject({
        parent_generation: 2,
        grace_used_at: null,
        lost_generations: [1],
      });
    });
  });

  describe("useGrace", () => {
    it("when the parent was retired after `since`, then it resolves true: the new token replaces the live one, which joins the lost generations", async () => {
      const id = await rotated();
      const n = next(2);
      await expect(repo.useGrace(id, 1, at("2030-06-02T09:59:35.000Z"), n, later, [1])).resolves.toBe(true);
      expect(await repo.find(id)).toMatchObject({
        generation: 2,
        current_hash: n.hash,
        parent_generation: 0,
        rotated_at: rotatedAt,
        grace_used_at: later,
        lost_generations: [1],
        expires_at: n.expiresAt,
      });
    });

    it("when `since` equals the rotation time, then the grace is still granted (inclusive bound)", async () => {
      const id = await rotated();
      await expect(repo.useGrace(id, 1, rotatedAt, next(2), rotatedAt, [1])).resolves.toBe(true);
    });

    it("when the parent was retired before `since`, then it resolves false and nothing changes", async () => {
      const id = await rotated();
      const since = new Date(rotatedAt.getTime() + 1);
      await expect(repo.useGrace(id, 1, since, next(2), since, [1])).resolves.toBe(false);
      expect(await repo.find(id)).toMatchObject({ generation: 1, grace_used_at: null, lost_generations: [] });
    });

    it("when the family was never rotated, then it resolves false (a null rotated_at is not in range)", async () => {
      const id = await family();
      // A `since` after 1970: NeDB compares null as 0 against a Date, so an epoch `since` would match null.
      await expect(repo.useGrace(id, 0, created, next(1), rotatedAt, [0])).resolves.toBe(false);
      expect((await repo.find(id))?.generation).toBe(0);
    });

    it("when the grace was spent already, or the live token was used since, then it resolves false", async () => {
      const spent = await rotated();
      await repo.useGrace(spent, 1, created, next(2), later, [1]);
      await expect(repo.useGrace(spent, 2, created, next(3), later, [1, 2])).resolves.toBe(false);
      const used = await rotated();
      await repo.rotate(used, 1, next(2), later);
      await expect(repo.useGrace(used, 1, created, next(2), later, [1])).resolves.toBe(false);
    });

    it("when the family was revoked, then it resolves false", async () => {
      const id = await rotated();
      await repo.revoke(id, rotatedAt);
      await expect(repo.useGrace(id, 1, created, next(2), later, [1])).resolves.toBe(false);
      expect((await repo.find(id))?.grace_used_at).toBeNull();
    });

    it("when 20 grace retries run concurrently, then exactly one wins", async () => {
      const id = await rotated();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => repo.useGrace(id, 1, created, next(2), later, [1])),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("revoke, revokeUser and deleteExpiredBefore", () => {
    it("when a family is revoked twice, then the first resolves true, the second false, and the first time stays", async () => {
      const id = await family();
      await expect(repo.revoke(id, rotatedAt)).resolves.toBe(true);
      await expect(repo.revoke(id, later)).resolves.toBe(false);
      expect((await repo.find(id))?.revoked_at).toEqual(rotatedAt);
      await expect(repo.revoke(uid("missing"), later)).resolves.toBe(false);
    });

    it("when a user is revoked, then every live family of theirs is revoked once and others are untouched", async () => {
      const userId = uid("user");
      const ids = [await family(userId), await rotated(), await family(userId)];
      const bystander = await family();
      await repo.revokeUser(userId, rotatedAt); // the rotated one belongs to someone else
      expect((await repo.find(ids[0]))?.revoked_at).toEqual(rotatedAt);
      expect((await repo.find(ids[2]))?.revoked_at).toEqual(rotatedAt);
      expect((await repo.find(ids[1]))?.revoked_at).toBeNull();
      expect((await repo.find(bystander))?.revoked_at).toBeNull();
      await expect(repo.revokeUser(userId, later)).resolves.toBe(0);
    });

    it("when families expired before the bound, then exactly those are deleted", async () => {
      const gone = await family(uid("user"), at("2020-01-01T00:00:00.000Z"));
      const edge = await family(uid("user"), at("2020-01-02T00:00:00.000Z"));
      await expect(repo.deleteExpiredBefore(at("2020-01-02T00:00:00.000Z"))).resolves.toBe(1);
      await expect(repo.find(gone)).resolves.toBeNull();
      await expect(repo.find(edge)).resolves.not.toBeNull();
    });
  });
});
