import type { Context, ServiceSchema } from "moleculer";
import { Round } from "../../shared/contracts/round";
import { RoundMemberJoinedEvent } from "../../shared/contracts/rounds";
import { check } from "../../shared/validation";
import { api, newUser, startSystem, type System } from "../support/system";

const joinedEvents: RoundMemberJoinedEvent[] = [];
const eventProbe: ServiceSchema = {
  name: "event-probe",
  events: {
    "round.member.joined"(ctx: Context<RoundMemberJoinedEvent>) {
      joinedEvents.push(ctx.params);
    },
  },
};

let sys: System;
beforeAll(async () => {
  sys = await startSystem({ extra: [eventProbe] });
});
afterAll(() => sys.stop());

const join = (roundId: string, token: string, body: unknown = null) =>
  api(sys, "POST", `/rounds/${roundId}/join`, { token, json: body });
const eventsFor = (roundId: string, userId: string) =>
  joinedEvents.filter((e) => e.round_id === roundId && e.user_id === userId);

describe("POST /rounds/{round_id}/join", () => {
  it.each([
    ["null", null],
    ["an empty object", {}],
    ["empty attributes", { attributes: [] }],
  ])(
    "when the body is %s, then 200 with the round and the caller among its participants",
    async (_label, body) => {
      const user = await newUser(sys.broker);
      const res = await join(sys.manifest.rounds.open, user.access_token, body);
      expect(res.status).toBe(200);
      expect(check(Round, res.body)).toBe(true);
      expect(
        res.body.participant_statuses.some((p: any) => p.user.id === user.id && p.status === "joined"),
      ).toBe(true);
    },
  );

  it("when the body starts with a UTF-8 byte order mark (a file some editors save), then it joins", async () => {
    const user = await newUser(sys.broker);
    const res = await api(sys, "POST", `/rounds/${sys.manifest.rounds.open}/join`, {
      token: user.access_token,
      raw: '\ufeff{"attributes":[]}',
    });
    expect(res.status).toBe(200);
    expect(check(Round, res.body)).toBe(true);
  });

  it("when a user joins twice, then the second join returns the round with one membership and emits nothing", async () => {
    const user = await newUser(sys.broker);
    const first = await join(sys.manifest.rounds.open, user.access_token);
    const second = await join(sys.manifest.rounds.open, user.access_token);
    expect(second.status).toBe(200);
    expect(second.body.members_count).toBe(first.body.members_count);
    expect(second.body.participant_statuses.filter((p: any) => p.user.id === user.id)).toHaveLength(1);
    await new Promise((r) => setImmediate(r));
    expect(eventsFor(sys.manifest.rounds.open, user.id)).toHaveLength(1);
  });

  it("when a join succeeds, then round.member.joined carries round, user, attributes, entry fee and time", async () => {
    const user = await newUser(sys.broker);
    const { id, choice_ids } = sys.manifest.rounds.needs_attributes;
    const res = await join(id, user.access_token, { attributes: [choice_ids[1]] });
    expect(res.status).toBe(200);
    await new Promise((r) => setImmediate(r));
    const [event] = eventsFor(id, user.id);
    expect(check(RoundMemberJoinedEvent, event)).toBe(true);
    expect(event).toEqual(
      expect.objectContaining({
        round_id: id,
        user_id: user.id,
        attributes: [choice_ids[1]],
        entry_fee: "150.00",
        currency: "RUB",
      }),
    );
  });

  it("when the round was read (and cached) before a join, then the next read shows the new member", async () => {
    const reader = sys.manifest.users.alice.access_token;
    const before = await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token: reader });
    const user = await newUser(sys.broker);
    await join(sys.manifest.rounds.open, user.access_token);
    const after = await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token: reader });
    expect(after.body.members_count).toBe(before.body.members_count + 1);
    expect(after.body.participant_statuses.map((p: any) => p.user.id)).toContain(user.id);
  });

  it("when the round is full, then 409 Round is full", async () => {
    const user = await newUser(sys.broker);
    const res = await join(sys.manifest.rounds.full, user.access_token);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: "Round is full" });
  });

  it("when the round has ended, then 409 Round has ended", async () => {
    const res = await join(sys.manifest.rounds.ended, sys.manifest.users.carol.access_token);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: "Round has ended" });
  });

  it("when the round is not active, then 409 Round is not active", async () => {
    const res = await join(sys.manifest.rounds.inactive, sys.manifest.users.carol.access_token);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: "Round is not active" });
  });

  it("when the round is unknown, then 404 Round not found", async () => {
    const res = await join("00000000-0000-0000-0000-000000000000", sys.manifest.users.carol.access_token);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "Round not found" });
  });

  it("when 200 distinct users join a 5-seat round at once, then exactly 5 get in and the others get 409", async () => {
    const users = await Promise.all(Array.from({ length: 200 }, () => newUser(sys.broker, "crowd")));
    const roundId = sys.manifest.rounds.small;
    const results = await Promise.all(users.map((u) => join(roundId, u.access_token)));
    const ok = results.filter((r) => r.status === 200);
    const full = results.filter((r) => r.status === 409);
    expect(ok).toHaveLength(5);
    expect(full).toHaveLength(195);
    full.forEach((r) => expect(r.body).toEqual({ detail: "Round is full" }));
    const round = await api(sys, "GET", `/rounds/${roundId}`, {
      token: sys.manifest.users.alice.access_token,
    });
    expect(round.body.members_count).toBe(5);
    const ids = round.body.participant_statuses.map((p: any) => p.user.id);
    expect(new Set(ids).size).toBe(5);
    expect(ids.sort()).toEqual(ok.map((r) => users[results.indexOf(r)].id).sort());
  });
});

describe("join attributes", () => {
  const needs = () => sys.manifest.rounds.needs_attributes;

  it("when a need_to_choose group gets no choice, then 422 at body.attributes", async () => {
    const res = await join(needs().id, sys.manifest.users.carol.access_token, { attributes: [] });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "missing", loc: ["body", "attributes"] }),
    ]);
  });

  it("when an id belongs to no group, then 422 at body.attributes.<index>", async () => {
    const res = await join(needs().id, sys.manifest.users.carol.access_token, {
      attributes: [needs().choice_ids[0], 999],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "value_error", loc: ["body", "attributes", 1], input: 999 }),
    ]);
  });

  it("when an entry is not an integer, then 422 int_type at its index", async () => {
    const res = await join(needs().id, sys.manifest.users.carol.access_token, {
      attributes: ["red", needs().choice_ids[0]],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        type: "int_type",
        loc: ["body", "attributes", 0],
        msg: "Input should be a valid integer",
        input: "red",
      },
    ]);
  });

  it("when attributes is not a list, then 422 list_type at body.attributes", async () => {
    const res = await join(needs().id, sys.manifest.users.carol.access_token, { attributes: "101" });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { type: "list_type", loc: ["body", "attributes"], msg: "Input should be a valid list", input: "101" },
    ]);
  });

  it("when a valid choice is given, then 200 and the membership is stored", async () => {
    const user = await newUser(sys.broker);
    const res = await join(needs().id, user.access_token, { attributes: [needs().choice_ids[0]] });
    expect(res.status).toBe(200);
    expect(res.body.participant_statuses.map((p: any) => p.user.id)).toContain(user.id);
  });

  it("when a join is refused with 422, then nothing is stored", async () => {
    const user = await newUser(sys.broker);
    const before = await api(sys, "GET", `/rounds/${needs().id}`, { token: user.access_token });
    await join(needs().id, user.access_token, { attributes: [999] });
    const after = await api(sys, "GET", `/rounds/${needs().id}`, { token: user.access_token });
    expect(after.body.members_count).toBe(before.body.members_count);
  });
});

describe("join request body", () => {
  const path = () => `/rounds/${sys.manifest.rounds.open}/join`;

  it("when the body is missing, then 422 missing at body", async () => {
    const res = await api(sys, "POST", path(), { token: sys.manifest.users.carol.access_token });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ type: "missing", loc: ["body"], msg: "Field required", input: null }]);
  });

  it("when the body is malformed JSON, then 422 json_invalid", async () => {
    const res = await api(sys, "POST", path(), {
      token: sys.manifest.users.carol.access_token,
      raw: '{"attributes": [',
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "json_invalid", msg: "JSON decode error" }),
    ]);
    expect(res.body.detail[0].loc[0]).toBe("body");
  });

  it("when the body is a JSON array, then 422 model_attributes_type at body", async () => {
    const res = await api(sys, "POST", path(), {
      token: sys.manifest.users.carol.access_token,
      json: [1, 2],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "model_attributes_type", loc: ["body"] }),
    ]);
  });

  it("when the body exceeds the size limit, then 413 with a detail", async () => {
    const res = await api(sys, "POST", path(), {
      token: sys.manifest.users.carol.access_token,
      raw: JSON.stringify({ attributes: [], pad: "x".repeat(9 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expect(typeof res.body.detail).toBe("string");
  });

  it("when the path round_id is too long, then 422 at path.round_id", async () => {
    const res = await api(sys, "POST", `/rounds/${"r".repeat(300)}/join`, {
      token: sys.manifest.users.carol.access_token,
      json: null,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ type: "string_too_long", loc: ["path", "round_id"] }),
    ]);
  });
});
