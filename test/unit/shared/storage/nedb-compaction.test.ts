/**
 * How the embedded store tells a file worth compacting from one grown by inserts
 * (docs/decisions/0078-nedb-compaction-while-running.md): the live bytes a compaction would write,
 * estimated from a sample of the documents, against the file's size.
 */
import { serializeLine } from "../../../../shared/storage/nedb-fast-paths";
import { LIVE_SAMPLE, liveBytes, mostlyDead } from "../../../../shared/storage/nedb-compaction";

const lineBytes = (doc: unknown) => Buffer.byteLength(serializeLine(doc)) + 1;
const exactBytes = (docs: unknown[]) => docs.reduce<number>((sum, d) => sum + lineBytes(d), 0);

describe("the live bytes of a collection", () => {
  it("when there are no documents, then they are 0", () => {
    expect(liveBytes([])).toBe(0);
  });

  it("when the documents' lines are all the same length, then the estimate is exactly the lines and their newlines", () => {
    const docs = Array.from({ length: 10_000 }, (_, i) => ({ _id: `u${String(i).padStart(5, "0")}`, n: 1 }));
    expect(liveBytes(docs)).toBe(exactBytes(docs));
  });

  it("when the lines differ in length (ASCII or not), then the estimate is within 5% of them, and the same each time", () => {
    const docs = Array.from({ length: 25_013 }, (_, i) => ({
      _id: `r${i}`,
      members: Array.from({ length: (i * 7919) % 50 }, (_, m) => `user-${m}`),
      title: i % 3 === 0 ? "é".repeat(i % 40) : "x".repeat(i % 40),
    }));
    const estimate = liveBytes(docs);
    expect(Math.abs(estimate - exactBytes(docs)) / exactBytes(docs)).toBeLessThan(0.05);
    expect(liveBytes(docs)).toBe(estimate);
  });

  it("when there are many documents, then at most LIVE_SAMPLE of them are serialised", () => {
    let reads = 0;
    const doc = { _id: "x" };
    const docs = Array.from({ length: 100_000 }, () => ({
      get _id() {
        reads++;
        return doc._id;
      },
    }));
    liveBytes(docs);
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(LIVE_SAMPLE);
  });
});

describe("whether a file is mostly dead lines", () => {
  it("when the file is at least twice its live bytes, then it is; below that, not", () => {
    expect(mostlyDead(2_000, 1_000)).toBe(true);
    expect(mostlyDead(1_999, 1_000)).toBe(false);
    expect(mostlyDead(0, 0)).toBe(true);
  });
});
