import { Round } from "../../shared/contracts/round";
import { check } from "../../shared/validation";
import { SPEC_ROUND_KEYS } from "../support/spec-keys";
import { call } from "../../shared/contracts";
import { api, newUser, startSystem, type System } from "../support/system";
import { MEETING, meetingAsSeenBy, meetingRound } from "../support/event-rounds";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const get = (roundId: string, token: string) => api(sys, "GET", `/rounds/${roundId}`, { token });

describe("GET /rounds/{round_id}", () => {
  it("when the round exists, then 200 with every key of the spec and types matching the Round schema", async () => {
    const res = await get(sys.manifest.rounds.open, sys.manifest.users.alice.access_token);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([...SPEC_ROUND_KEYS].sort());
    expect(check(Round, res.body)).toBe(true);
    expect(Object.keys(res.body.owner).sort()).toEqual(["avatar_url", "first_name", "id", "last_name"]);
    expect(res.body.item.store.seller_type).toBe("store");
    expect(res.body.item.format_price).toBe("7490.00 RUB");
    expect(res.body.format_entry_fee).toBe("150.00 RUB");
    expect(res.body.status).toBe("open");
    expect(res.body.format_status).toBe("Open: 99 of 100 seats left");
    expect(res.body.seconds_to_end).toBeGreaterThan(0);
  });

  it("when a key is nullable and empty, then it is present as null", async () => {
    const res = await get(sys.manifest.rounds.free, sys.manifest.users.alice.access_token);
    expect(res.status).toBe(200);
    expect(res.body.end_time).toBeNull();
    expect(res.body.seconds_to_end).toBe(0);
    expect(res.body.format_entry_fee).toBe("Free");
    expect(res.body.item.sku).toBeNull();
    expect(res.body.item.store.logo_url).toBeNull();
    expect(res.body.item.store.seller_type).toBe("blogger");
  });

  it("when a member has no last name, then the participant entry keeps last_name as null", async () => {
    const carol = sys.manifest.users.carol;
    const join = await api(sys, "POST", `/rounds/${sys.manifest.rounds.free}/join`, {
      token: carol.access_token,
      json: null,
    });
    expect(join.status).toBe(200);
    const entry = join.body.participant_statuses.find((p: any) => p.user.id === carol.id);
    expect(entry.user).toEqual(
      expect.objectContaining({ last_name: null, first_name: "Carol", username: "carol" }),
    );
    expect(Object.keys(entry.user).sort()).toEqual([
      "avatar_url",
      "first_name",
      "id",
      "last_name",
      "phone",
      "username",
    ]);
  });

  it("when the round is unknown, then 404 Round not found", async () => {
    const res = await get("no-such-round", sys.manifest.users.alice.access_token);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "Round not found" });
  });

  it("when the round has ended by flag, then is_ended is true and status ended", async () => {
    const res = await get(sys.manifest.rounds.ended, sys.manifest.users.alice.access_token);
    expect(res.body).toEqual(
      expect.objectContaining({ is_ended: true, status: "ended", format_status: "Ended", seconds_to_end: 0 }),
    );
  });

  it("when the round is full, then status full", async () => {
    const res = await get(sys.manifest.rounds.full, sys.manifest.users.alice.access_token);
    expect(res.body).toEqual(
      expect.objectContaining({
        status: "full",
        members_count: 3,
        max_members_count: 3,
        format_status: "Full",
      }),
    );
  });

  it("when read by a member who favourited it, then in_favorites is true, and false for another caller", async () => {
    const bobView = await get(sys.manifest.rounds.open, sys.manifest.users.bob.access_token);
    const aliceView = await get(sys.manifest.rounds.open, sys.manifest.users.alice.access_token);
    expect(bobView.body.in_favorites).toBe(true);
    expect(aliceView.body.in_favorites).toBe(false);
  });

  it("when read by the owner, then phones are in clear; by another user, then other members' phones are masked", async () => {
    const { bob, carol } = sys.manifest.users;
    const owner = await get(sys.manifest.rounds.open, sys.manifest.users.alice.access_token);
    const stranger = await get(sys.manifest.rounds.open, carol.access_token);
    const self = await get(sys.manifest.rounds.open, bob.access_token);
    const phoneOf = (res: any) =>
      res.body.participant_statuses.find((p: any) => p.user.id === bob.id).user.phone;
    expect(phoneOf(owner)).toBe("+79000000002");
    expect(phoneOf(self)).toBe("+79000000002");
    expect(phoneOf(stranger)).toBe("+7******0002");
  });

  it("when a stranger's read is kept for everyone, then the owner, a member and a favouriter still get their own", async () => {
    const { alice, bob, carol } = sys.manifest.users;
    const stranger = await get(sys.manifest.rounds.open, carol.access_token);
    const [owner, member] = [
      await get(sys.manifest.rounds.open, alice.access_token),
      await get(sys.manifest.rounds.open, bob.access_token),
    ];
    const phoneOf = (res: any) =>
      res.body.participant_statuses.find((p: any) => p.user.id === bob.id).user.phone;
    expect([phoneOf(stranger), phoneOf(owner), phoneOf(member)]).toEqual([
      "+7******0002",
      "+79000000002",
      "+79000000002",
    ]);
    expect([stranger.body.in_favorites, member.body.in_favorites]).toEqual([false, true]);
  });

  it("when each caller reads a round twice (the second from the gateway's cache), then each answer is whole JSON of its Content-Length", async () => {
    const { alice, bob, carol } = sys.manifest.users;
    for (const user of [alice, bob, carol]) {
      for (const res of [
        await get(sys.manifest.rounds.open, user.access_token),
        await get(sys.manifest.rounds.open, user.access_token),
      ]) {
        expect(res.status).toBe(200);
        expect(Number(res.headers.get("content-length"))).toBe(Buffer.byteLength(res.text));
        expect(check(Round, res.body)).toBe(true);
      }
    }
  });

  it("when read twice a second apart, then seconds_to_end counts down although the round is cached", async () => {
    const token = sys.manifest.users.alice.access_token;
    const first = await get(sys.manifest.rounds.open, token);
    await new Promise((r) => setTimeout(r, 1100));
    const second = await get(sys.manifest.rounds.open, token);
    expect(second.body.seconds_to_end).toBeLessThan(first.body.seconds_to_end);
  });
});

describe("a round's answer kept by the gateway for every caller but its insiders", () => {
  it("when strangers read it seconds apart, then seconds_to_end counts down and the rest is the service's answer", async () => {
    const [first, second] = [
      await newUser(sys.broker, "stranger-a"),
      await newUser(sys.broker, "stranger-b"),
    ];
    const before = await get(sys.manifest.rounds.open, first.access_token);
    await new Promise((r) => setTimeout(r, 2100));
    const after = await get(sys.manifest.rounds.open, second.access_token);
    expect(after.status).toBe(200);
    expect(Number(after.headers.get("content-length"))).toBe(Buffer.byteLength(after.text));
    expect(before.body.seconds_to_end - after.body.seconds_to_end).toBeGreaterThanOrEqual(2);
    expect({ ...after.body, seconds_to_end: 0 }).toEqual({ ...before.body, seconds_to_end: 0 });
  });

  it("when a stranger joins after reading it, then their next read shows them as a member", async () => {
    const joiner = await newUser(sys.broker, "joiner");
    const round = sys.manifest.rounds.free;
    const before = await get(round, joiner.access_token);
    expect(before.status).toBe(200);
    const join = await api(sys, "POST", `/rounds/${round}/join`, { token: joiner.access_token, json: null });
    expect(join.status).toBe(200);
    const after = await get(round, joiner.access_token);
    expect(after.body.members_count).toBe(before.body.members_count + 1);
    const ids = (after.body.participant_statuses as { user: { id: string } }[]).map((p) => p.user.id);
    expect(ids).toContain(joiner.id);
  });
});

describe("private rounds", () => {
  const priv = () => sys.manifest.rounds.private;

  it("when read by the owner, then 200", async () => {
    const res = await get(priv(), sys.manifest.users.alice.access_token);
    expect(res.status).toBe(200);
    expect(res.body.is_private).toBe(true);
  });

  it("when read by the owner's friend, then 200", async () => {
    expect((await get(priv(), sys.manifest.users.bob.access_token)).status).toBe(200);
  });

  it("when read by anyone else, then 404 exactly as for an unknown round", async () => {
    const res = await get(priv(), sys.manifest.users.carol.access_token);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "Round not found" });
  });

  it("when joined by anyone else, then 404 and no membership", async () => {
    const res = await api(sys, "POST", `/rounds/${priv()}/join`, {
      token: sys.manifest.users.carol.access_token,
      json: {},
    });
    expect(res.status).toBe(404);
    const owner = await get(priv(), sys.manifest.users.alice.access_token);
    expect(owner.body.members_count).toBe(0);
  });

  it("when joined by the owner's friend, then the friend becomes a member", async () => {
    const res = await api(sys, "POST", `/rounds/${priv()}/join`, {
      token: sys.manifest.users.bob.access_token,
      json: null,
    });
    expect(res.status).toBe(200);
    expect(res.body.participant_statuses.map((p: any) => p.user.id)).toEqual([sys.manifest.users.bob.id]);
  });
});

describe("a member removed after the round was read", () => {
  it("when a member's account is removed, then the next read of the round no longer lists them", async () => {
    const member = sys.manifest.users.crowd[29];
    const alice = sys.manifest.users.alice.access_token;
    const join = await api(sys, "POST", `/rounds/${sys.manifest.rounds.free}/join`, {
      token: member.access_token,
      json: null,
    });
    expect(join.status).toBe(200);
    const before = await get(sys.manifest.rounds.free, alice);
    const listed = (r: typeof before) =>
      (r.body.participant_statuses as { user: { id: string } }[]).some((p) => p.user.id === member.id);
    expect(listed(before)).toBe(true);

    await call(sys.broker, "users.remove", { id: member.id });
    await sys.settle();
    // Past the gateway's own answer cache (RESPONSE_CACHE_MS), which a removal does not touch.
    await new Promise((r) => setTimeout(r, 1100));
    const after = await get(sys.manifest.rounds.free, alice);
    expect(after.status).toBe(200);
    expect(listed(after)).toBe(false);
  });
});

describe("GET /rounds/{round_id}: an event round's meeting link and password (decision 0019)", () => {
  const HIDDEN = { meeting_link: null, meeting_password: null };
  const join = (roundId: string, token: string) =>
    api(sys, "POST", `/rounds/${roundId}/join`, { token, json: { attributes: [] } });

  it("when an outsider reads first, then the answer kept for everyone carries null and owner and manager still see them", async () => {
    const { roundId, owner, manager } = await meetingRound(sys);
    expect(await meetingAsSeenBy(sys, roundId, await newUser(sys.broker, "out"))).toEqual(HIDDEN);
    expect(await meetingAsSeenBy(sys, roundId, owner)).toEqual(MEETING);
    expect(await meetingAsSeenBy(sys, roundId, manager)).toEqual(MEETING);
    expect(await meetingAsSeenBy(sys, roundId, await newUser(sys.broker, "out"))).toEqual(HIDDEN);
  });

  it("when an outsider joins after outsiders read, then the join answers them and their reads show them; other outsiders still get null", async () => {
    const { roundId } = await meetingRound(sys);
    const joiner = await newUser(sys.broker, "joiner");
    expect(await meetingAsSeenBy(sys, roundId, joiner)).toEqual(HIDDEN);
    expect(await meetingAsSeenBy(sys, roundId, await newUser(sys.broker, "out"))).toEqual(HIDDEN);
    const joined = await join(roundId, joiner.access_token);
    expect(joined.status).toBe(200);
    expect(joined.body.item).toMatchObject(MEETING);
    expect(await meetingAsSeenBy(sys, roundId, joiner)).toEqual(MEETING);
    expect(await meetingAsSeenBy(sys, roundId, await newUser(sys.broker, "out"))).toEqual(HIDDEN);
  });

  it("when a member reads first, then an outsider reading after gets null", async () => {
    const { roundId } = await meetingRound(sys);
    const member = await newUser(sys.broker, "member");
    expect((await join(roundId, member.access_token)).status).toBe(200);
    expect(await meetingAsSeenBy(sys, roundId, member)).toEqual(MEETING);
    expect(await meetingAsSeenBy(sys, roundId, await newUser(sys.broker, "out"))).toEqual(HIDDEN);
    expect(await meetingAsSeenBy(sys, roundId, member)).toEqual(MEETING);
  });
});
