import { call } from "../../shared/contracts";
import { FriendList, PaymentList } from "../../shared/contracts/users";
import { check } from "../../shared/validation";
import { api, newUser, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

const friends = (token?: string) => api(sys, "GET", "/users/friends", { token });
const payments = (token?: string) => api(sys, "GET", "/users/payments", { token });
const join = (roundId: string, token: string) =>
  api(sys, "POST", `/rounds/${roundId}/join`, { token, json: null });

describe("GET /users/friends", () => {
  it("when called without a token, then 401", async () => {
    expect((await friends()).status).toBe(401);
  });

  it("when alice and bob are friends, then each sees the other (mutual), in the spec's shape", async () => {
    const { alice, bob } = sys.manifest.users;
    const a = await friends(alice.access_token);
    const b = await friends(bob.access_token);
    expect(a.status).toBe(200);
    expect(check(FriendList, a.body)).toBe(true);
    expect(a.body.map((f: any) => f.id)).toEqual([bob.id]);
    expect(b.body.map((f: any) => f.id)).toEqual([alice.id]);
    expect(a.body[0]).toEqual({
      id: bob.id,
      phone: "+79000000002",
      first_name: "Bob",
      last_name: "Ivanov",
      username: "bob",
      avatar_url: "https://avatars.example.com/bob.png",
    });
  });

  it("when a friend has no last name, then last_name is an empty string", async () => {
    const user = await newUser(sys.broker, "lonely");
    await call(sys.broker, "users.addFriends", { a: user.id, b: sys.manifest.users.carol.id });
    const res = await friends(user.access_token);
    expect(res.body).toEqual([expect.objectContaining({ id: sys.manifest.users.carol.id, last_name: "" })]);
  });

  it("when a list was cached and a friendship is added, then both users' next reads show it", async () => {
    const x = await newUser(sys.broker, "x");
    const y = await newUser(sys.broker, "y");
    expect((await friends(x.access_token)).body).toEqual([]);
    expect((await friends(y.access_token)).body).toEqual([]);
    await call(sys.broker, "users.addFriends", { a: x.id, b: y.id });
    // The gateways hear of the change as an event: at once in one process, across processes on arrival
    // (the call's answer can reach the test before the event reaches the gateway).
    await sys.settle();
    expect((await friends(x.access_token)).body.map((f: any) => f.id)).toEqual([y.id]);
    expect((await friends(y.access_token)).body.map((f: any) => f.id)).toEqual([x.id]);
  });

  it("when a friend is removed after the list was read, then the next read no longer lists them", async () => {
    const x = await newUser(sys.broker, "keeper");
    const y = await newUser(sys.broker, "leaver");
    await call(sys.broker, "users.addFriends", { a: x.id, b: y.id });
    expect((await friends(x.access_token)).body.map((f: any) => f.id)).toEqual([y.id]);
    await call(sys.broker, "users.remove", { id: y.id });
    // The gateways hear of the removal as an event: at once in one process, across processes on arrival.
    await sys.settle();
    expect((await friends(x.access_token)).body).toEqual([]);
  });

  it("when several users read their cached lists in turn, then nobody gets another's list", async () => {
    const { alice, bob, carol } = sys.manifest.users;
    for (let round = 0; round < 3; round++) {
      expect((await friends(alice.access_token)).body.map((f: any) => f.id)).toEqual([bob.id]);
      expect((await friends(bob.access_token)).body.map((f: any) => f.id)).toEqual([alice.id]);
      expect((await friends(carol.access_token)).body.map((f: any) => f.id)).not.toContain(carol.id);
    }
  });

  it("when friends are sorted, then it is by first name, last name, then username", async () => {
    const hub = await newUser(sys.broker, "hub");
    const names = [
      ["zoe", "Zoe", "Adams"],
      ["anna2", "anna", "Young"],
      ["anna1", "Anna", "Baker"],
    ];
    for (const [username, first, last] of names) {
      const p = await call(sys.broker, "users.create", {
        phone: `+4470${Math.floor(Math.random() * 1e8)}`,
        username: `${username}_${hub.id.slice(0, 6)}`,
        first_name: first,
        last_name: last,
      });
      await call(sys.broker, "users.addFriends", { a: hub.id, b: p.id });
    }
    const res = await friends(hub.access_token);
    expect(res.body.map((f: any) => `${f.first_name} ${f.last_name}`)).toEqual([
      "Anna Baker",
      "anna Young",
      "Zoe Adams",
    ]);
  });
});

describe("GET /users/payments", () => {
  it("when called without a token, then 401", async () => {
    expect((await payments()).status).toBe(401);
  });

  it("when bob joined a paid round (seed), then he has one pending payment in the spec's shape", async () => {
    const res = await payments(sys.manifest.users.bob.access_token);
    expect(res.status).toBe(200);
    expect(check(PaymentList, res.body)).toBe(true);
    expect(res.body).toEqual([
      {
        id: expect.stringMatching(/^pay_/),
        amount: "2500.00",
        description: expect.stringMatching(/^Entry fee for round R-/),
        order_id: expect.stringMatching(/^ORD-/),
        status: "pending",
        round_id: sys.manifest.rounds.event,
      },
    ]);
  });

  it("when a user joins two paid rounds, then the list has both, newest first, and their cache was refreshed", async () => {
    const user = await newUser(sys.broker);
    expect((await payments(user.access_token)).body).toEqual([]);
    await join(sys.manifest.rounds.open, user.access_token);
    await new Promise((r) => setTimeout(r, 5));
    await join(sys.manifest.rounds.small, user.access_token);
    await sys.settle();
    const res = await payments(user.access_token);
    expect(res.body.map((p: any) => [p.round_id, p.amount])).toEqual([
      [sys.manifest.rounds.small, "50.00"],
      [sys.manifest.rounds.open, "150.00"],
    ]);
  });

  it("when a user joins a free round, then no payment is created", async () => {
    const user = await newUser(sys.broker);
    expect((await join(sys.manifest.rounds.free, user.access_token)).status).toBe(200);
    await sys.settle();
    expect((await payments(user.access_token)).body).toEqual([]);
  });

  it("when the same join is repeated, then there is still one payment", async () => {
    const user = await newUser(sys.broker);
    await join(sys.manifest.rounds.open, user.access_token);
    await join(sys.manifest.rounds.open, user.access_token);
    await sys.settle();
    expect((await payments(user.access_token)).body).toHaveLength(1);
  });

  it("when round.member.joined is delivered again, then no second payment appears", async () => {
    const user = await newUser(sys.broker);
    await join(sys.manifest.rounds.open, user.access_token);
    await sys.settle();
    const [payment] = (await payments(user.access_token)).body;
    const event = {
      round_id: sys.manifest.rounds.open,
      uniq_id: "R-REDELV",
      user_id: user.id,
      attributes: [],
      entry_fee: "150.00",
      currency: "RUB",
      joined_at: new Date().toISOString(),
    };
    await sys.broker.emit("round.member.joined", event);
    await sys.broker.emit("round.member.joined", event);
    await sys.settle();
    expect((await payments(user.access_token)).body).toEqual([payment]);
  });

  it("when two users read their payments alternately, then each sees only their own", async () => {
    const { alice, bob } = sys.manifest.users;
    for (let i = 0; i < 3; i++) {
      expect((await payments(bob.access_token)).body.map((p: any) => p.round_id)).toEqual([
        sys.manifest.rounds.event,
      ]);
      expect((await payments(alice.access_token)).body).toEqual([]);
    }
  });
});
