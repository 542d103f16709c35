import type { ServiceSchema } from "moleculer";
import { api, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem();
});
afterAll(() => sys.stop());

describe("gateway routing", () => {
  it("when the path is unknown, then 404 Not Found", async () => {
    const res = await api(sys, "GET", "/nope");
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: "Not Found" });
  });

  it("when a known path is called with the wrong method, then 405 with Allow", async () => {
    const res = await api(sys, "DELETE", `/rounds/${sys.manifest.rounds.open}`);
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ detail: "Method Not Allowed" });
    expect(res.headers.get("allow")).toBe("GET");
  });

  it("when GET is sent to the join path, then 405 with Allow: POST", async () => {
    const res = await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}/join`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });

  it("when /health is called after start, then 200 status ok", async () => {
    const res = await api(sys, "GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "ok" });
  });
});

describe("routes of later issues", () => {
  const token = () => sys.manifest.users.alice.access_token;

  it.each([
    ["GET", "/users/friends"],
    ["GET", "/users/payments"],
    ["POST", "/auth/refresh-token"],
    ["POST", "/stores/1/events"],
  ])("when %s %s is called without a token, then 401 first", async (method, path) => {
    const res = await api(sys, method, path);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
  });

  it.each([
    ["GET", "/users/friends", undefined],
    ["GET", "/users/payments", undefined],
    ["POST", "/auth/refresh-token", { refresh_token: "x" }],
  ])("when %s %s is called with a token, then 501 Not implemented", async (method, path, json) => {
    const res = await api(sys, method, path, { token: token(), json });
    expect(res.status).toBe(501);
    expect(res.body).toEqual({ detail: "Not implemented" });
  });

  it("when store events are posted with a token, then 501 Not implemented", async () => {
    const res = await api(sys, "POST", "/stores/1/events", {
      token: token(),
      raw: "--x--",
      headers: { "content-type": "multipart/form-data; boundary=x" },
    });
    expect(res.status).toBe(501);
    expect(res.body).toEqual({ detail: "Not implemented" });
  });

  it.each([
    ["GET", "/app-settings?version=1.0.0&platform=ios"],
    ["POST", "/notifications/send-multicast"],
  ])("when %s %s has no x-api-key, then 401 Not authenticated", async (method, path) => {
    const res = await api(sys, method, path);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ detail: "Not authenticated" });
    expect(res.headers.get("www-authenticate")).toBeNull();
  });

  it.each([
    ["GET", "/app-settings?version=1.0.0&platform=ios", undefined],
    ["POST", "/notifications/send-multicast", { title: "t", user_ids: ["u"] }],
  ])("when %s %s has an x-api-key, then 501 Not implemented", async (method, path, json) => {
    const res = await api(sys, method, path, { apiKey: sys.manifest.api_keys.app, json });
    expect(res.status).toBe(501);
    expect(res.body).toEqual({ detail: "Not implemented" });
  });
});

describe("faults", () => {
  const faultyStores: ServiceSchema = {
    name: "stores",
    actions: {
      item: {
        visibility: "public",
        handler: () => Promise.reject(new Error("disk on fire at /var/secret/path")),
      },
      createStore: {
        visibility: "public",
        handler: () => ({
          id: 1,
          name: "s",
          logo_url: null,
          is_blogger: false,
          currency: "RUB",
          manager_ids: [],
        }),
      },
      createItem: { visibility: "public", handler: () => ({ id: "item-1" }) },
    },
  };

  it("when a service fails unexpectedly, then 500 Internal Server Error without internals", async () => {
    const broken = await startSystem({
      services: ["gateway", "auth", "users", "rounds"],
      extra: [faultyStores],
    });
    try {
      const res = await api(broken, "GET", `/rounds/${broken.manifest.rounds.open}`, {
        token: broken.manifest.users.alice.access_token,
      });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ detail: "Internal Server Error" });
      expect(res.text).not.toMatch(/fire|stack|secret/);
    } finally {
      await broken.stop();
    }
  });

  it("when the service behind a route is not running, then 503 Service Unavailable", async () => {
    const partial = await startSystem({ services: ["gateway", "auth", "users", "rounds", "stores"] });
    try {
      const res = await api(partial, "POST", "/notifications/send-multicast", { apiKey: "k", json: {} });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ detail: "Service Unavailable" });
      expect(res.headers.get("retry-after")).toBe("1");
    } finally {
      await partial.stop();
    }
  });
});
