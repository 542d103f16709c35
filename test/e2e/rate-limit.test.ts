import { api, startSystem, type System } from "../support/system";

let sys: System;
beforeAll(async () => {
  sys = await startSystem({ env: { RATE_LIMITS: "rounds.get=3,settings.appSettings=2" } });
});
afterAll(() => sys.stop());

describe("RATE_LIMITS", () => {
  it("when a user goes over a route's limit, then 429 Too Many Requests with Retry-After, and other users are unaffected", async () => {
    const { alice, bob } = sys.manifest.users;
    const get = (token: string) => api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`, { token });
    for (let i = 0; i < 3; i++) expect((await get(alice.access_token)).status).toBe(200);
    const over = await get(alice.access_token);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ detail: "Too Many Requests" });
    const retryAfter = Number(over.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await get(bob.access_token)).status).toBe(200);
  });

  it("when an API key goes over its route's limit, then 429, counted per key", async () => {
    const path = "/app-settings?version=1.0.0&platform=ios";
    const key = sys.manifest.api_keys.app;
    expect((await api(sys, "GET", path, { apiKey: key })).status).toBe(200);
    expect((await api(sys, "GET", path, { apiKey: key })).status).toBe(200);
    expect((await api(sys, "GET", path, { apiKey: key })).status).toBe(429);
  });

  it("when a route has no limit, then it is never limited", async () => {
    for (let i = 0; i < 5; i++) {
      expect(
        (await api(sys, "GET", "/users/friends", { token: sys.manifest.users.carol.access_token })).status,
      ).toBe(200);
    }
  });

  it("when the caller is not authenticated, then the 401 comes first and nothing is counted for anyone", async () => {
    expect((await api(sys, "GET", `/rounds/${sys.manifest.rounds.open}`)).status).toBe(401);
  });
});
