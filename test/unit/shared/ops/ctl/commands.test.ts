import type { ServiceBroker } from "moleculer";
import { BadRequestError, requestOf, runCommand } from "../../../../../shared/ops/ctl/commands";

/** A broker that records the actions called and answers each with its parameters. */
const recorder = () => {
  const calls: Array<[string, unknown]> = [];
  const broker = {
    call: async (name: string, params: unknown) => {
      calls.push([name, params]);
      return { called: name };
    },
  } as unknown as ServiceBroker;
  return { broker, calls };
};

const ctx = { baseUrl: null };

describe("runCommand", () => {
  it.each([
    ["token", { user_id: "u1" }, "auth.issueTokens", { user_id: "u1" }],
    ["user remove", { user_id: "u1" }, "users.remove", { id: "u1" }],
    ["friends add", { a: "u1", b: "u2" }, "users.addFriends", { a: "u1", b: "u2" }],
    ["apikey add", { scope: "app" }, "auth.createApiKey", { scope: "app" }],
    ["apikey add", { scope: "app", label: "ops" }, "auth.createApiKey", { scope: "app", label: "ops" }],
    ["apikey revoke", { key_id: "k1" }, "auth.revokeApiKey", { id: "k1" }],
    [
      "app-version set",
      { platform: "ios", current_version: "2.0", min_version: "1.0" },
      "settings.setVersions",
      { platform: "ios", current_version: "2.0", min_version: "1.0" },
    ],
    ["device add", { user_id: "u1", token: "t" }, "users.addDevice", { user_id: "u1", token: "t" }],
    [
      "user add",
      { phone: "+7900", username: "dana" },
      "users.create",
      { phone: "+7900", username: "dana", first_name: null, last_name: null, avatar_url: null },
    ],
  ] as const)(
    "when %s runs, then it calls its action with the fields it names",
    async (command, params, action, sent) => {
      const { broker, calls } = recorder();
      await expect(runCommand(broker, { command, params }, ctx)).resolves.toEqual({ called: action });
      expect(calls).toEqual([[action, sent]]);
    },
  );

  it("when a request carries fields the command does not name, then they never reach the action", async () => {
    const { broker, calls } = recorder();
    await runCommand(broker, { command: "token", params: { user_id: "u1", access_ttl_seconds: 1e9 } }, ctx);
    expect(calls).toEqual([["auth.issueTokens", { user_id: "u1" }]]);
    await runCommand(
      broker,
      { command: "device import", params: { devices: [{ user_id: "u1", token: "t", extra: 1 }, null] } },
      ctx,
    );
    expect(calls[1]).toEqual([
      "users.importDevices",
      {
        devices: [
          { user_id: "u1", token: "t" },
          { user_id: undefined, token: undefined },
        ],
      },
    ]);
  });

  it.each([
    ["token", {}, /user_id must be a non-empty string/],
    ["token", { user_id: 5 }, /user_id must be a non-empty string/],
    ["user add", { phone: "+7900", username: "d", first_name: 3 }, /first_name must be/],
    ["device import", { devices: "all" }, /devices must be an array/],
  ] as const)(
    "when %s has a field missing or mistyped, then it fails as a bad request without a call",
    async (command, params, message) => {
      const { broker, calls } = recorder();
      const err = await runCommand(broker, { command, params }, ctx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect((err as Error).message).toMatch(message);
      expect(calls).toEqual([]);
    },
  );
});

describe("requestOf", () => {
  it("when a request names a known command, then it comes back with its params (empty when absent)", () => {
    expect(requestOf({ command: "seed" })).toEqual({ command: "seed", params: {} });
    expect(requestOf({ command: "token", params: { user_id: "u" } })).toEqual({
      command: "token",
      params: { user_id: "u" },
    });
  });

  it.each([
    [null],
    ["token"],
    [{ command: "toString" }],
    [{ command: "__proto__" }],
    [{ command: "token", params: [] }],
  ])("when the request is %j, then it is a bad request", (value) => {
    expect(() => requestOf(value)).toThrow(BadRequestError);
  });
});
