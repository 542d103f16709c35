/**
 * JoinBatches' own bookkeeping, over a fake store write: which joins go together, what is answered when
 * the write fails, and that joins arriving during a write make the next batch. That the batched update is
 * exact on the real engines is in test/storage/rounds.test.ts.
 */
import { JoinBatches, type JoinTarget, type SeatClaim } from "../../../../services/rounds/join-batches";
import type { RoundDoc } from "../../../../services/rounds/round-doc";

const round = (members_count = 0, max_members_count = 3): JoinTarget => ({
  _id: "r1",
  uniq_id: "R-TEST",
  entry_fee: "0.00",
  currency: "RUB",
  max_members_count,
  members_count,
});

const claim = (userId: string): SeatClaim => ({
  userId,
  member: { status: "joined", joined_at: new Date(), attributes: [] },
  announcement: { id: userId, channel: "c", payload: {}, recorded_at: new Date() },
  now: new Date(),
});

/** A store write that records each batch and answers a round with the batch's users added. */
function recordingWrite(answer: (users: string[]) => "added" | "refused" | Error = () => "added") {
  const batches: string[][] = [];
  let count = 0;
  const write = jest.fn(async (target: JoinTarget, claims: SeatClaim[]) => {
    const users = claims.map((c) => c.userId);
    batches.push(users);
    const outcome = answer(users);
    if (outcome instanceof Error) throw outcome;
    if (outcome === "refused") return null;
    count = Math.max(count, target.members_count) + users.length;
    return { ...round(count, target.max_members_count), rev: batches.length + 1 } as unknown as RoundDoc;
  });
  return { write, batches };
}

describe("JoinBatches", () => {
  it("when joins of a round are asked for in one go, then they are one write and each gets its result", async () => {
    const { write, batches } = recordingWrite();
    const joins = new JoinBatches(write);
    const results = await Promise.all(["a", "b"].map((u) => joins.add(round(), claim(u))));
    expect(batches).toEqual([["a", "b"]]);
    expect(results[0]).toBe(results[1]);
    expect(results[0]?.members_count).toBe(2);
  });

  it("when a round has no write under way, then its join is written without waiting for the next turn", async () => {
    const { write, batches } = recordingWrite();
    const joins = new JoinBatches(write);
    let turnEnded = false;
    setImmediate(() => (turnEnded = true)); // before the join: a join waiting for a turn comes after it
    await joins.add(round(), claim("a"));
    expect(turnEnded).toBe(false);
    expect(batches).toEqual([["a"]]);
  });

  it("when joins arrive while a write is under way, then they are the next batch, sized by the seats left", async () => {
    const { write, batches } = recordingWrite();
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const joins = new JoinBatches(async (target, claims) => {
      await gate;
      return write(target, claims);
    });
    const first = joins.add(round(0, 3), claim("a"));
    await new Promise((resolve) => setImmediate(resolve)); // the first write has started, held at the gate
    const later = ["b", "c", "d"].map((u) => joins.add(round(0, 3), claim(u)));
    open();
    const results = await Promise.all([first, ...later]);
    expect(batches).toEqual([["a"], ["b", "c"]]);
    expect(results.map((r) => r !== null)).toEqual([true, true, true, false]);
  });

  it("when a batch is refused, then its joins are written one by one and each gets its own result", async () => {
    const { write, batches } = recordingWrite((users) =>
      users.length > 1 || users[0] === "b" ? "refused" : "added",
    );
    const joins = new JoinBatches(write);
    const results = await Promise.all(["a", "b", "c"].map((u) => joins.add(round(), claim(u))));
    expect(batches).toEqual([["a", "b", "c"], ["a"], ["b"], ["c"]]);
    expect(results.map((r) => r !== null)).toEqual([true, false, true]);
  });

  it("when the write fails, then the joins in it fail with its error and those left out are not added", async () => {
    const failure = new Error("store down");
    const { write } = recordingWrite(() => failure);
    const joins = new JoinBatches(write);
    const outcomes = await Promise.allSettled(["a", "b", "c", "d"].map((u) => joins.add(round(), claim(u))));
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected", "fulfilled"]);
    expect(outcomes[0]).toMatchObject({ reason: failure });
    expect(outcomes[3]).toMatchObject({ value: null });
  });

  it("when the round seen is already full, then nothing is written and every join is not added", async () => {
    const { write } = recordingWrite();
    const joins = new JoinBatches(write);
    const results = await Promise.all(["a", "b"].map((u) => joins.add(round(3, 3), claim(u))));
    expect(results).toEqual([null, null]);
    expect(write).not.toHaveBeenCalled();
  });

  it("when a caller saw another max_members_count, then its join is written apart with its own conditions", async () => {
    const { write, batches } = recordingWrite();
    const joins = new JoinBatches(write);
    await Promise.all([joins.add(round(0, 3), claim("a")), joins.add(round(0, 10), claim("b"))]);
    expect(batches).toEqual([["a"], ["b"]]);
    expect(write.mock.calls.map(([target]) => target.max_members_count)).toEqual([3, 10]);
  });
});
