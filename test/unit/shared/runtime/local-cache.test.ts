import { LocalCache } from "../../../../shared/runtime/local-cache";

/** A call's time (ms since the epoch). */
const T = 1_700_000_000_000;

describe("LocalCache", () => {
  it("when an entry is read within its time to live, then it is there; once older, it is gone", () => {
    const cache = new LocalCache<string>(1000, 10);
    cache.set("a", "one", T);
    expect(cache.get("a", T + 1000)).toBe("one");
    expect(cache.get("a", T + 1001)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("when it is full, then the least recently used entry makes room for a new one", () => {
    const cache = new LocalCache<number>(60_000, 2);
    cache.set("a", 1, T);
    cache.set("b", 2, T);
    expect(cache.get("a", T + 1)).toBe(1); // "a" used after "b"
    cache.set("c", 3, T + 2);
    expect([cache.get("a", T + 3), cache.get("b", T + 3), cache.get("c", T + 3)]).toEqual([1, undefined, 3]);
  });

  it("when an entry is read, then its time to live still counts from when it was set", () => {
    const cache = new LocalCache<number>(1000, 2);
    cache.set("a", 1, T);
    expect(cache.get("a", T + 900)).toBe(1);
    expect(cache.get("a", T + 1001)).toBeUndefined();
  });

  it("when cleared, or built with no time to live, then it holds nothing", () => {
    const cache = new LocalCache<number>(60_000, 2);
    cache.set("a", 1, T);
    cache.clear();
    expect(cache.get("a", T + 1)).toBeUndefined();
    const off = new LocalCache<number>(0, 2);
    off.set("a", 1, T);
    expect(off.get("a", T)).toBeUndefined();
  });

  it("when entries are dropped by their value, then only those whose value matches go", () => {
    const cache = new LocalCache<string>(60_000, 10);
    cache.set("a", "k1", T);
    cache.set("b", "k2", T);
    cache.set("c", "k1", T);
    cache.deleteWhere((value) => value === "k1");
    expect([cache.get("a", T + 1), cache.get("b", T + 1), cache.get("c", T + 1)]).toEqual([
      undefined,
      "k2",
      undefined,
    ]);
  });

  it("when something is deleted or cleared, then its count of forgettings grows, and not when set or evicted", () => {
    const cache = new LocalCache<number>(60_000, 1);
    const before = cache.forgettings;
    cache.set("a", 1, T);
    cache.set("b", 2, T);
    expect(cache.forgettings).toBe(before);
    cache.delete("b");
    cache.deleteWhere(() => false);
    cache.clear();
    expect(cache.forgettings).toBe(before + 3);
  });

  it("when an entry is set with a shorter life of its own, then it goes after that, never after the cache's", () => {
    const cache = new LocalCache<string>(60_000, 10);
    cache.set("short", "s", T, 1_000);
    cache.set("long", "l", T, 120_000);
    cache.set("spent", "x", T, 0);
    expect([cache.get("short", T + 999), cache.get("spent", T)]).toEqual(["s", undefined]);
    expect([cache.get("short", T + 1_001), cache.get("long", T + 59_999)]).toEqual([undefined, "l"]);
    expect(cache.get("long", T + 60_001)).toBeUndefined();
  });
});
