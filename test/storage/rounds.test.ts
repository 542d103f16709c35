/**
 * Joining is one conditional update; these cases prove it is exact under concurrency on every engine, both
 * as a raw findOneAndUpdate and through RoundsRepository.addMember, and that its conditions refuse.
 */
import type { CreateRoundParams } from "../../shared/contracts/rounds";
import { pendingJoin, RoundsRepository } from "../../services/rounds/rounds.repository";
import type { RoundDoc } from "../../services/rounds/round-doc";
import { describeEachEngine, freshCollection, uid } from "./engines";

const SEATS = 5;
const CONTENDERS = 200;

interface Room {
  _id: string;
  members_count: number;
  members: Record<string, { joined_at: Date }>;
}

const roundInput = (overrides: Partial<CreateRoundParams> = {}): CreateRoundParams => ({
  owner_id: "owner-1",
  item_id: "item-1",
  entry_fee: "100",
  max_members_count: SEATS,
  is_active: true,
  is_private: false,
  is_ended: false,
  is_event: false,
  start_time: null,
  end_time: new Date(Date.now() + 3_600_000).toISOString(),
  question: { theme: "Theme", emoji: null, category: "Category" },
  certificate: { text: "Certificate", discount_percent: 10 },
  locations: [],
  member_ids: [],
  favorite_of: [],
  ...overrides,
});

const userIds = (n: number): string[] => Array.from({ length: n }, (_, i) => `user-${i}-${uid("u")}`);

describeEachEngine("Conditional updates under concurrency", (store) => {
  it(`when ${CONTENDERS} distinct users race for ${SEATS} seats with findOneAndUpdate, then exactly ${SEATS} win`, async () => {
    const c = freshCollection<Room>(store());
    await c.insertOne({ _id: "room", members_count: 0, members: {} });
    const users = userIds(CONTENDERS);
    const now = new Date();

    const results = await Promise.all(
      users.map((u) =>
        c.findOneAndUpdate(
          { _id: "room", members_count: { $lt: SEATS }, [`members.${u}`]: { $exists: false } },
          { $set: { [`members.${u}`]: { joined_at: now } }, $inc: { members_count: 1 } },
        ),
      ),
    );

    const winners = users.filter((_, i) => results[i] !== null);
    expect(winners).toHaveLength(SEATS);
    // Each winner saw its own seat, and the seats were handed out one at a time.
    const seen = results.filter((r): r is Room => r !== null);
    expect(seen.map((r) => r.members_count).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
    winners.forEach((u, i) => expect(Object.keys(seen[i].members)).toContain(u));

    const room = await c.findOne({ _id: "room" });
    expect(room?.members_count).toBe(SEATS);
    expect(Object.keys(room?.members ?? {}).sort()).toEqual([...winners].sort());
  });

  it("when one user races 50 times for the same seat, then exactly one update wins", async () => {
    const c = freshCollection<Room>(store());
    await c.insertOne({ _id: "room", members_count: 0, members: {} });
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        c.findOneAndUpdate(
          { _id: "room", members_count: { $lt: SEATS }, "members.solo": { $exists: false } },
          { $set: { "members.solo": { joined_at: new Date() } }, $inc: { members_count: 1 } },
        ),
      ),
    );
    expect(results.filter((r) => r !== null)).toHaveLength(1);
    expect((await c.findOne({ _id: "room" }))?.members_count).toBe(1);
  });
});

describeEachEngine("RoundsRepository", (store) => {
  let repo: RoundsRepository;
  const now = () => new Date();

  beforeAll(async () => {
    repo = new RoundsRepository(store());
    await repo.init();
  });

  /** A round joined by these users in turn, each join's announcement in its outbox. */
  async function roundJoinedBy(users: string[]): Promise<RoundDoc> {
    let doc = await repo.create(roundInput({ end_time: null }), "RUB", now());
    for (const u of users) doc = (await repo.addMember(doc, u, [], now()))!;
    return doc;
  }

  /** Acknowledges these users' announcements all at once (one turn of the event loop). */
  const acknowledgeJoins = (doc: RoundDoc, users: string[]) =>
    Promise.all(users.map((u) => repo.outbox.acknowledge(pendingJoin(doc, u)!)));

  /** The stored round's outbox holds exactly these users' announcements; none: the count is gone too. */
  async function expectAnnouncementsOf(doc: RoundDoc, users: string[]): Promise<void> {
    const stored = await repo.findById(doc._id);
    if (users.length === 0) {
      expect(stored?.outbox_size).toBeUndefined();
      expect(stored?.outbox).toEqual({});
      return;
    }
    expect(stored?.outbox_size).toBe(users.length);
    // In any order: MongoDB applies a $set's new fields in the order of their names.
    expect(Object.keys(stored?.outbox ?? {}).sort()).toEqual(
      users.map((u) => pendingJoin(doc, u)!.entry.id).sort(),
    );
  }

  it("when a round is created, then findById returns it with Dates, members and favourites", async () => {
    const created = await repo.create(
      roundInput({
        entry_fee: "99.5",
        member_ids: ["m1", "m2"],
        favorite_of: ["f1"],
        start_time: "2030-01-01T10:00:00.000Z",
      }),
      "RUB",
      new Date("2029-12-31T00:00:00.000Z"),
    );
    const round = await repo.findById(created._id);
    expect(round).toEqual(created);
    expect(round?.uniq_id).toMatch(/^R-[2-9A-HJ-NP-Z]{6}$/);
    expect(round?.entry_fee).toBe("99.50");
    expect(round?.currency).toBe("RUB");
    expect(round?.variant).toBe("standard");
    expect(round?.members_count).toBe(2);
    expect(Object.keys(round?.members ?? {}).sort()).toEqual(["m1", "m2"]);
    expect(round?.members.m1.joined_at).toBeInstanceOf(Date);
    expect(round?.favorites).toEqual({ f1: true });
    expect(round?.start_time).toEqual(new Date("2030-01-01T10:00:00.000Z"));
    expect(round?.end_time).toBeInstanceOf(Date);
    expect(round?.created_at).toEqual(new Date("2029-12-31T00:00:00.000Z"));
    expect(round?.rev).toBe(1);
    await expect(repo.findById("missing")).resolves.toBeNull();
  });

  it(`when ${CONTENDERS} distinct users join a round of ${SEATS} concurrently, then exactly ${SEATS} joins succeed`, async () => {
    const round = await repo.create(roundInput(), "RUB", now());
    const users = userIds(CONTENDERS);
    const at = now();

    const results = await Promise.all(users.map((u) => repo.addMember(round, u, [1, 2], at)));

    const winners = users.filter((_, i) => results[i] !== null);
    expect(winners).toHaveLength(SEATS);
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(SEATS);
    expect(Object.keys(after?.members ?? {}).sort()).toEqual([...winners].sort());
    // Asked for in one turn: one conditional update took the seats (JoinBatches).
    expect(after?.rev).toBe(2);
    expect(after?.members[winners[0]]).toEqual({
      status: "joined",
      joined_at: at,
      attributes: [1, 2],
    });
    // Each seat came with its announcement, in the same update: exactly one per winner.
    expect(after?.outbox_size).toBe(SEATS);
    const announced = Object.values(after?.outbox ?? {}).map(
      (e) => (e.payload as { user_id: string }).user_id,
    );
    expect(announced.sort()).toEqual([...winners].sort());
  });

  it("when more joins than seats are asked for in one turn, then one write seats as many as fit and the rest are refused", async () => {
    const round = await repo.create(roundInput({ member_ids: ["m1"] }), "RUB", now());
    const users = userIds(8);
    const results = await Promise.all(users.map((u) => repo.addMember(round, u, [], now())));
    const winners = users.filter((_, i) => results[i] !== null);
    expect(winners).toEqual(users.slice(0, SEATS - 1));
    // Every winner got the round after the same write, holding all of them.
    for (const r of results.slice(0, SEATS - 1)) expect(r).toBe(results[0]);
    expect(results[0]?.members_count).toBe(SEATS);
    expect(results[0]?.rev).toBe(2);
    await expectAnnouncementsOf(results[0]!, winners);
  });

  it("when one user's join is asked for twice in one turn, then the user takes one seat and the second request is not added", async () => {
    const round = await repo.create(roundInput(), "RUB", now());
    const results = await Promise.all(["u", "u", "v"].map((u) => repo.addMember(round, u, [], now())));
    expect(results.map((r) => r !== null)).toEqual([true, false, true]);
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(2);
    expect(Object.keys(after?.members ?? {}).sort()).toEqual(["u", "v"]);
    expect(after?.outbox_size).toBe(2);
  });

  it("when a batch is refused because one of its users is already a member, then the others still join one by one", async () => {
    const round = await repo.create(roundInput({ end_time: null }), "RUB", now());
    const first = await repo.addMember(round, "early", [], now());
    // Joins that read the round before "early" joined: the batch's update fails on "early".
    const results = await Promise.all(["early", "u1", "u2"].map((u) => repo.addMember(round, u, [], now())));
    expect(results.map((r) => r !== null)).toEqual([false, true, true]);
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(3);
    expect(after?.rev).toBe((first?.rev ?? 0) + 2);
    const announced = Object.values(after?.outbox ?? {}).map(
      (e) => (e.payload as { user_id: string }).user_id,
    );
    expect(announced.sort()).toEqual(["early", "u1", "u2"]);
  });

  it("when two processes' batches race for the same seats, then exactly the seats there are are taken", async () => {
    const other = new RoundsRepository(store());
    await other.init();
    const round = await repo.create(roundInput(), "RUB", now());
    const users = userIds(40);
    const results = await Promise.all(
      users.map((u, i) => (i % 2 ? other : repo).addMember(round, u, [], now())),
    );
    const winners = users.filter((_, i) => results[i] !== null);
    expect(winners).toHaveLength(SEATS);
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(SEATS);
    expect(Object.keys(after?.members ?? {}).sort()).toEqual([...winners].sort());
    expect(after?.outbox_size).toBe(SEATS);
  });

  it("when a round already has members, then concurrent joins fill only the remaining seats", async () => {
    const round = await repo.create(roundInput({ member_ids: ["m1", "m2"] }), "RUB", now());
    const results = await Promise.all(userIds(50).map((u) => repo.addMember(round, u, [], now())));
    expect(results.filter((r) => r !== null)).toHaveLength(SEATS - 2);
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(SEATS);
    expect(Object.keys(after?.members ?? {})).toHaveLength(SEATS);
  });

  it("when a user joins, then addMember returns the round after the update", async () => {
    const round = await repo.create(roundInput(), "RUB", now());
    const joined = await repo.addMember(round, "joiner", [7], now());
    expect(joined?._id).toBe(round._id);
    expect(joined?.members_count).toBe(1);
    expect(joined?.members.joiner.attributes).toEqual([7]);
    expect(joined?.members.joiner.joined_at).toBeInstanceOf(Date);
    expect(joined?.rev).toBe(2);
  });

  it("when the user is already in the round, then addMember refuses and the round is unchanged", async () => {
    const round = await repo.create(roundInput({ member_ids: ["m1"] }), "RUB", now());
    await expect(repo.addMember(round, "m1", [], now())).resolves.toBeNull();
    expect(await repo.addMember(round, "m2", [], now())).not.toBeNull();
    await expect(repo.addMember(round, "m2", [], now())).resolves.toBeNull();
    const after = await repo.findById(round._id);
    expect(after?.members_count).toBe(2);
    expect(after?.rev).toBe(2);
  });

  it("when the round is full, then addMember refuses", async () => {
    const round = await repo.create(roundInput({ max_members_count: 1, member_ids: ["m1"] }), "RUB", now());
    await expect(repo.addMember(round, "late", [], now())).resolves.toBeNull();
    expect((await repo.findById(round._id))?.members_count).toBe(1);
  });

  it("when the round is ended, then addMember refuses", async () => {
    const round = await repo.create(roundInput({ is_ended: true }), "RUB", now());
    await expect(repo.addMember(round, "u", [], now())).resolves.toBeNull();
    expect((await repo.findById(round._id))?.members_count).toBe(0);
  });

  it("when the round is inactive, then addMember refuses", async () => {
    const round = await repo.create(roundInput({ is_active: false }), "RUB", now());
    await expect(repo.addMember(round, "u", [], now())).resolves.toBeNull();
    expect((await repo.findById(round._id))?.members_count).toBe(0);
  });

  it("when the round's end_time is in the past, then addMember refuses", async () => {
    const round = await repo.create(
      roundInput({ end_time: new Date(Date.now() - 1_000).toISOString() }),
      "RUB",
      now(),
    );
    await expect(repo.addMember(round, "u", [], now())).resolves.toBeNull();
    expect((await repo.findById(round._id))?.members_count).toBe(0);
  });

  it("when the round's end_time is exactly now, then addMember refuses", async () => {
    const end = new Date(Date.now() + 60_000);
    const round = await repo.create(roundInput({ end_time: end.toISOString() }), "RUB", now());
    await expect(repo.addMember(round, "u", [], end)).resolves.toBeNull();
  });

  it("when the round has no end_time, then addMember accepts", async () => {
    const round = await repo.create(roundInput({ end_time: null }), "RUB", now());
    expect((await repo.addMember(round, "u", [], now()))?.members_count).toBe(1);
  });

  it("when the caller's max_members_count is stale, then addMember refuses", async () => {
    const round = await repo.create(roundInput({ max_members_count: 3 }), "RUB", now());
    const stale = { ...round, max_members_count: 10 };
    await expect(repo.addMember(stale, "u", [], now())).resolves.toBeNull();
  });

  it("when two joins' announcements are acknowledged one by one, then the count follows and goes with the last", async () => {
    const round = await repo.create(roundInput({ end_time: null }), "RUB", now());
    const first = await repo.addMember(round, "u1", [], now());
    const second = await repo.addMember(first!, "u2", [], now());
    expect(second?.outbox_size).toBe(2);
    await repo.outbox.acknowledge(pendingJoin(second!, "u1")!);
    expect((await repo.findById(round._id))?.outbox_size).toBe(1);
    await repo.outbox.acknowledge(pendingJoin(second!, "u2")!);
    const after = await repo.findById(round._id);
    expect(after?.outbox_size).toBeUndefined();
    expect(after?.outbox).toEqual({});
  });

  it("when several joins' announcements are acknowledged at once, then they all leave and the count goes with them", async () => {
    const doc = await roundJoinedBy(["u1", "u2", "u3", "u4"]);
    expect(doc.outbox_size).toBe(4);
    // Three together (one write), then the last: the count follows, then goes.
    await acknowledgeJoins(doc, ["u1", "u2", "u3"]);
    await expectAnnouncementsOf(doc, ["u4"]);
    expect((await repo.findById(doc._id))?.rev).toBe(doc.rev);
    await acknowledgeJoins(doc, ["u4"]);
    await expectAnnouncementsOf(doc, []);
  });

  it("when a batch of acknowledgements holds one already removed (another relay), then the rest still leave and the count stays right", async () => {
    const doc = await roundJoinedBy(["u1", "u2", "u3"]);
    await acknowledgeJoins(doc, ["u1"]);
    await acknowledgeJoins(doc, ["u1", "u2"]);
    await expectAnnouncementsOf(doc, ["u3"]);
    await acknowledgeJoins(doc, ["u2", "u3"]);
    await expectAnnouncementsOf(doc, []);
  });

  it("when a join's announcement is acknowledged, then it leaves the outbox without a new revision, once", async () => {
    const round = await repo.create(roundInput({ end_time: null }), "RUB", now());
    const joined = await repo.addMember(round, "u", [], now());
    const pending = joined ? pendingJoin(joined, "u") : null;
    expect(pending?.entry.payload).toMatchObject({ round_id: round._id, user_id: "u", entry_fee: "100.00" });
    const pendingOfRound = async () =>
      (await repo.outbox.pending(1000)).filter((p) => p.docId === round._id).map((p) => p.entry.id);
    expect(await pendingOfRound()).toEqual([pending?.entry.id]);
    await repo.outbox.acknowledge(pending!);
    await repo.outbox.acknowledge(pending!);
    const after = await repo.findById(round._id);
    // The count goes with the last entry: the sparse index holds only documents with facts to publish.
    expect(after?.outbox_size).toBeUndefined();
    expect(after?.outbox).toEqual({});
    expect(after?.rev).toBe(joined?.rev);
    expect(await pendingOfRound()).toEqual([]);
  });
});
