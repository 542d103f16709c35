/**
 * A compaction's lines made ahead a slice at a time (shared/storage/nedb-lines-ahead): the event loop
 * gets turns while they are made, each line is the one serializeLine writes, the serialiser takes each
 * once, and nothing stays behind.
 */
import * as fastPaths from "../../../../shared/storage/nedb-fast-paths";
import { serializeLine } from "../../../../shared/storage/nedb-fast-paths";
import { lineOf, linesWaiting, makeLinesAhead } from "../../../../shared/storage/nedb-lines-ahead";

const docs = Array.from({ length: 1_000 }, (_, i) => ({
  _id: `d${i}`,
  at: new Date(i),
  nested: { list: [i, null, { deep: new Date(0) }] },
}));

describe("lines made ahead of a compaction", () => {
  it("when the lines of many documents are made ahead, then the event loop gets turns meanwhile, and each line is serializeLine's", async () => {
    let turns = 0;
    const tick = () => {
      turns++;
      if (pending) setImmediate(tick);
    };
    let pending = true;
    setImmediate(tick);
    const forget = await makeLinesAhead(docs, 0);
    pending = false;
    expect(turns).toBeGreaterThan(1);
    expect(linesWaiting()).toBe(docs.length);
    for (const doc of docs) expect(lineOf(doc)).toBe(serializeLine(doc));
    expect(linesWaiting()).toBe(0);
    forget();
  });

  it("when the lines of some documents were made already, then making them ahead again makes only the others", async () => {
    const forgetFirst = await makeLinesAhead(docs.slice(0, 600));
    const made = jest.spyOn(fastPaths, "serializeLine");
    try {
      const forget = await makeLinesAhead(docs);
      expect(made).toHaveBeenCalledTimes(400);
      expect(linesWaiting()).toBe(docs.length);
      forget();
    } finally {
      made.mockRestore();
      forgetFirst();
    }
    expect(linesWaiting()).toBe(0);
  });

  it("when a compaction ends before taking every line, then forgetting leaves none behind, and a document without a line made is serialised at once", async () => {
    const forget = await makeLinesAhead(docs);
    lineOf(docs[0]);
    forget();
    expect(linesWaiting()).toBe(0);
    expect(lineOf(docs[1])).toBe(serializeLine(docs[1]));
  });
});
