import { ResponseCache } from "../../../../services/gateway/response-cache";
import { renderedUntil } from "../../../../services/rounds/round-view";

const now = 1_000_000_000_000;

describe("ResponseCache", () => {
  it("when an answer is kept, then it is served until the service's freshness ends", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    cache.set("round-1", "alice", { json: '{"a":1}', freshUntil: now + 300, now });
    expect(cache.get("round-1", "alice", now + 299)?.json).toBe('{"a":1}');
    expect(cache.get("round-1", "alice", now + 300)).toBeNull();
  });

  it("when the service allows longer than the cap, then the cap applies", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    cache.set("round-1", "alice", { json: "x", freshUntil: Number.POSITIVE_INFINITY, now });
    expect(cache.get("round-1", "alice", now + 999)?.json).toBe("x");
    expect(cache.get("round-1", "alice", now + 1000)).toBeNull();
  });

  it("when an answer is kept for every caller but some, then only the others are served it", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    cache.set("round-1", "shared", {
      json: "everyone's",
      freshUntil: now + 500,
      now,
      except: new Set(["owner", "member"]),
    });
    expect(cache.get("round-1", "shared", now, "stranger")?.json).toBe("everyone's");
    expect(cache.get("round-1", "shared", now, "owner")).toBeNull();
    expect(cache.get("round-1", "shared", now, "member")).toBeNull();
    expect(cache.get("round-1", "shared", now)).toBeNull();
    expect(cache.get("round-1", "shared", now + 500, "stranger")).toBeNull();
  });

  it("when a tag is dropped, then every caller's answer under it goes and others stay", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    cache.set("round-1", "alice", { json: "a", freshUntil: now + 500, now });
    cache.set("round-1", "bob", { json: "b", freshUntil: now + 500, now });
    cache.set("round-2", "alice", { json: "c", freshUntil: now + 500, now });
    cache.dropTag("round-1");
    expect([cache.get("round-1", "alice", now), cache.get("round-1", "bob", now)]).toEqual([null, null]);
    expect(cache.get("round-2", "alice", now)?.json).toBe("c");
    expect(cache.size).toBe(1);
  });

  it("when the cache is full, then the oldest tag makes room", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 2 });
    cache.set("r1", "a", { json: "1", freshUntil: now + 500, now });
    cache.set("r2", "a", { json: "2", freshUntil: now + 500, now });
    cache.set("r3", "a", { json: "3", freshUntil: now + 500, now });
    expect(cache.size).toBe(2);
    expect(cache.get("r1", "a", now)).toBeNull();
    expect(cache.get("r3", "a", now)?.json).toBe("3");
  });

  it("when an answer is everyone's but some, then the longer shared cap applies, not the caller's", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const except = new Set(["owner"]);
    cache.set("round-1", "shared", { json: "all", freshUntil: Infinity, now, except });
    cache.set("round-1", "alice", { json: "own", freshUntil: Infinity, now });
    expect(cache.get("round-1", "shared", now + 59_999, "stranger")?.json).toBe("all");
    expect(cache.get("round-1", "alice", now + 1000)).toBeNull();
    expect(cache.get("round-1", "shared", now + 60_000, "stranger")).toBeNull();
  });

  it("when an answer counts down, then each read gets the seconds left at its moment, with its length", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const head = '{"title":"Кофе","seconds_to_end":';
    const end = now + 30_500;
    const except = new Set<string>();
    cache.set("round-1", "shared", { json: head, freshUntil: end, now, except, countdownTo: end });
    const at = (t: number) => cache.get("round-1", "shared", t, "stranger");
    expect(at(now)).toEqual({ json: `${head}30}`, bytes: Buffer.byteLength(`${head}30}`) });
    expect(at(now + 1_000)?.json).toBe(`${head}29}`);
    expect(at(now + 30_499)?.json).toBe(`${head}0}`);
    // At the end the rest of the answer (status, is_ended) no longer holds.
    expect(at(end)).toBeNull();
  });

  it("when a counting-down answer is kept as bytes, then the seconds follow as a last part", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    const head = Buffer.from('{"seconds_to_end":');
    const except = new Set<string>();
    cache.set("r", "s", { json: [head], freshUntil: Infinity, now, except, countdownTo: now + 5_000 });
    const kept = cache.get("r", "s", now, "x");
    expect(Buffer.concat(kept!.json as Buffer[]).toString()).toBe('{"seconds_to_end":5}');
    expect(kept!.bytes).toBe(20);
  });

  it("when a tag was dropped while its call was under way, then the call's older answer is not kept", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    const asked = cache.version;
    cache.dropTag("round-1");
    cache.set("round-1", "alice", { json: "old", freshUntil: Infinity, now, asked });
    cache.set("round-2", "alice", { json: "other", freshUntil: Infinity, now, asked });
    expect(cache.get("round-1", "alice", now)).toBeNull();
    expect(cache.get("round-2", "alice", now)?.json).toBe("other");
    // A call made after the drop is kept.
    cache.set("round-1", "alice", { json: "new", freshUntil: Infinity, now, asked: cache.version });
    expect(cache.get("round-1", "alice", now)?.json).toBe("new");
  });

  it("when everything was dropped while a call was under way, then its answer is not kept", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100 });
    const asked = cache.version;
    cache.clear();
    cache.set("round-2", "alice", { json: "old", freshUntil: Infinity, now, asked });
    expect(cache.get("round-2", "alice", now)).toBeNull();
  });

  it("when a user was removed, then a shared answer that still names them is kept only as long as a caller's own", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, sharedMaxAgeMs: 60_000 });
    cache.set("round-1", "shared", { json: "all", freshUntil: Infinity, now, except: new Set(["gone"]) });
    cache.userRemoved("gone", now);
    expect(cache.size).toBe(0);
    // Kept after the removal by a service that had not heard of it yet: it still names the user.
    cache.set("round-1", "shared", { json: "stale", freshUntil: Infinity, now, except: new Set(["gone"]) });
    cache.set("round-2", "shared", { json: "fresh", freshUntil: Infinity, now, except: new Set(["other"]) });
    expect(cache.get("round-1", "shared", now + 1000, "x")).toBeNull();
    expect(cache.get("round-2", "shared", now + 59_999, "x")?.json).toBe("fresh");
    // Once the shared cap has passed since the removal, the user is no longer looked for.
    const later = now + 60_000;
    cache.set("round-1", "shared", {
      json: "s",
      freshUntil: Infinity,
      now: later,
      except: new Set(["gone"]),
    });
    expect(cache.get("round-1", "shared", later + 59_999, "x")?.json).toBe("s");
  });

  it("when answers outgrow the byte budget, then the oldest rounds' go first", () => {
    const cache = new ResponseCache({ maxAgeMs: 1000, maxEntries: 100, maxBytes: 10 });
    cache.set("r1", "a", { json: "1234", freshUntil: Infinity, now });
    cache.set("r2", "a", { json: "5678", freshUntil: Infinity, now });
    cache.set("r3", "a", { json: "9abc", freshUntil: Infinity, now });
    expect(cache.get("r1", "a", now)).toBeNull();
    expect(cache.get("r3", "a", now)?.json).toBe("9abc");
    expect([cache.size, cache.byteSize]).toEqual([2, 8]);
    // An answer larger than the whole budget is not kept, and evicts nothing.
    cache.set("r4", "a", { json: "x".repeat(11), freshUntil: Infinity, now });
    expect([cache.size, cache.byteSize]).toEqual([2, 8]);
  });

  it("when the cap is zero, then nothing is kept", () => {
    const cache = new ResponseCache({ maxAgeMs: 0, maxEntries: 100 });
    cache.set("r1", "a", { json: "1", freshUntil: now + 500, now });
    expect(cache.get("r1", "a", now)).toBeNull();
  });
});

describe("renderedUntil", () => {
  it("when the round ends later, then the answer is right until seconds_to_end would tick", () => {
    const end = now + 10_500;
    const round = { is_ended: false, end_time: new Date(end).toISOString(), seconds_to_end: 10 };
    // At end - 10 s, floor((end - t) / 1000) is still 10; a moment later it is 9.
    expect(renderedUntil(round)).toBe(end - 10_000);
  });

  it("when the round ends within the second, then the answer is right until the end itself", () => {
    const end = now + 400;
    expect(renderedUntil({ is_ended: false, end_time: new Date(end).toISOString(), seconds_to_end: 0 })).toBe(
      end,
    );
  });

  it("when the round has ended or has no end, then nothing in it moves with the clock", () => {
    expect(
      renderedUntil({ is_ended: true, end_time: new Date(now).toISOString(), seconds_to_end: 0 }),
    ).toBeNull();
    expect(renderedUntil({ is_ended: false, end_time: null, seconds_to_end: 0 })).toBeNull();
  });
});
