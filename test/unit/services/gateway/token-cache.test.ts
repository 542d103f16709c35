import { TokenCache } from "../../../../services/gateway/token-cache";

const alice = { id: "alice", token_id: "t1" };
const bob = { id: "bob", token_id: "t2" };
const now = 1_000_000_000_000;
const inSeconds = (s: number) => Math.floor(now / 1000) + s;

describe("TokenCache", () => {
  it("when a verified token is asked for again within its time, then the caller is returned", () => {
    const cache = new TokenCache(10_000, 100);
    cache.set("tok", alice, inSeconds(900), now);
    expect(cache.get("tok", now + 10_000)).toEqual(alice);
  });

  it("when the cache time has passed, then the token must be verified again", () => {
    const cache = new TokenCache(10_000, 100);
    cache.set("tok", alice, inSeconds(900), now);
    expect(cache.get("tok", now + 10_001)).toBeNull();
    expect(cache.size).toBe(0);
  });

  it("when the token expires before the cache time, then it is not served past its expiry", () => {
    const cache = new TokenCache(10_000, 100);
    cache.set("tok", alice, inSeconds(3), now);
    expect(cache.get("tok", now + 2_999)).toEqual(alice);
    expect(cache.get("tok", now + 3_000)).toBeNull();
  });

  it("when a user is removed, then only that user's tokens are forgotten", () => {
    const cache = new TokenCache(10_000, 100);
    cache.set("a1", alice, inSeconds(900), now);
    cache.set("a2", alice, inSeconds(900), now);
    cache.set("b1", bob, inSeconds(900), now);
    cache.forgetUser("alice");
    expect([cache.get("a1", now), cache.get("a2", now), cache.get("b1", now)]).toEqual([null, null, bob]);
  });

  it("when the cache is full, then the oldest entry makes room", () => {
    const cache = new TokenCache(10_000, 2);
    cache.set("a", alice, inSeconds(900), now);
    cache.set("b", bob, inSeconds(900), now);
    cache.set("c", bob, inSeconds(900), now);
    expect(cache.size).toBe(2);
    expect(cache.get("a", now)).toBeNull();
    expect(cache.get("c", now)).toEqual(bob);
  });

  it("when the cache time is zero, then nothing is kept", () => {
    const cache = new TokenCache(0, 100);
    cache.set("tok", alice, inSeconds(900), now);
    expect(cache.get("tok", now)).toBeNull();
  });

  it("when a refresh presents a token past its expiry, then it is served within the refresh bound and AUTH_CACHE_SECONDS only", () => {
    const cache = new TokenCache(10_000, 100);
    cache.set("tok", alice, inSeconds(3), now);
    expect(cache.getForRefresh("tok", now + 5_000, 1_000)).toBeNull(); // expired 2 s ago, bound 1 s
    expect(cache.getForRefresh("tok", now + 5_000, 60_000)).toEqual(alice);
    expect(cache.getForRefresh("tok", now + 10_001, 60_000)).toBeNull(); // verified over 10 s ago
    expect(cache.size).toBe(0);
  });
});
