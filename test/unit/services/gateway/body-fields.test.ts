import { bodyFieldsOf, knownFields } from "../../../../services/gateway/body-fields";
import { routeByAction, SMALL_BODY_BYTES } from "../../../../services/gateway/routes";

const route = (action: string) => {
  const spec = routeByAction.get(action);
  if (!spec) throw new Error(action);
  return spec;
};

describe("bodyFieldsOf", () => {
  it("when a route has a JSON body, then its fields are the contract's less path, query and header parameters", () => {
    expect(bodyFieldsOf(route("rounds.join"))).toEqual(["attributes"]);
    expect(bodyFieldsOf(route("auth.refresh"))).toEqual(["refresh_token"]);
    expect(bodyFieldsOf(route("notifier.sendMulticast"))).toEqual([
      "title",
      "desc",
      "user_ids",
      "picture",
      "keys",
    ]);
  });

  it("when the route is the store-event upload, then its fields are the form's less the picture", () => {
    const fields = bodyFieldsOf(route("stores.createEvent"));
    expect(fields).toEqual(
      expect.arrayContaining(["name", "price", "event_type", "meeting_link", "longitude"]),
    );
    expect(fields).not.toContain("main_picture");
    expect(fields).toHaveLength(19);
  });
});

describe("knownFields", () => {
  it("when a body has unknown fields, then only the known ones are kept, as own properties", () => {
    const body = JSON.parse('{"attributes":[1],"is_admin":true,"__proto__":{"polluted":1},"round_id":"x"}');
    const kept = knownFields(route("rounds.join"), body);
    expect(kept).toEqual({ attributes: [1] });
    expect(Object.getPrototypeOf(kept)).toBe(Object.prototype);
  });

  it("when the multicast names the gateway's own `staged` or the header's idempotency_key in its body, then both are dropped", () => {
    const kept = knownFields(route("notifier.sendMulticast"), {
      title: "t",
      user_ids: ["a"],
      staged: { set_id: "x", pages: 1 },
      idempotency_key: "k",
    });
    expect(kept).toEqual({ title: "t", user_ids: ["a"] });
  });

  it("when the event form has unknown fields, then they are dropped", () => {
    expect(knownFields(route("stores.createEvent"), { name: "n", owner_id: "me" })).toEqual({ name: "n" });
  });
});

describe("the small body bound", () => {
  it("when the largest honest join is encoded pretty-printed (100 attributes, the longest integers), then it fits with room", () => {
    const attributes = Array.from({ length: 100 }, () => -Number.MAX_SAFE_INTEGER);
    const body = JSON.stringify({ attributes }, null, 4);
    expect(Buffer.byteLength(body)).toBeLessThan(3 * 1024);
    expect(route("rounds.join").bodyLimitBytes).toBe(SMALL_BODY_BYTES);
    expect(route("auth.refresh").bodyLimitBytes).toBe(SMALL_BODY_BYTES);
    expect(route("notifier.sendMulticast").bodyLimitBytes).toBeUndefined();
  });
});
