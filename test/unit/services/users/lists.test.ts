/** The users service's lists in the spec's shapes: friends (§2.13) and payments (§2.14). */
import { toFriends, toPayment } from "../../../../services/users/lists";
import { paymentIdentity, type PaymentDoc } from "../../../../services/users/payments.repository";
import type { UserDoc } from "../../../../services/users/users.repository";

const created = new Date("2030-01-01T00:00:00.000Z");

function user(id: string, fields: Partial<UserDoc> = {}): UserDoc {
  return {
    _id: id,
    phone: `+7000${id}`,
    username: `user_${id}`,
    first_name: null,
    last_name: null,
    avatar_url: null,
    removed_at: null,
    created_at: created,
    ...fields,
  };
}

describe("toFriends", () => {
  it("when a friend is mapped, then it has exactly the six §2.13 fields", () => {
    const [friend] = toFriends([
      user("u1", { first_name: "Anna", last_name: "Ivanova", avatar_url: "/a.png", username: "anna" }),
    ]);
    expect(friend).toEqual({
      id: "u1",
      phone: "+7000u1",
      first_name: "Anna",
      last_name: "Ivanova",
      username: "anna",
      avatar_url: "/a.png",
    });
  });

  it("when names or the avatar are null, then they become empty strings", () => {
    const [friend] = toFriends([user("u1")]);
    expect(friend.first_name).toBe("");
    expect(friend.last_name).toBe("");
    expect(friend.avatar_url).toBe("");
    expect(Object.values(friend).every((v) => typeof v === "string")).toBe(true);
  });

  it("when a friend was removed, then they are left out", () => {
    const friends = toFriends([
      user("u1", { first_name: "Anna" }),
      user("u2", { first_name: "Boris", removed_at: new Date() }),
      user("u3", { first_name: "Clara" }),
    ]);
    expect(friends.map((f) => f.id)).toEqual(["u1", "u3"]);
  });

  it("when every friend was removed, then the list is empty", () => {
    expect(toFriends([user("u1", { removed_at: new Date() })])).toEqual([]);
    expect(toFriends([])).toEqual([]);
  });

  it("when friends have different first names, then they are ordered by first name, case-insensitively", () => {
    const friends = toFriends([
      user("u1", { first_name: "clara" }),
      user("u2", { first_name: "Anna" }),
      user("u3", { first_name: "boris" }),
    ]);
    expect(friends.map((f) => f.first_name)).toEqual(["Anna", "boris", "clara"]);
  });

  it("when first names are equal, then the last name decides, then the username", () => {
    const friends = toFriends([
      user("u1", { first_name: "Anna", last_name: "Petrova", username: "zed" }),
      user("u2", { first_name: "Anna", last_name: "Ivanova", username: "yan" }),
      user("u3", { first_name: "Anna", last_name: "Ivanova", username: "abe" }),
    ]);
    expect(friends.map((f) => f.id)).toEqual(["u3", "u2", "u1"]);
  });

  it("when two friends have identical names and usernames, then the id decides and the order is stable", () => {
    const a = user("b-id", { first_name: "Anna", username: "same" });
    const b = user("a-id", { first_name: "Anna", username: "same" });
    expect(toFriends([a, b]).map((f) => f.id)).toEqual(["a-id", "b-id"]);
    expect(toFriends([b, a]).map((f) => f.id)).toEqual(["a-id", "b-id"]);
  });

  it("when the list is mapped, then the input array is not reordered", () => {
    const input = [user("u1", { first_name: "Zoe" }), user("u2", { first_name: "Anna" })];
    toFriends(input);
    expect(input.map((u) => u._id)).toEqual(["u1", "u2"]);
  });

  // Known bug (see the report): the sort key joins the fields with "\u0000", which ICU collation
  // (localeCompare) ignores, so "Al" + "Zed" compares as "alzed" against "Alb" + "Ann" as "albann", and the
  // documented first-name-first order breaks. Flip these to `it` once the fields are compared one by one.
  it("when a friend has no first name, then they come before the named ones", () => {
    const friends = toFriends([user("u1", { first_name: "Anna" }), user("u2", { username: "zz" })]);
    expect(friends.map((f) => f.id)).toEqual(["u2", "u1"]);
  });

  it("when one first name is a prefix of another, then the shorter first name comes first whatever the last names", () => {
    const friends = toFriends([
      user("u1", { first_name: "Alb", last_name: "Ann" }),
      user("u2", { first_name: "Al", last_name: "Zed" }),
    ]);
    expect(friends.map((f) => f.first_name)).toEqual(["Al", "Alb"]);
  });
});

describe("toPayment", () => {
  it("when a payment is mapped, then it has the six §2.14 fields with amount a string and round_id set", () => {
    const doc: PaymentDoc = {
      _id: "pay_1",
      user_id: "u1",
      round_id: "round-1",
      amount: "150.00",
      currency: "RUB",
      description: "Entry fee",
      order_id: "ORD-ABC",
      status: "pending",
      created_at: created,
    };
    const payment = toPayment(doc);
    expect(payment).toEqual({
      id: "pay_1",
      amount: "150.00",
      description: "Entry fee",
      order_id: "ORD-ABC",
      status: "pending",
      round_id: "round-1",
    });
    expect(typeof payment.amount).toBe("string");
    expect(payment).not.toHaveProperty("user_id");
    expect(payment).not.toHaveProperty("currency");
  });
});

describe("paymentIdentity", () => {
  it("when called twice for the same user and round, then it yields the same id and order id", () => {
    expect(paymentIdentity("u1", "r1")).toEqual(paymentIdentity("u1", "r1"));
  });

  it("when called, then the id is pay_ and 24 hex digits and the order id ORD- and 12 upper-case hex digits", () => {
    const { id, orderId } = paymentIdentity("u1", "r1");
    expect(id).toMatch(/^pay_[0-9a-f]{24}$/);
    expect(orderId).toMatch(/^ORD-[0-9A-F]{12}$/);
  });

  it("when the user or the round differs, then the identity differs", () => {
    const base = paymentIdentity("u1", "r1");
    const others = [paymentIdentity("u2", "r1"), paymentIdentity("u1", "r2"), paymentIdentity("r1", "u1")];
    for (const other of others) {
      expect(other.id).not.toBe(base.id);
      expect(other.orderId).not.toBe(base.orderId);
    }
  });
});
