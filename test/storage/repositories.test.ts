/**
 * The repositories' own operations on every engine: users and friendships, stores and their id sequences,
 * refresh tokens.
 */
import type { CreateItemParams } from "../../shared/contracts/stores";
import { RefreshTokensRepository } from "../../services/auth/refresh-tokens.repository";
import { StoresRepository } from "../../services/stores/stores.repository";
import { UsersRepository, friendshipId } from "../../services/users/users.repository";
import { describeEachEngine, uid } from "./engines";

describeEachEngine("UsersRepository", (store) => {
  let repo: UsersRepository;

  beforeAll(async () => {
    repo = new UsersRepository(store());
    await repo.init();
  });

  it("when a user is created, then findById returns it with nulls filled in and created_at a Date", async () => {
    const now = new Date("2030-02-03T04:05:06.007Z");
    const created = await repo.create({ phone: "+70000000001", username: "alice", first_name: "Alice" }, now);
    expect(created).not.toBeNull();
    const found = await repo.findById(created!._id);
    expect(found).toEqual({
      _id: created!._id,
      phone: "+70000000001",
      username: "alice",
      first_name: "Alice",
      last_name: null,
      avatar_url: null,
      removed_at: null,
      created_at: now,
    });
    expect(found?.created_at).toBeInstanceOf(Date);
  });

  it("when a second user has a phone already taken, then create resolves to null", async () => {
    expect(await repo.create({ phone: "+70000000002", username: "bob" }, new Date())).not.toBeNull();
    await expect(repo.create({ phone: "+70000000002", username: "bob2" }, new Date())).resolves.toBeNull();
  });

  it("when a user is created with an id already taken, then create resolves to null", async () => {
    const id = uid("user");
    expect(await repo.create({ id, phone: "+70000000003", username: "carol" }, new Date())).not.toBeNull();
    await expect(
      repo.create({ id, phone: "+70000000004", username: "dave" }, new Date()),
    ).resolves.toBeNull();
    expect((await repo.findById(id))?.phone).toBe("+70000000003");
  });

  it("when users are looked up by ids, then only the known ones come back", async () => {
    const a = await repo.create({ phone: "+70000000005", username: "a" }, new Date());
    const b = await repo.create({ phone: "+70000000006", username: "b" }, new Date());
    const found = await repo.findByIds([a!._id, b!._id, "missing"]);
    expect(found.map((u) => u._id).sort()).toEqual([a!._id, b!._id].sort());
    await expect(repo.findByIds([])).resolves.toEqual([]);
  });

  it("when a user is marked removed twice, then removed_at keeps the first date", async () => {
    const user = await repo.create({ phone: "+70000000007", username: "gone" }, new Date());
    const first = new Date("2030-01-01T00:00:00.000Z");
    const removed = await repo.markRemoved(user!._id, first);
    expect(removed?.removed_at).toEqual(first);
    expect(removed?.removed_at).toBeInstanceOf(Date);
    const again = await repo.markRemoved(user!._id, new Date("2031-01-01T00:00:00.000Z"));
    expect(again?.removed_at).toEqual(first);
  });

  it("when an unknown user is marked removed, then markRemoved resolves to null", async () => {
    await expect(repo.markRemoved("missing", new Date())).resolves.toBeNull();
  });

  it("when a friendship is added twice in either order, then only the first add counts", async () => {
    const a = uid("a");
    const b = uid("b");
    await expect(repo.addFriendship(a, b, new Date())).resolves.toBe(true);
    await expect(repo.addFriendship(a, b, new Date())).resolves.toBe(false);
    await expect(repo.addFriendship(b, a, new Date())).resolves.toBe(false);
  });

  it("when two users are friends, then areFriends is true in both directions and false for others", async () => {
    const a = uid("a");
    const b = uid("b");
    const c = uid("c");
    await repo.addFriendship(b, a, new Date());
    await expect(repo.areFriends(a, b)).resolves.toBe(true);
    await expect(repo.areFriends(b, a)).resolves.toBe(true);
    await expect(repo.areFriends(a, c)).resolves.toBe(false);
    await expect(repo.areFriends(c, b)).resolves.toBe(false);
  });

  it("when the same friendship is added concurrently, then exactly one add succeeds", async () => {
    const a = uid("a");
    const b = uid("b");
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 ? repo.addFriendship(a, b, new Date()) : repo.addFriendship(b, a, new Date()),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(friendshipId(a, b)).toBe(friendshipId(b, a));
  });
});

describeEachEngine("StoresRepository", (store) => {
  let repo: StoresRepository;

  const itemInput = (storeId: number, overrides: Partial<CreateItemParams> = {}): CreateItemParams => ({
    store_id: storeId,
    kind: "product",
    name: "Mug",
    platform_price: 12.5,
    assets: [{ name: "front", path: "/img/mug.png", type: "image", sort_order: 0, is_primary: true }],
    attribute_values: [
      {
        id: 1,
        key_name: "color",
        name: "Color",
        type: "select",
        choices: [{ id: 10, value: "Red", value_hex: "#f00" }],
      },
    ],
    ...overrides,
  });

  beforeAll(async () => {
    repo = new StoresRepository(store());
    await repo.init();
  });

  it("when nextId is called on a new sequence, then it yields 1, 2, 3 independently of other sequences", async () => {
    const seq = uid("seq");
    const other = uid("other");
    expect(await repo.nextId(seq)).toBe(1);
    expect(await repo.nextId(seq)).toBe(2);
    expect(await repo.nextId(other)).toBe(1);
    expect(await repo.nextId(seq)).toBe(3);
  });

  it("when nextId is called concurrently, then every call gets a distinct consecutive id", async () => {
    const seq = uid("seq");
    expect(await repo.nextId(seq)).toBe(1); // the counter exists before the race
    const got = await Promise.all(Array.from({ length: 30 }, () => repo.nextId(seq)));
    expect([...got].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));
  });

  it("when stores are created, then they get consecutive integer ids and are found by them", async () => {
    const now = new Date("2030-03-04T05:06:07.008Z");
    const first = await repo.createStore(
      { name: "First", is_blogger: false, manager_ids: ["m1"] },
      "RUB",
      now,
    );
    const second = await repo.createStore(
      { name: "Second", is_blogger: true, currency: "USD", logo_url: "/logo.png", manager_ids: [] },
      "RUB",
      now,
    );
    expect(Number.isInteger(first._id)).toBe(true);
    expect(second._id).toBe(first._id + 1);
    expect(await repo.findStore(first._id)).toEqual({
      _id: first._id,
      name: "First",
      logo_url: null,
      is_blogger: false,
      currency: "RUB",
      manager_ids: ["m1"],
      created_at: now,
    });
    expect((await repo.findStore(second._id))?.currency).toBe("USD");
    await expect(repo.findStore(second._id + 1000)).resolves.toBeNull();
  });

  it("when an item is created, then findItem returns it with nulls filled in and Dates as Date", async () => {
    const shop = await repo.createStore(
      { name: "Shop", is_blogger: false, manager_ids: [] },
      "RUB",
      new Date(),
    );
    const now = new Date("2030-04-05T06:07:08.009Z");
    const item = await repo.createItem(
      itemInput(shop._id, { kind: "event", start_time: "2030-05-01T12:00:00.000Z", duration: 60 }),
      now,
    );
    const found = await repo.findItem(item._id);
    expect(found).toEqual(item);
    expect(found?.store_id).toBe(shop._id);
    expect(found?.kind).toBe("event");
    expect(found?.sku).toBeNull();
    expect(found?.location).toBeNull();
    expect(found?.duration).toBe(60);
    expect(found?.start_time).toEqual(new Date("2030-05-01T12:00:00.000Z"));
    expect(found?.start_time).toBeInstanceOf(Date);
    expect(found?.created_at).toEqual(now);
    expect(found?.attribute_values[0].choices[0].value_hex).toBe("#f00");
    await expect(repo.findItem("missing")).resolves.toBeNull();
  });
});

describeEachEngine("RefreshTokensRepository", (store) => {
  let repo: RefreshTokensRepository;
  const now = new Date("2030-06-07T08:09:10.011Z");
  const expires = new Date("2030-07-07T08:09:10.011Z");

  beforeAll(async () => {
    repo = new RefreshTokensRepository(store());
    await repo.init();
  });

  it("when a family is started, then findByHash returns the token with its Dates", async () => {
    const hash = uid("hash");
    const token = await repo.startFamily("user-1", hash, now, expires);
    const found = await repo.findByHash(hash);
    expect(found).toEqual(token);
    expect(found).toMatchObject({ _id: hash, user_id: "user-1", rotated_at: null, revoked_at: null });
    expect(found?.created_at).toEqual(now);
    expect(found?.expires_at).toEqual(expires);
    expect(found?.expires_at).toBeInstanceOf(Date);
    await expect(repo.findByHash("missing")).resolves.toBeNull();
  });

  it("when two families are started, then each gets its own family_id", async () => {
    const a = await repo.startFamily("user-2", uid("hash"), now, expires);
    const b = await repo.startFamily("user-2", uid("hash"), now, expires);
    expect(a.family_id).not.toBe(b.family_id);
  });

  it("when a user is revoked, then every live token of that user is revoked once and others are untouched", async () => {
    const user = uid("user");
    const other = uid("user");
    const hashes = [uid("hash"), uid("hash"), uid("hash")];
    for (const h of hashes) await repo.startFamily(user, h, now, expires);
    const otherHash = uid("hash");
    await repo.startFamily(other, otherHash, now, expires);

    const first = new Date("2030-06-08T00:00:00.000Z");
    expect(await repo.revokeUser(user, first)).toBe(3);
    for (const h of hashes) expect((await repo.findByHash(h))?.revoked_at).toEqual(first);
    expect((await repo.findByHash(otherHash))?.revoked_at).toBeNull();

    expect(await repo.revokeUser(user, new Date("2030-06-09T00:00:00.000Z"))).toBe(0);
    expect((await repo.findByHash(hashes[0]))?.revoked_at).toEqual(first);
  });
});
