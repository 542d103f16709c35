/**
 * The accounts repositories on every engine: the conditional updates behind refresh-token rotation, API
 * keys, event-fed payments, app versions per platform and friend ids.
 */
import { newApiKey, type ApiKeyDoc } from "../../services/auth/api-keys";
import { ApiKeysRepository } from "../../services/auth/api-keys.repository";
import { RefreshTokensRepository } from "../../services/auth/refresh-tokens.repository";
import { AppVersionsRepository } from "../../services/settings/app-versions.repository";
import { PaymentsRepository, paymentIdentity } from "../../services/users/payments.repository";
import { UsersRepository } from "../../services/users/users.repository";
import { DuplicateKeyError } from "../../shared/storage";
import { describeEachEngine, uid } from "./engines";

const at = (iso: string) => new Date(iso);

describeEachEngine("RefreshTokensRepository rotation", (store) => {
  let repo: RefreshTokensRepository;
  const created = at("2030-06-01T00:00:00.000Z");
  const expires = at("2030-07-01T00:00:00.000Z");
  const rotatedAt = at("2030-06-02T10:00:00.000Z");

  beforeAll(async () => {
    repo = new RefreshTokensRepository(store());
    await repo.init();
  });

  /** A new family's first token; resolves to its hash. */
  async function live(userId = uid("user")): Promise<string> {
    const hash = uid("hash");
    await repo.startFamily(userId, hash, created, expires);
    return hash;
  }

  async function rotated(): Promise<{ hash: string; successor: string }> {
    const hash = await live();
    const successor = uid("hash");
    expect(await repo.markRotated(hash, successor, rotatedAt)).toBe(true);
    return { hash, successor };
  }

  describe("markRotated", () => {
    it("when a live token is rotated, then it resolves true and records the time and the successor", async () => {
      const hash = await live();
      const successor = uid("hash");
      await expect(repo.markRotated(hash, successor, rotatedAt)).resolves.toBe(true);
      const doc = await repo.findByHash(hash);
      expect(doc).toMatchObject({ rotated_at: rotatedAt, replaced_by: successor, revoked_at: null });
      expect(doc?.rotated_at).toBeInstanceOf(Date);
    });

    it("when a token is rotated a second time, then it resolves false and keeps the first successor", async () => {
      const { hash, successor } = await rotated();
      await expect(repo.markRotated(hash, uid("hash"), at("2030-06-03T00:00:00.000Z"))).resolves.toBe(false);
      expect(await repo.findByHash(hash)).toMatchObject({ rotated_at: rotatedAt, replaced_by: successor });
    });

    it("when a revoked token is rotated, then it resolves false and nothing changes", async () => {
      const hash = await live();
      const family = (await repo.findByHash(hash))!.family_id;
      await repo.revokeFamily(family, created);
      await expect(repo.markRotated(hash, uid("hash"), rotatedAt)).resolves.toBe(false);
      expect(await repo.findByHash(hash)).toMatchObject({ rotated_at: null, replaced_by: null });
    });

    it("when an unknown token is rotated, then it resolves false and creates nothing", async () => {
      const hash = uid("missing");
      await expect(repo.markRotated(hash, uid("hash"), rotatedAt)).resolves.toBe(false);
      await expect(repo.findByHash(hash)).resolves.toBeNull();
    });

    it("when 20 rotations of one token run concurrently, then exactly one wins and its successor is recorded", async () => {
      const hash = await live();
      const successors = Array.from({ length: 20 }, () => uid("hash"));
      const results = await Promise.all(successors.map((s) => repo.markRotated(hash, s, rotatedAt)));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = successors[results.indexOf(true)];
      expect((await repo.findByHash(hash))?.replaced_by).toBe(winner);
    });
  });

  describe("useGrace", () => {
    it("when a token rotated after `since` spends its grace, then it resolves true and names the new successor", async () => {
      const { hash } = await rotated();
      const next = uid("hash");
      const now = at("2030-06-02T10:00:05.000Z");
      await expect(repo.useGrace(hash, next, at("2030-06-02T09:59:35.000Z"), now)).resolves.toBe(true);
      const doc = await repo.findByHash(hash);
      expect(doc).toMatchObject({ grace_used_at: now, replaced_by: next, rotated_at: rotatedAt });
      expect(doc?.grace_used_at).toBeInstanceOf(Date);
    });

    it("when `since` equals the rotation time, then the grace is still granted (inclusive bound)", async () => {
      const { hash } = await rotated();
      await expect(repo.useGrace(hash, uid("hash"), rotatedAt, rotatedAt)).resolves.toBe(true);
    });

    it("when the token was rotated before `since`, then it resolves false and nothing changes", async () => {
      const { hash, successor } = await rotated();
      const since = new Date(rotatedAt.getTime() + 1);
      await expect(repo.useGrace(hash, uid("hash"), since, since)).resolves.toBe(false);
      expect(await repo.findByHash(hash)).toMatchObject({ grace_used_at: null, replaced_by: successor });
    });

    it("when the grace is spent a second time, then it resolves false and keeps the first grace successor", async () => {
      const { hash } = await rotated();
      const first = uid("hash");
      await repo.useGrace(hash, first, created, rotatedAt);
      await expect(repo.useGrace(hash, uid("hash"), created, rotatedAt)).resolves.toBe(false);
      expect((await repo.findByHash(hash))?.replaced_by).toBe(first);
    });

    it("when the token was never rotated, then it resolves false (a null rotated_at is not in range)", async () => {
      const hash = await live();
      // A `since` after 1970: NeDB compares null as 0 against a Date, so an epoch `since` would match null.
      await expect(repo.useGrace(hash, uid("hash"), created, rotatedAt)).resolves.toBe(false);
      expect(await repo.findByHash(hash)).toMatchObject({ grace_used_at: null, replaced_by: null });
    });

    it("when the rotated token was revoked, then it resolves false", async () => {
      const { hash } = await rotated();
      await repo.revokeFamily((await repo.findByHash(hash))!.family_id, rotatedAt);
      await expect(repo.useGrace(hash, uid("hash"), created, rotatedAt)).resolves.toBe(false);
      expect((await repo.findByHash(hash))?.grace_used_at).toBeNull();
    });

    it("when 20 grace retries of one token run concurrently, then exactly one wins", async () => {
      const { hash } = await rotated();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => repo.useGrace(hash, uid("hash"), created, rotatedAt)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("revokeIfUnused", () => {
    it("when the token is live and never used, then it resolves true and is revoked", async () => {
      const hash = await live();
      await expect(repo.revokeIfUnused(hash, rotatedAt)).resolves.toBe(true);
      const doc = await repo.findByHash(hash);
      expect(doc?.revoked_at).toEqual(rotatedAt);
      expect(doc?.revoked_at).toBeInstanceOf(Date);
    });

    it("when the token was already revoked, then it resolves false and keeps the first revocation time", async () => {
      const hash = await live();
      await repo.revokeIfUnused(hash, rotatedAt);
      await expect(repo.revokeIfUnused(hash, at("2030-06-09T00:00:00.000Z"))).resolves.toBe(false);
      expect((await repo.findByHash(hash))?.revoked_at).toEqual(rotatedAt);
    });

    it("when the token was used (rotated), then it resolves false and stays unrevoked", async () => {
      const { hash } = await rotated();
      await expect(repo.revokeIfUnused(hash, rotatedAt)).resolves.toBe(false);
      expect((await repo.findByHash(hash))?.revoked_at).toBeNull();
    });

    it("when the token is unknown, then it resolves false", async () => {
      await expect(repo.revokeIfUnused(uid("missing"), rotatedAt)).resolves.toBe(false);
    });

    it("when 20 revocations of one unused token run concurrently, then exactly one reports it", async () => {
      const hash = await live();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => repo.revokeIfUnused(hash, rotatedAt)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });

  describe("revokeFamily and revokeUser", () => {
    /** A family of three: root (rotated) → middle (rotated) → newest (live). */
    async function chain(userId: string) {
      const root = await live(userId);
      const familyId = (await repo.findByHash(root))!.family_id;
      const middle = uid("hash");
      const newest = uid("hash");
      await repo.markRotated(root, middle, rotatedAt);
      await repo.insert({ hash: middle, familyId, userId, parent: root, now: rotatedAt, expiresAt: expires });
      await repo.markRotated(middle, newest, rotatedAt);
      await repo.insert({
        hash: newest,
        familyId,
        userId,
        parent: middle,
        now: rotatedAt,
        expiresAt: expires,
      });
      return { familyId, hashes: [root, middle, newest] };
    }

    it("when a successor is inserted, then it joins the family with its parent and a clean state", async () => {
      const userId = uid("user");
      const { familyId, hashes } = await chain(userId);
      expect(await repo.findByHash(hashes[2])).toMatchObject({
        family_id: familyId,
        user_id: userId,
        parent: hashes[1],
        rotated_at: null,
        replaced_by: null,
        grace_used_at: null,
        revoked_at: null,
      });
    });

    it("when a family is revoked, then every token of it is revoked, already-revoked ones keep their time, other families stay live", async () => {
      const userId = uid("user");
      const { familyId, hashes } = await chain(userId);
      const other = await live(userId);
      const early = at("2030-06-03T00:00:00.000Z");
      await repo.revokeIfUnused(hashes[2], early);

      const now = at("2030-06-04T00:00:00.000Z");
      await expect(repo.revokeFamily(familyId, now)).resolves.toBe(2);
      expect((await repo.findByHash(hashes[0]))?.revoked_at).toEqual(now);
      expect((await repo.findByHash(hashes[1]))?.revoked_at).toEqual(now);
      expect((await repo.findByHash(hashes[2]))?.revoked_at).toEqual(early);
      expect((await repo.findByHash(other))?.revoked_at).toBeNull();

      await expect(repo.revokeFamily(familyId, at("2030-06-05T00:00:00.000Z"))).resolves.toBe(0);
      expect((await repo.findByHash(hashes[0]))?.revoked_at).toEqual(now);
    });

    it("when an unknown family is revoked, then it resolves 0", async () => {
      await expect(repo.revokeFamily(uid("family"), rotatedAt)).resolves.toBe(0);
    });

    it("when a user is revoked, then the tokens of all their families are revoked, rotated ones included", async () => {
      const userId = uid("user");
      const a = await chain(userId);
      const b = await chain(userId);
      const bystander = await live();
      await expect(repo.revokeUser(userId, rotatedAt)).resolves.toBe(6);
      for (const hash of [...a.hashes, ...b.hashes]) {
        expect((await repo.findByHash(hash))?.revoked_at).toEqual(rotatedAt);
      }
      expect((await repo.findByHash(bystander))?.revoked_at).toBeNull();
      // A revoked token can be neither rotated nor granted grace any more.
      await expect(repo.markRotated(a.hashes[2], uid("hash"), rotatedAt)).resolves.toBe(false);
      await expect(repo.useGrace(a.hashes[1], uid("hash"), created, rotatedAt)).resolves.toBe(false);
    });
  });
});

describeEachEngine("ApiKeysRepository", (store) => {
  let repo: ApiKeysRepository;
  const now = at("2030-05-01T00:00:00.000Z");

  beforeAll(() => {
    repo = new ApiKeysRepository(store());
  });

  it("when a key is created, then findById returns it with Dates and a null revocation", async () => {
    const k = newApiKey();
    await repo.create({ id: k.id, scope: "notifications", secretHash: k.secretHash, label: "push" }, now);
    const found = await repo.findById(k.id);
    expect(found).toEqual<ApiKeyDoc>({
      _id: k.id,
      scope: "notifications",
      secret_hash: k.secretHash,
      label: "push",
      created_at: now,
      revoked_at: null,
    });
    expect(found?.created_at).toBeInstanceOf(Date);
  });

  it("when a key is created, then the stored document holds the hash and never the secret or the full key", async () => {
    const k = newApiKey();
    await repo.create({ id: k.id, scope: "app", secretHash: k.secretHash, label: null }, now);
    const raw = await store().collection<ApiKeyDoc>("api_keys").findOne({ _id: k.id });
    const dump = JSON.stringify(raw);
    expect(dump).toContain(k.secretHash);
    expect(dump).not.toContain(k.secret);
    expect(dump).not.toContain(k.key);
    expect(raw?.label).toBeNull();
  });

  it("when a key id is unknown, then findById resolves to null", async () => {
    await expect(repo.findById(newApiKey().id)).resolves.toBeNull();
  });

  it("when a key is created with an id already taken, then it is a DuplicateKeyError and the first key stays", async () => {
    const k = newApiKey();
    await repo.create({ id: k.id, scope: "app", secretHash: k.secretHash, label: null }, now);
    await expect(
      repo.create({ id: k.id, scope: "notifications", secretHash: newApiKey().secretHash, label: null }, now),
    ).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await repo.findById(k.id)).toMatchObject({ scope: "app", secret_hash: k.secretHash });
  });

  it("when a key is revoked twice, then the first call resolves true, the second false, and the first time stays", async () => {
    const k = newApiKey();
    await repo.create({ id: k.id, scope: "app", secretHash: k.secretHash, label: null }, now);
    const first = at("2030-05-02T00:00:00.000Z");
    await expect(repo.revoke(k.id, first)).resolves.toBe(true);
    await expect(repo.revoke(k.id, at("2030-05-03T00:00:00.000Z"))).resolves.toBe(false);
    const found = await repo.findById(k.id);
    expect(found?.revoked_at).toEqual(first);
    expect(found?.revoked_at).toBeInstanceOf(Date);
  });

  it("when an unknown key is revoked, then it resolves false and creates nothing", async () => {
    const id = newApiKey().id;
    await expect(repo.revoke(id, now)).resolves.toBe(false);
    await expect(repo.findById(id)).resolves.toBeNull();
  });

  it("when one key is revoked 20 times concurrently, then exactly one revocation reports it", async () => {
    const k = newApiKey();
    await repo.create({ id: k.id, scope: "app", secretHash: k.secretHash, label: null }, now);
    const results = await Promise.all(Array.from({ length: 20 }, () => repo.revoke(k.id, now)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});

describeEachEngine("PaymentsRepository", (store) => {
  let repo: PaymentsRepository;

  beforeAll(async () => {
    repo = new PaymentsRepository(store());
    await repo.init();
  });

  const pending = (userId: string, roundId: string, createdAt: Date, amount = "100.00") => ({
    user_id: userId,
    round_id: roundId,
    amount,
    currency: "RUB",
    description: `Entry fee for ${roundId}`,
    created_at: createdAt,
  });

  it("when a pending payment is created, then it is stored with its derived id, order id and status", async () => {
    const userId = uid("user");
    const roundId = uid("round");
    const createdAt = at("2030-04-01T00:00:00.000Z");
    await expect(repo.createPending(pending(userId, roundId, createdAt, "250.50"))).resolves.toBe(true);
    const { id, orderId } = paymentIdentity(userId, roundId);
    const [doc] = await repo.listByUser(userId);
    expect(doc).toEqual({
      _id: id,
      order_id: orderId,
      status: "pending",
      user_id: userId,
      round_id: roundId,
      amount: "250.50",
      currency: "RUB",
      description: `Entry fee for ${roundId}`,
      created_at: createdAt,
    });
    expect(doc.created_at).toBeInstanceOf(Date);
  });

  it("when the same user and round are paid for twice, then the second call resolves false and the first payment stays", async () => {
    const userId = uid("user");
    const roundId = uid("round");
    await expect(repo.createPending(pending(userId, roundId, at("2030-04-01T00:00:00.000Z")))).resolves.toBe(
      true,
    );
    await expect(
      repo.createPending(pending(userId, roundId, at("2030-04-02T00:00:00.000Z"), "999.00")),
    ).resolves.toBe(false);
    const list = await repo.listByUser(userId);
    expect(list).toHaveLength(1);
    expect(list[0].amount).toBe("100.00");
    expect(list[0].created_at).toEqual(at("2030-04-01T00:00:00.000Z"));
  });

  it("when 20 creations for the same user and round run concurrently, then exactly one succeeds and one payment exists", async () => {
    const userId = uid("user");
    const roundId = uid("round");
    const results = await Promise.all(
      Array.from({ length: 20 }, () => repo.createPending(pending(userId, roundId, new Date()))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await repo.listByUser(userId)).toHaveLength(1);
  });

  it("when a user has several payments, then listByUser returns only theirs, newest first, ties by id", async () => {
    const userId = uid("user");
    const other = uid("user");
    const rounds = [uid("round"), uid("round"), uid("round"), uid("round")];
    const tie = at("2030-04-03T00:00:00.000Z");
    await repo.createPending(pending(userId, rounds[0], at("2030-04-01T00:00:00.000Z")));
    await repo.createPending(pending(userId, rounds[1], at("2030-04-05T00:00:00.000Z")));
    await repo.createPending(pending(userId, rounds[2], tie));
    await repo.createPending(pending(userId, rounds[3], tie));
    await repo.createPending(pending(other, rounds[0], at("2030-04-09T00:00:00.000Z")));

    const list = await repo.listByUser(userId);
    const tied = [paymentIdentity(userId, rounds[2]).id, paymentIdentity(userId, rounds[3]).id].sort();
    expect(list.map((p) => p._id)).toEqual([
      paymentIdentity(userId, rounds[1]).id,
      ...tied,
      paymentIdentity(userId, rounds[0]).id,
    ]);
    expect(list.every((p) => p.user_id === userId)).toBe(true);
    expect((await repo.listByUser(other)).map((p) => p.round_id)).toEqual([rounds[0]]);
  });

  it("when a user has no payments, then listByUser resolves to an empty list", async () => {
    await expect(repo.listByUser(uid("user"))).resolves.toEqual([]);
  });
});

describeEachEngine("AppVersionsRepository", (store) => {
  let repo: AppVersionsRepository;

  beforeAll(() => {
    // Platforms are fixed ids, so the cases share their documents: the store is fresh per engine, and
    // "ru_store" stays unset until the last case.
    repo = new AppVersionsRepository(store());
  });

  it("when a platform has no versions yet, then find resolves to null", async () => {
    await expect(repo.find("ru_store")).resolves.toBeNull();
  });

  it("when versions are set, then find returns them", async () => {
    await repo.set({ platform: "android", current_version: "2.4.0", min_version: "2.0.0" }, new Date());
    await expect(repo.find("android")).resolves.toEqual({
      platform: "android",
      current_version: "2.4.0",
      min_version: "2.0.0",
    });
  });

  it("when versions are set again, then they are replaced in the one document of the platform", async () => {
    await repo.set({ platform: "ios", current_version: "1.0.0", min_version: "1.0.0" }, new Date());
    await repo.set({ platform: "ios", current_version: "1.2.0", min_version: "1.1" }, new Date());
    await expect(repo.find("ios")).resolves.toEqual({
      platform: "ios",
      current_version: "1.2.0",
      min_version: "1.1",
    });
    expect(await store().collection("app_versions").count({ _id: "ios" })).toBe(1);
  });

  it("when one platform is set, then the others are untouched", async () => {
    await repo.set({ platform: "android", current_version: "3.0.0", min_version: "2.5.0" }, new Date());
    await repo.set({ platform: "ios", current_version: "9.9.9", min_version: "9.0.0" }, new Date());
    expect((await repo.find("android"))?.current_version).toBe("3.0.0");
    expect((await repo.find("ios"))?.current_version).toBe("9.9.9");
  });

  it("when versions are set, then the stored document records when", async () => {
    const when = at("2030-08-01T00:00:00.000Z");
    await repo.set({ platform: "ru_store", current_version: "1.0.0", min_version: "0.9.0" }, when);
    const raw = await store()
      .collection<{ _id: string; updated_at: Date }>("app_versions")
      .findOne({ _id: "ru_store" });
    expect(raw?.updated_at).toEqual(when);
    expect(raw?.updated_at).toBeInstanceOf(Date);
  });
});

describeEachEngine("UsersRepository friendIds", (store) => {
  let repo: UsersRepository;

  beforeAll(async () => {
    repo = new UsersRepository(store());
    await repo.init();
  });

  it("when friendships are added in either direction, then friendIds lists the other side for both users", async () => {
    const a = uid("a");
    const b = uid("b");
    const c = uid("c");
    const d = uid("d");
    await repo.addFriendship(a, b, new Date());
    await repo.addFriendship(c, a, new Date());
    await repo.addFriendship(b, d, new Date());

    expect((await repo.friendIds(a)).sort()).toEqual([b, c].sort());
    expect((await repo.friendIds(b)).sort()).toEqual([a, d].sort());
    expect(await repo.friendIds(c)).toEqual([a]);
    expect(await repo.friendIds(d)).toEqual([b]);
  });

  it("when a friendship is added twice, then the friend is listed once", async () => {
    const a = uid("a");
    const b = uid("b");
    await repo.addFriendship(a, b, new Date());
    await repo.addFriendship(b, a, new Date());
    expect(await repo.friendIds(a)).toEqual([b]);
    expect(await repo.friendIds(b)).toEqual([a]);
  });

  it("when a user has no friends, then friendIds resolves to an empty list", async () => {
    await expect(repo.friendIds(uid("lonely"))).resolves.toEqual([]);
  });
});
