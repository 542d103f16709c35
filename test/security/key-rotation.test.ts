/**
 * Rotating the access-token key under load logs nobody out (docs/operations.md, "Rotating the access-
 * token key"), in both topologies (in the cluster with two auth processes, restarted one at a time as
 * a rolling update does): honest clients keep reading and refreshing while auth's keys go through the
 * three steps, and none is ever answered 401. Two auth processes share refresh tokens only through
 * MongoDB (each embedded store is its own process's), so without MONGO_URI the cluster runs one.
 */
import jwt from "jsonwebtoken";
import { DEFAULT_RATE_LIMITS } from "../../shared/config";
import { signingKeysOf, type SigningKey } from "../../shared/auth/jwk";
import { mongoForTests } from "../support/mongo";
import { api, newUser, startSystem, type System } from "../support/system";
import { newSigningKeyPem } from "../support/token-keys";
import { signAccessToken, signingKeyOf } from "../support/tokens";

let sys: System;
beforeAll(async () => {
  sys = await startSystem({
    replicas: { auth: mongoForTests().uri ? 2 : 1 },
    // Its four clients refresh back to back for as long as the rotation takes, far past a user's
    // default refresh limit: what is measured is 401s, not the limit.
    env: { RATE_LIMITS: `${DEFAULT_RATE_LIMITS},auth.refresh=1000000` },
  });
}, 120_000);
afterAll(() => sys.stop());

interface Client {
  access: string;
  refresh: string;
  refreshes: number;
}

const pemOf = (key: SigningKey) => key.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const kidOf = (token: string) => jwt.decode(token, { complete: true })?.header.kid;

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not happen within ${timeoutMs} ms`);
}

describe("rotating the access-token key", () => {
  it("when the key is rotated in three steps under load, then no honest request is answered 401, and tokens signed by the old key verify until it is removed", async () => {
    const old = signingKeyOf(sys);
    const [next] = signingKeysOf(newSigningKeyPem(), "JWT_PRIVATE_KEYS");
    const clients: Client[] = [];
    for (let i = 0; i < 4; i++) {
      const user = await newUser(sys.broker, "rotating");
      clients.push({ access: user.access_token, refresh: user.refresh_token, refreshes: 0 });
    }
    const unauthorized: string[] = [];
    const otherFailures: number[] = [];
    let answered = 0;
    let running = true;

    const work = async (client: Client) => {
      for (let i = 0; running; i++) {
        const res =
          i % 4 === 3
            ? await api(sys, "POST", "/auth/refresh-token", {
                token: client.access,
                json: { refresh_token: client.refresh },
              })
            : await api(sys, "GET", "/users/friends", { token: client.access });
        if (res.status === 401) unauthorized.push(`${i % 4 === 3 ? "refresh" : "read"}: ${res.text}`);
        else if (res.status !== 200) otherFailures.push(res.status);
        else {
          answered += 1;
          if (i % 4 === 3) {
            client.access = res.body.access_token;
            client.refresh = res.body.refresh_token;
            client.refreshes += 1;
          }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const load = Promise.all(clients.map(work));
    const everyoneRefreshed = async () => {
      const since = clients.map((c) => c.refreshes);
      await until("every client refreshing", () => clients.every((c, i) => c.refreshes >= since[i] + 2));
    };
    const signedBy = (key: SigningKey) => signAccessToken(sys, { sub: sys.manifest.users.alice.id }, { key });
    try {
      await everyoneRefreshed();

      // 1. The new key is added last: published, verifies, does not sign.
      await sys.restartAuth({ JWT_PRIVATE_KEYS: `${pemOf(old)}${pemOf(next)}` });
      await everyoneRefreshed();
      expect(clients.map((c) => kidOf(c.access))).toEqual(clients.map(() => old.kid));
      await until("both keys published", async () => {
        const jwks = await api<{ keys: { kid: string }[] }>(sys, "GET", "/.well-known/jwks.json");
        return (
          jwks.body.keys
            .map((k) => k.kid)
            .sort()
            .join() === [old.kid, next.kid].sort().join()
        );
      });

      // 2. It moves first: it signs; tokens of the old key still verify.
      await sys.restartAuth({ JWT_PRIVATE_KEYS: `${pemOf(next)}${pemOf(old)}` });
      await everyoneRefreshed();
      expect(clients.map((c) => kidOf(c.access))).toEqual(clients.map(() => next.kid));
      expect((await api(sys, "GET", "/users/friends", { token: signedBy(old) })).status).toBe(200);

      // 3. Once no token of the old key can still be presented (here: every client has refreshed),
      // the old key goes.
      await sys.restartAuth({ JWT_PRIVATE_KEYS: pemOf(next) });
      await everyoneRefreshed();
      // A token of the removed key stops verifying everywhere (the gateway asks auth for its keys
      // again once an auth process comes or goes).
      await until(
        "a token of the removed key refused",
        async () => (await api(sys, "GET", "/users/friends", { token: signedBy(old) })).status === 401,
        15_000,
      );
      expect((await api(sys, "GET", "/users/friends", { token: signedBy(next) })).status).toBe(200);
    } finally {
      running = false;
      await load;
    }
    expect(unauthorized).toEqual([]);
    expect(answered).toBeGreaterThan(50);
    // Restarting auth may cost a request a 503 (one process) or nothing (two): never a 401.
    expect(otherFailures.filter((s) => s !== 503)).toEqual([]);
  }, 180_000);
});
