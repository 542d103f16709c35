import { buildSnapshot, type RoundSnapshot } from "../../../../services/rounds/round-snapshot";
import { getRound, joinRound, type RoundsDeps } from "../../../../services/rounds/rounds.domain";
import { joinedEvent } from "../../../../services/rounds/rounds.repository";
import type { RoundDoc } from "../../../../services/rounds/round-doc";
import { FullRounds } from "../../../../services/rounds/full-rounds";
import { RoundMemberJoinedEvent } from "../../../../shared/contracts/rounds";
import { Round } from "../../../../shared/contracts/round";
import { ConflictError, ErrorType, NotFoundError, RequestValidationError } from "../../../../shared/errors";
import { check } from "../../../../shared/validation";
import {
  ALICE,
  AN_HOUR_AGO,
  BOB,
  makeItem,
  makeRoundDoc,
  NOW,
  OWNER,
  profiles,
  STRANGER,
} from "../../support/fixtures";

/**
 * An in-memory stand-in for the collaborators. `addMember` applies the same conditions as the
 * repository's conditional update, so the domain sees what it would see against a real store.
 */
function fakeDeps(initial: RoundDoc, friends: [string, string][] = []) {
  const state = { doc: initial };
  const events: RoundMemberJoinedEvent[] = [];
  const repo = {
    findById: jest.fn(async (id: string): Promise<RoundDoc | null> =>
      id === state.doc._id ? state.doc : null,
    ),
    addMember: jest.fn(
      async (
        round: Pick<RoundDoc, "_id" | "max_members_count">,
        userId: string,
        attributes: number[],
        now: Date,
      ): Promise<RoundDoc | null> => {
        const d = state.doc;
        const applies =
          d._id === round._id &&
          d.is_active &&
          !d.is_ended &&
          (d.end_time === null || d.end_time > now) &&
          d.max_members_count === round.max_members_count &&
          d.members_count < round.max_members_count &&
          !d.members[userId];
        if (!applies) return null;
        state.doc = {
          ...d,
          members: {
            ...d.members,
            [userId]: { status: "joined", joined_at: now, attributes },
          },
          members_count: d.members_count + 1,
          rev: d.rev + 1,
        };
        return state.doc;
      },
    ),
  };
  const deps = {
    repo,
    fullRounds: new FullRounds(),
    snapshotOf: jest.fn(async (doc: RoundDoc, _base?: RoundSnapshot) =>
      buildSnapshot(doc, profiles, makeItem(), Date.now()),
    ),
    invalidate: jest.fn(async (_roundId: string, _rev: number) => undefined),
    areFriends: jest.fn(async (a: string, b: string) =>
      friends.some(([x, y]) => (x === a && y === b) || (x === b && y === a)),
    ),
    joined: jest.fn(async (doc: RoundDoc, userId: string) => {
      events.push(joinedEvent(doc, userId, doc.members[userId]));
    }),
    warn: jest.fn((_message: string, _err: unknown) => undefined),
    now: () => NOW,
  } satisfies RoundsDeps;
  return { deps, repo, state, events };
}

const privateRound = () => makeRoundDoc({ is_private: true });

describe("getRound", () => {
  it("when the round is public, then any caller gets it rendered for them", async () => {
    const { deps } = fakeDeps(makeRoundDoc());
    const round = await getRound(deps, "round-1", STRANGER);
    expect(check(Round, round)).toBe(true);
    expect(round).toMatchObject({ id: "round-1", status: "open", in_favorites: false });
    expect(deps.areFriends).not.toHaveBeenCalled();
  });

  it("when the round does not exist, then it is a NotFoundError 'Round not found'", async () => {
    const { deps } = fakeDeps(makeRoundDoc());
    const err = await getRound(deps, "nope", ALICE).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: 404, type: ErrorType.NOT_FOUND, message: "Round not found" });
  });

  it("when the owner reads their private round, then they get it", async () => {
    const { deps } = fakeDeps(privateRound());
    await expect(getRound(deps, "round-1", OWNER)).resolves.toMatchObject({
      id: "round-1",
      is_private: true,
    });
  });

  it("when a member reads a private round, then they get it without a friendship check", async () => {
    const { deps } = fakeDeps(privateRound());
    await expect(getRound(deps, "round-1", ALICE)).resolves.toMatchObject({
      id: "round-1",
      in_favorites: true,
    });
    expect(deps.areFriends).not.toHaveBeenCalled();
  });

  it("when a friend of the owner reads a private round, then they get it", async () => {
    const { deps } = fakeDeps(privateRound(), [[OWNER, BOB]]);
    await expect(getRound(deps, "round-1", BOB)).resolves.toMatchObject({ id: "round-1" });
    expect(deps.areFriends).toHaveBeenCalledWith(OWNER, BOB);
  });

  it("when anyone else reads a private round, then it is 404 'Round not found', not 403", async () => {
    const { deps } = fakeDeps(privateRound(), [[ALICE, STRANGER]]);
    const err = await getRound(deps, "round-1", STRANGER).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ code: 404, message: "Round not found" });
    expect(deps.snapshotOf).not.toHaveBeenCalled();
  });

  it("when the round is read, then the computed fields use the deps' clock", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ end_time: new Date(NOW.getTime() + 125_000) }));
    await expect(getRound(deps, "round-1", ALICE)).resolves.toMatchObject({ seconds_to_end: 125 });
  });
});

describe("joinRound", () => {
  it("when a new user joins an open round, then they become a member and the round is returned", async () => {
    const { deps, state } = fakeDeps(makeRoundDoc());
    const round = await joinRound(deps, "round-1", BOB, [101]);
    expect(check(Round, round)).toBe(true);
    expect(round.members_count).toBe(2);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE, BOB]);
    expect(round.format_status).toBe("Open: 1 of 3 seats left");
    expect(state.doc.members[BOB]).toEqual({
      status: "joined",
      joined_at: NOW,
      attributes: [101],
    });
  });

  it("when the join's request is traced, then its trace context is recorded with the announcement", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc());
    const trace = { trace_id: "req-1", parent_id: "span-1" };
    await joinRound({ ...deps, trace }, "round-1", BOB, [102, 201]);
    expect(repo.addMember).toHaveBeenCalledWith(
      expect.objectContaining({ _id: "round-1" }),
      BOB,
      [102, 201],
      NOW,
      trace,
    );
  });

  it("when a join succeeds, then it is announced once with a typed event and the cache is invalidated", async () => {
    const { deps, repo, events } = fakeDeps(makeRoundDoc());
    await joinRound(deps, "round-1", BOB, [102, 201]);
    expect(repo.addMember).toHaveBeenCalledTimes(1);
    expect(repo.addMember).toHaveBeenCalledWith(
      expect.objectContaining({ _id: "round-1" }),
      BOB,
      [102, 201],
      NOW,
      undefined,
    );
    expect(deps.invalidate).toHaveBeenCalledTimes(1);
    expect(deps.invalidate).toHaveBeenCalledWith("round-1", 1);
    // The answer's snapshot is asked for with the one read before the join, to be derived from it.
    const [[, firstBase], [afterJoin, base]] = deps.snapshotOf.mock.calls;
    expect(firstBase).toBeUndefined();
    expect(afterJoin.rev).toBe(2);
    expect(base).toBe(await deps.snapshotOf.mock.results[0].value);
    expect(deps.joined).toHaveBeenCalledTimes(1);
    expect(events).toEqual([
      {
        round_id: "round-1",
        uniq_id: "R-ABCDEF",
        user_id: BOB,
        attributes: [102, 201],
        entry_fee: "150.00",
        currency: "RUB",
        joined_at: NOW.toISOString(),
      },
    ]);
    expect(check(RoundMemberJoinedEvent, events[0])).toBe(true);
  });

  it("when the user is already a member, then the round comes back unchanged with no write and no event", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc());
    const round = await joinRound(deps, "round-1", ALICE, ["not even checked"]);
    expect(round.members_count).toBe(1);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE]);
    expect(repo.addMember).not.toHaveBeenCalled();
    expect(deps.joined).not.toHaveBeenCalled();
    expect(deps.invalidate).not.toHaveBeenCalled();
  });

  it("when the same user joins twice, then the second join is a no-op", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc());
    const first = await joinRound(deps, "round-1", BOB, [101]);
    const second = await joinRound(deps, "round-1", BOB, [101]);
    expect(second.members_count).toBe(first.members_count);
    expect(repo.addMember).toHaveBeenCalledTimes(1);
    expect(deps.joined).toHaveBeenCalledTimes(1);
  });

  it("when the round is full, then it is a ConflictError 'Round is full' and nothing is written", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc({ members_count: 3 }));
    const err = await joinRound(deps, "round-1", BOB, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ code: 409, type: ErrorType.CONFLICT, message: "Round is full" });
    expect(repo.addMember).not.toHaveBeenCalled();
    expect(deps.joined).not.toHaveBeenCalled();
  });

  it("when the round is flagged ended, then it is a ConflictError 'Round has ended'", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ is_ended: true }));
    await expect(joinRound(deps, "round-1", BOB, [101])).rejects.toMatchObject({
      code: 409,
      message: "Round has ended",
    });
  });

  it("when the round's end_time has passed, then it is a ConflictError 'Round has ended'", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ end_time: AN_HOUR_AGO }));
    await expect(joinRound(deps, "round-1", BOB, [101])).rejects.toMatchObject({
      code: 409,
      message: "Round has ended",
    });
  });

  it("when the round is not active, then it is a ConflictError 'Round is not active'", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ is_active: false }));
    const err = await joinRound(deps, "round-1", BOB, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ code: 409, message: "Round is not active" });
  });

  it("when the last seat is taken between the read and the write, then it is 409 'Round is full'", async () => {
    const { deps, repo, state } = fakeDeps(makeRoundDoc({ members_count: 2, max_members_count: 3 }));
    repo.addMember.mockImplementationOnce(async () => {
      // Someone else took the last seat first: the conditional update does not apply.
      state.doc = { ...state.doc, members_count: 3, rev: state.doc.rev + 1 };
      return null;
    });
    const err = await joinRound(deps, "round-1", BOB, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ code: 409, message: "Round is full" });
    expect(repo.addMember).toHaveBeenCalledTimes(1);
    expect(repo.findById).toHaveBeenCalledTimes(2);
    expect(deps.joined).not.toHaveBeenCalled();
    expect(deps.invalidate).not.toHaveBeenCalled();
  });

  it("when the conditional update fails after this process saw the round fill up, then it is 409 without a second read", async () => {
    const { deps, repo, state } = fakeDeps(makeRoundDoc({ members_count: 2, max_members_count: 3 }));
    repo.addMember.mockImplementationOnce(async () => {
      // Another request of this process took the last seat first, and saw the round full.
      state.doc = { ...state.doc, members_count: 3, rev: state.doc.rev + 1 };
      deps.fullRounds.remember(state.doc);
      return null;
    });
    const err = await joinRound(deps, "round-1", BOB, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ code: 409, message: "Round is full" });
    expect(repo.findById).toHaveBeenCalledTimes(1);
    expect(deps.joined).not.toHaveBeenCalled();
  });

  it("when the round changed but still has a seat, then the join is retried and succeeds once", async () => {
    const { deps, repo, state } = fakeDeps(makeRoundDoc());
    repo.addMember.mockImplementationOnce(async () => {
      state.doc = { ...state.doc, rev: state.doc.rev + 1 };
      return null;
    });
    const round = await joinRound(deps, "round-1", BOB, [101]);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE, BOB]);
    expect(repo.addMember).toHaveBeenCalledTimes(2);
    expect(deps.joined).toHaveBeenCalledTimes(1);
  });

  it("when the attributes are invalid, then it is a RequestValidationError with the issues in data", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc());
    const err = await joinRound(deps, "round-1", BOB, ["x", 999]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err).toMatchObject({ code: 422, type: ErrorType.VALIDATION });
    expect((err as RequestValidationError).data).toEqual([
      { type: "int_type", loc: ["attributes", 0], msg: "Input should be a valid integer", input: "x" },
      expect.objectContaining({ type: "value_error", loc: ["attributes", 1], input: 999 }),
      expect.objectContaining({ type: "missing", loc: ["attributes"] }),
    ]);
    expect(repo.addMember).not.toHaveBeenCalled();
    expect(deps.joined).not.toHaveBeenCalled();
  });

  it("when a stranger joins a private round, then it is 404 'Round not found' and nothing is written", async () => {
    const { deps, repo } = fakeDeps(privateRound());
    const err = await joinRound(deps, "round-1", STRANGER, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err).toMatchObject({ message: "Round not found" });
    expect(repo.addMember).not.toHaveBeenCalled();
  });

  it("when a friend of the owner joins a private round, then the join succeeds", async () => {
    const { deps } = fakeDeps(privateRound(), [[BOB, OWNER]]);
    const round = await joinRound(deps, "round-1", BOB, [101]);
    expect(round.participant_statuses?.map((p) => p.user.id)).toContain(BOB);
    expect(deps.joined).toHaveBeenCalledTimes(1);
  });

  it("when a concurrent request of the same user stored the seat first, then only that one announces it", async () => {
    const { deps, repo, state } = fakeDeps(makeRoundDoc());
    repo.addMember.mockImplementationOnce(async () => {
      // The user's other request won between this one's read and its write.
      const member = { status: "joined" as const, joined_at: NOW, attributes: [101] };
      state.doc = {
        ...state.doc,
        members: { ...state.doc.members, [BOB]: member },
        members_count: state.doc.members_count + 1,
        rev: state.doc.rev + 1,
      };
      return null;
    });
    const round = await joinRound(deps, "round-1", BOB, [101]);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE, BOB]);
    expect(deps.joined).not.toHaveBeenCalled();
  });

  it("when cleaning the cache fails after the seat is stored, then the join still succeeds", async () => {
    const { deps } = fakeDeps(makeRoundDoc());
    deps.invalidate.mockRejectedValueOnce(new Error("redis down"));
    const round = await joinRound(deps, "round-1", BOB, [101]);
    expect(round.participant_statuses?.map((p) => p.user.id)).toContain(BOB);
    expect(deps.joined).toHaveBeenCalledTimes(1);
    expect(deps.warn).toHaveBeenCalledTimes(1);
  });
  it("when a round has been seen full, then a newcomer is refused 409 without the round being read again", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc({ members_count: 3 }));
    await expect(joinRound(deps, "round-1", BOB, [101])).rejects.toMatchObject({ message: "Round is full" });
    repo.findById.mockClear();
    const err = await joinRound(deps, "round-1", STRANGER, [101]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(err).toMatchObject({ code: 409, message: "Round is full" });
    expect(repo.findById).not.toHaveBeenCalled();
    expect(repo.addMember).not.toHaveBeenCalled();
  });

  it("when a member joins a round seen full, then they get the round back as any repeat join", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ members_count: 3 }));
    await joinRound(deps, "round-1", BOB, [101]).catch(() => undefined);
    const round = await joinRound(deps, "round-1", ALICE, []);
    expect(round.participant_statuses?.map((p) => p.user.id)).toEqual([ALICE]);
  });

  it("when a stranger joins a private round seen full, then it is still 404, never 409", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ is_private: true, members_count: 3 }));
    await joinRound(deps, "round-1", OWNER, [101]).catch(() => undefined);
    await expect(joinRound(deps, "round-1", STRANGER, [101])).rejects.toMatchObject({ code: 404 });
  });

  it("when the last seat is taken by this join, then the next newcomer is refused from memory", async () => {
    const { deps, repo } = fakeDeps(makeRoundDoc({ members_count: 2, max_members_count: 3 }));
    await joinRound(deps, "round-1", BOB, [101]);
    repo.findById.mockClear();
    await expect(joinRound(deps, "round-1", STRANGER, [101])).rejects.toMatchObject({
      message: "Round is full",
    });
    expect(repo.findById).not.toHaveBeenCalled();
  });

  it("when invalid attributes are sent to a round that cannot be joined, then the refusal comes first (409, not 422)", async () => {
    const { deps } = fakeDeps(makeRoundDoc({ members_count: 3 }));
    await expect(joinRound(deps, "round-1", BOB, ["x"])).rejects.toMatchObject({ code: 409 });
  });
});
