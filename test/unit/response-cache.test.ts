import { ResponseCache } from "../../services/gateway/response-cache";
import { renderedUntil } from "../../services/rounds/round-view";

const now = 1_000_000_000_000;

describe("ResponseCache", () => {
  it("when an answer is kept, then it is served until the service's freshness ends", () => {
    const cache = new ResponseCache(1000, 100);
    cache.set("round-1", "alice", '{"a":1}', now + 300, now);
    expect(cache.get("round-1", "alice", now + 299)?.json).toBe('{"a":1}');
    expect(cache.get("round-1", "alice", now + 300)).toBeNull();
  });

  it("when the service allows longer than the cap, then the cap applies", () => {
    const cache = new ResponseCache(1000, 100);
    cache.set("round-1", "alice", "x", Number.POSITIVE_INFINITY, now);
    expect(cache.get("round-1", "alice", now + 999)?.json).toBe("x");
    expect(cache.get("round-1", "alice", now + 1000)).toBeNull();
  });

  it("when an answer is kept for every caller but some, then only the others are served it", () => {
    const cache = new ResponseCache(1000, 100);
    cache.set("round-1", "shared", "everyone's", now + 500, now, new Set(["owner", "member"]));
    expect(cache.get("round-1", "shared", now, "stranger")?.json).toBe("everyone's");
    expect(cache.get("round-1", "shared", now, "owner")).toBeNull();
    expect(cache.get("round-1", "shared", now, "member")).toBeNull();
    expect(cache.get("round-1", "shared", now)).toBeNull();
    expect(cache.get("round-1", "shared", now + 500, "stranger")).toBeNull();
  });

  it("when a tag is dropped, then every caller's answer under it goes and others stay", () => {
    const cache = new ResponseCache(1000, 100);
    cache.set("round-1", "alice", "a", now + 500, now);
    cache.set("round-1", "bob", "b", now + 500, now);
    cache.set("round-2", "alice", "c", now + 500, now);
    cache.dropTag("round-1");
    expect([cache.get("round-1", "alice", now), cache.get("round-1", "bob", now)]).toEqual([null, null]);
    expect(cache.get("round-2", "alice", now)?.json).toBe("c");
    expect(cache.size).toBe(1);
  });

  it("when the cache is full, then the oldest tag makes room", () => {
    const cache = new ResponseCache(1000, 2);
    cache.set("r1", "a", "1", now + 500, now);
    cache.set("r2", "a", "2", now + 500, now);
    cache.set("r3", "a", "3", now + 500, now);
    expect(cache.size).toBe(2);
    expect(cache.get("r1", "a", now)).toBeNull();
    expect(cache.get("r3", "a", now)?.json).toBe("3");
  });

  it("when the cap is zero, then nothing is kept", () => {
    const cache = new ResponseCache(0, 100);
    cache.set("r1", "a", "1", now + 500, now);
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
