/**
 * The soak's document counts and live bytes (bench/soak.ts) read a collection's file as NeDB's loader
 * does: the last line of an id wins, a deletion removes it, index definitions and broken lines are no
 * documents.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { liveIn } from "../../../bench/soak";

describe("liveIn", () => {
  it("when a file holds updates, deletions, index definitions and a torn line, then only the live documents and their last lines are counted", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-soak-"));
    try {
      const file = path.join(dir, "things.db");
      const lines = [
        { _id: "a", n: 1 },
        { _id: "b", n: 1 },
        { _id: 7, n: 1 },
        { _id: "a", n: 2 },
        { $$indexCreated: { fieldName: "n", unique: false, sparse: false } },
        { _id: "b", $$deleted: true },
        { _id: "7", n: 1 },
      ].map((l) => JSON.stringify(l));
      fs.writeFileSync(file, `${lines.join("\n")}\n{"_id": "torn`);
      // a, the number 7 and the string "7": b was deleted; each with its last line and newline.
      const bytes = [lines[3], lines[2], lines[6]].reduce((sum, l) => sum + Buffer.byteLength(l) + 1, 0);
      expect(liveIn(file)).toEqual({ documents: 3, bytes });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
