import { LocalCache } from "../../../../shared/runtime/local-cache";

describe("LocalCache", () => {
  it("when an entry is read before its time to live ends, then it is there; after, it is gone", () => {
    const cache = new LocalCache<string>(1000, 10);
    cache.set("a", "one", 0);
    expect(cache.get("a", 999)).toBe("one");
    expect(cache.get("a", 1000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("when it is full, then the oldest entry makes room for a new one", () => {
    const cache = new LocalCache<number>(60_000, 2);
    cache.set("a", 1, 0);
    cache.set("b", 2, 0);
    cache.set("c", 3, 0);
    expect([cache.get("a", 1), cache.get("b", 1), cache.get("c", 1)]).toEqual([undefined, 2, 3]);
  });

  it("when cleared, or built with no time to live, then it holds nothing", () => {
    const cache = new LocalCache<number>(60_000, 2);
    cache.set("a", 1, 0);
    cache.clear();
    expect(cache.get("a", 1)).toBeUndefined();
    const off = new LocalCache<number>(0, 2);
    off.set("a", 1, 0);
    expect(off.get("a", 0)).toBeUndefined();
  });

  it("when entries are dropped by their value, then only those whose value matches go", () => {
    const cache = new LocalCache<string>(60_000, 10);
    cache.set("a", "k1", 0);
    cache.set("b", "k2", 0);
    cache.set("c", "k1", 0);
    cache.deleteWhere((value) => value === "k1");
    expect([cache.get("a", 1), cache.get("b", 1), cache.get("c", 1)]).toEqual([undefined, "k2", undefined]);
  });

  it("when something is deleted or cleared, then its count of forgettings grows, and not when set or evicted", () => {
    const cache = new LocalCache<number>(60_000, 1);
    const before = cache.forgettings;
    cache.set("a", 1, 0);
    cache.set("b", 2, 0);
    expect(cache.forgettings).toBe(before);
    cache.delete("b");
    cache.deleteWhere(() => false);
    cache.clear();
    expect(cache.forgettings).toBe(before + 3);
  });
});
