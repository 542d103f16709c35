/**
 * Abuse (docs/decisions/0037), against the running system in both topologies: limits per client
 * address before authentication, X-Forwarded-For believed only from TRUSTED_PROXIES, a stricter limit
 * on refused credentials, and the default limits on writes. The trusted proxy here is 127.0.0.2 (the
 * test connects from it: all of 127.0.0.0/8 is this host); requests from 127.0.0.1 are an untrusted
 * peer's. The refused-credentials limit is the gateway's own (AUTH_FAILURE_LIMIT, 600 a minute); the
 * address limit is set just above it, so that both are reached in seconds; the write limits are the
 * defaults.
 */
import http from "node:http";
import { AUTH_FAILURE_LIMIT } from "../../services/gateway/address-limits";
import { loadConfig } from "../../shared/config";
import { startSystem, type System } from "../support/system";

const FAILURE_LIMIT = AUTH_FAILURE_LIMIT;
/** Above the refused-credentials limit, which an address must be able to reach first. */
const ADDRESS_LIMIT = FAILURE_LIMIT + 100;

let sys: System;
beforeAll(async () => {
  sys = await startSystem({
    env: {
      ADDRESS_RATE_LIMIT: String(ADDRESS_LIMIT),
      TRUSTED_PROXIES: "127.0.0.2",
    },
  });
}, 120_000);
afterAll(() => sys?.stop());

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** One request from `from` (the local address the connection is made from). */
function send(
  method: string,
  path: string,
  opts: { from?: string; headers?: Record<string, string>; json?: unknown } = {},
): Promise<Answer> {
  const url = new URL(path, sys.baseUrl);
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress: opts.from ?? "127.0.0.1",
        agent: false,
        headers: { ...(body ? { "content-type": "application/json" } : {}), ...opts.headers },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (d: string) => (text += d));
        res.on("end", () => {
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Through the trusted proxy, for the client `client`. */
const forwarded = (client: string, headers: Record<string, string> = {}) => ({
  from: "127.0.0.2",
  headers: { "x-forwarded-for": client, ...headers },
});

/**
 * The limits count in fixed minutes: a test that fills one waits, when the current minute is about to
 * end, for the next to begin, so that its count is never cut in two.
 */
async function awayFromMinuteEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 5000) await new Promise((resolve) => setTimeout(resolve, left + 100));
}

const expectTooMany = (res: Answer) => {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ detail: "Too Many Requests" });
  const retryAfter = Number(res.headers["retry-after"]);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
};

describe("limits before authentication", () => {
  it("when nothing is set, then an address limit, a refused-credentials limit and write limits are on", () => {
    const config = loadConfig({});
    expect(config.addressRateLimit).toBeGreaterThan(0);
    expect(AUTH_FAILURE_LIMIT).toBeGreaterThan(0);
    expect(config.rateLimits).toMatch(/rounds\.join=\d+/);
    expect(config.trustedProxies).toEqual([]);
  });

  it("when an address sends more than the pre-authentication limit, then 429 with Retry-After, other addresses and /health unaffected", async () => {
    await awayFromMinuteEdge();
    const round = `/rounds/${sys.manifest.rounds.open}`;
    // Unauthenticated: each is a 401, and each counts, as any request does.
    for (let i = 0; i < ADDRESS_LIMIT; i++) {
      expect((await send("GET", round, forwarded("203.0.113.10"))).status).toBe(401);
    }
    const token = { authorization: `Bearer ${sys.manifest.users.alice.access_token}` };
    expectTooMany(await send("GET", round, forwarded("203.0.113.10", token)));
    expect((await send("GET", round, forwarded("203.0.113.11", token))).status).toBe(200);
    expect((await send("GET", "/health", forwarded("203.0.113.10"))).status).toBe(200);
  });

  it("when X-Forwarded-For comes from an untrusted peer, then it is ignored", async () => {
    await awayFromMinuteEdge();
    // Each request names another client; all come from 127.0.0.1, not a trusted proxy, and count as it.
    let answer: Answer | null = null;
    for (let i = 0; i <= ADDRESS_LIMIT && answer === null; i++) {
      const res = await send("GET", "/users/friends", { headers: { "x-forwarded-for": `198.51.100.${i}` } });
      if (res.status === 429) answer = res;
      else expect(res.status).toBe(401);
    }
    expect(answer).not.toBeNull();
    expectTooMany(answer as Answer);
  });

  it("when a trusted proxy forwards a chain, then the right-most untrusted address is the client (what the client wrote left of it is not believed)", async () => {
    await awayFromMinuteEdge();
    // The client forges 192.0.2.1 to the left; the proxy appends the address it saw, 203.0.113.20.
    for (let i = 0; i < ADDRESS_LIMIT; i++) {
      const forged = `192.0.2.${i % 250}, 203.0.113.20`;
      expect((await send("GET", "/users/friends", forwarded(forged))).status).toBe(401);
    }
    expectTooMany(await send("GET", "/users/friends", forwarded("192.0.2.1, 203.0.113.20")));
    expect((await send("GET", "/users/friends", forwarded("203.0.113.20, 203.0.113.21"))).status).toBe(401);
  });

  it("when an address has its credentials refused past the limit, then requests that would ask auth are 429 until the minute ends, and other addresses are unaffected", async () => {
    await awayFromMinuteEdge();
    const badKey = (client: string, n: number) =>
      send(
        "GET",
        "/app-settings?version=1.0.0&platform=ios",
        forwarded(client, { "x-api-key": `guess-${n}` }),
      );
    for (let i = 0; i < FAILURE_LIMIT; i++) expect((await badKey("203.0.113.30", i)).status).toBe(401);
    expectTooMany(await badKey("203.0.113.30", FAILURE_LIMIT));
    // A right key not yet known to this gateway would cost a call to auth as well: refused too.
    const rightKey = forwarded("203.0.113.30", { "x-api-key": sys.manifest.api_keys.notifications });
    expectTooMany(await send("GET", "/notifications/job_0", rightKey));
    // No credentials cost no call and are not counted; another address goes on as before.
    expect((await send("GET", "/users/friends", forwarded("203.0.113.30"))).status).toBe(401);
    expect((await badKey("203.0.113.31", 0)).status).toBe(401);
  });
});

describe("default limits on writes", () => {
  it("when a user refreshes more often than the default allows, then 429 with Retry-After, other users unaffected", async () => {
    await awayFromMinuteEdge();
    const limit = Number(/auth\.refresh=(\d+)/.exec(sys.config.rateLimits)?.[1]);
    expect(limit).toBeGreaterThan(0);
    const { carol, bob } = sys.manifest.users;
    const refresh = (token: string, n: number) =>
      send("POST", "/auth/refresh-token", {
        ...forwarded(`203.0.113.${40 + Math.floor(n / 50)}`, { authorization: `Bearer ${token}` }),
        json: { refresh_token: "not-a-refresh-token" },
      });
    for (let i = 0; i < limit; i++) expect((await refresh(carol.access_token, i)).status).toBe(401);
    expectTooMany(await refresh(carol.access_token, limit));
    expect((await refresh(bob.access_token, 0)).status).toBe(401);
  });
});
