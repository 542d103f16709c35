/**
 * How lists that grow with their input cross the transporter: in pages, each one packet well under
 * nats-server's default `max_payload` (1 MB), which operators are not asked to raise. A page is bounded
 * by its count and by its size as JSON (what the Hybrid serializer sends), so long or heavily escaped
 * items make a page shorter instead of a packet larger. Which list is paged where, and why each bound:
 * docs/decisions/0032-job-queue.md.
 */

/** Most bytes of JSON one page of a list may take (the packet adds its envelope: meta, ids, a few hundred bytes). */
export const PAGE_BYTES = 256 * 1024;

/** The size of one item in a JSON array: its encoding plus the comma before it. */
export const jsonItemBytes = (item: unknown): number => Buffer.byteLength(JSON.stringify(item) ?? "null") + 1;

/**
 * Consecutive pages of `items`, each at most `maxItems` long and at most `maxBytes` as JSON (an item
 * larger than `maxBytes` on its own is a page of its own). Order is kept; no page is empty. Each page is
 * cut when it is asked for, so a long list is measured a page at a time.
 */
export function* eachPage<T>(
  items: readonly T[],
  maxItems: number,
  maxBytes = PAGE_BYTES,
  sizeOf: (item: T) => number = jsonItemBytes,
): Generator<T[]> {
  let start = 0;
  while (start < items.length) {
    let end = start;
    let bytes = 2; // the brackets
    while (end < items.length && end - start < maxItems) {
      const size = sizeOf(items[end]);
      if (end > start && bytes + size > maxBytes) break;
      bytes += size;
      end++;
    }
    yield items.slice(start, end);
    start = end;
  }
}

/** Every page of `items` at once (see eachPage). */
export function pagesOf<T>(
  items: readonly T[],
  maxItems: number,
  maxBytes = PAGE_BYTES,
  sizeOf: (item: T) => number = jsonItemBytes,
): T[][] {
  return [...eachPage(items, maxItems, maxBytes, sizeOf)];
}

/** Whether `items` fits in one page (the common case: sent as it is). */
export function fitsOnePage<T>(
  items: readonly T[],
  maxItems: number,
  maxBytes = PAGE_BYTES,
  sizeOf: (item: T) => number = jsonItemBytes,
): boolean {
  if (items.length > maxItems) return false;
  let bytes = 2;
  for (const item of items) {
    bytes += sizeOf(item);
    if (bytes > maxBytes) return false;
  }
  return true;
}
