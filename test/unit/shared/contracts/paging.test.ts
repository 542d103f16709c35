/**
 * Pages of lists that cross the transporter (shared/contracts/paging): bounded by count and by bytes of
 * JSON, in order, none empty; and a multicast's recipient pages at the 1,000,000-id ceiling, each well
 * within MongoDB's 16 MB document limit.
 */
import { BSON } from "mongodb";
import { fitsOnePage, jsonItemBytes, PAGE_BYTES, pagesOf } from "../../../../shared/contracts/paging";
import { MAX_RECIPIENTS_CEILING, RECIPIENT_PAGE_MAX } from "../../../../shared/contracts/notifier";

const jsonBytes = (items: unknown[]) => Buffer.byteLength(JSON.stringify(items));

describe("pagesOf", () => {
  it("when items are small, then pages are cut by count, keep the order and end with the remainder", () => {
    const items = Array.from({ length: 25 }, (_, i) => `i${i}`);
    const pages = pagesOf(items, 10);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 5]);
    expect(pages.flat()).toEqual(items);
  });

  it("when items are long or escaped, then pages are cut by their JSON bytes instead", () => {
    const long = Array.from({ length: 100 }, (_, i) => `${i}-${"\u0001".repeat(60)}`); // ~370 bytes of JSON each
    const pages = pagesOf(long, 10_000, 4096);
    expect(pages.length).toBeGreaterThan(1);
    for (const page of pages) expect(jsonBytes(page)).toBeLessThanOrEqual(4096);
    expect(pages.flat()).toEqual(long);
  });

  it("when one item alone is larger than a page, then it is a page of its own and nothing is lost", () => {
    const pages = pagesOf(["a", "x".repeat(100), "b"], 10, 50);
    expect(pages).toEqual([["a"], ["x".repeat(100)], ["b"]]);
  });

  it("when the list is empty, then there are no pages", () => {
    expect(pagesOf([], 10)).toEqual([]);
    expect(fitsOnePage([], 10)).toBe(true);
  });

  it("when a list fits one page by count and bytes, then fitsOnePage agrees with pagesOf", () => {
    for (const [items, max, bytes] of [
      [["a", "b"], 2, 100],
      [["a", "b", "c"], 2, 100],
      [["aaaa", "bbbb"], 10, 12],
      [["aaaa", "bbbb"], 10, 16],
    ] as [string[], number, number][]) {
      expect(fitsOnePage(items, max, bytes)).toBe(pagesOf(items, max, bytes).length <= 1);
    }
  });

  it("when an item is measured, then its size is its JSON plus the separating comma", () => {
    expect(jsonItemBytes("ab")).toBe(5);
    expect(jsonItemBytes({ a: 1 })).toBe(8);
  });
});

describe("recipient pages at the ceiling", () => {
  it("when 1,000,000 ids of the longest allowed length are paged, then every page is within its bounds and its document far below 16 MB", () => {
    const ids = Array.from({ length: MAX_RECIPIENTS_CEILING }, (_, i) => String(i).padStart(64, "u"));
    const pages = pagesOf(ids, RECIPIENT_PAGE_MAX);
    expect(pages.reduce((n, p) => n + p.length, 0)).toBe(MAX_RECIPIENTS_CEILING);
    let largest = 0;
    for (const [index, page] of pages.entries()) {
      expect(page.length).toBeLessThanOrEqual(RECIPIENT_PAGE_MAX);
      expect(jsonBytes(page)).toBeLessThanOrEqual(PAGE_BYTES);
      const doc = {
        _id: `job_${"0".repeat(24)}.${"0".repeat(16)}:${index}`,
        set_id: "s",
        index,
        user_ids: page,
        staged_at: new Date(),
      };
      largest = Math.max(largest, BSON.calculateObjectSize(doc));
    }
    expect(largest).toBeLessThan(1024 * 1024);
    expect(largest).toBeLessThan(16 * 1024 * 1024);
  });

  it("when 1,000,000 short ids are paged, then the count bound holds and each document stays small", () => {
    const ids = Array.from({ length: MAX_RECIPIENTS_CEILING }, (_, i) => `u${i}`);
    const pages = pagesOf(ids, RECIPIENT_PAGE_MAX);
    expect(pages).toHaveLength(MAX_RECIPIENTS_CEILING / RECIPIENT_PAGE_MAX);
    const size = BSON.calculateObjectSize({ user_ids: pages[pages.length - 1] });
    expect(size).toBeLessThan(1024 * 1024);
  });
});
