/**
 * `node -r ts-node/register/transpile-only bench/compaction-stall.ts [documents] [nedb|serialize|ahead]`: how
 * long one NeDB collection of `documents` (1,000,000) user-like documents, all live, holds its
 * operations while it is compacted through NeDB's documented `compactDatafileAsync`, and the longest the
 * event loop is blocked meanwhile. In a scratch folder, NeDB alone (`nedb`, the default: the figures of
 * docs/decisions/0108-no-compaction-of-large-files-while-running.md) or with the project's
 * `nedb-serialize` hook (`serialize`: docs/decisions/0113-compaction-lines-without-replacer.md), or with
 * that hook and the lines made ahead in slices by the group commit's compaction (`ahead`, as the store
 * compacts: docs/decisions/0114-compaction-lines-made-ahead.md; the inserts are written before it is
 * applied, and nothing is appended after), or with the lines made before the compaction takes the
 * collection's queue, as the store now compacts (`before`:
 * docs/decisions/0123-compaction-lines-made-before.md). Besides the read asked as the compaction starts,
 * a read is asked every 10 ms while it runs; the longest any of them waited is how long the collection
 * was held.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Datastore from "@seald-io/nedb";
import { useHook } from "../shared/runtime/internals";
import {
  compactDatafile,
  nedbGroupCommitHook,
  nedbLibs,
  nedbSerializeHook,
  type NedbPersistence,
} from "../shared/storage/nedb-internals";

const idOf = (i: number) => `u${String(i).padStart(23, "0")}`;

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 1_000_000);
  const serializer = process.argv[3] ?? "nedb";
  if (!["nedb", "serialize", "ahead", "before"].includes(serializer)) {
    throw new Error(`nedb, serialize, ahead or before, not ${serializer}`);
  }
  if (serializer !== "nedb" && !useHook(nedbSerializeHook, nedbLibs, { off: [] })) {
    throw new Error("the nedb-serialize hook could not be applied");
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "compaction-stall-"));
  const file = path.join(dir, "users.db");
  try {
    const ds = new Datastore({ filename: file });
    await ds.loadDatabaseAsync();
    for (let from = 0; from < count; from += 50_000) {
      const docs = [];
      for (let i = from; i < Math.min(count, from + 50_000); i++) {
        docs.push({
          _id: idOf(i),
          name: `User ${i}`,
          email: `user${i}@example.com`,
          avatar: null,
          friends: [idOf(i + 1), idOf(i + 2), idOf(i + 3)],
          removed: false,
          created_at: new Date(),
        });
      }
      await ds.insertAsync(docs);
    }
    const mb = fs.statSync(file).size / 2 ** 20;
    if (serializer === "ahead" || serializer === "before") {
      const persistence = (ds as unknown as { persistence: NedbPersistence }).persistence;
      const appender = { append: () => undefined, beforeCompaction: () => undefined };
      if (!useHook(nedbGroupCommitHook(appender), persistence, { off: [] })) {
        throw new Error("the nedb-group-commit hook could not be applied");
      }
    }

    let longestBlock = 0;
    let last = performance.now();
    const lag = setInterval(() => {
      const now = performance.now();
      longestBlock = Math.max(longestBlock, now - last - 10);
      last = now;
    }, 10);
    let compacting = true;
    let longestRead = 0;
    const reads = setInterval(() => {
      if (!compacting) return;
      const asked = performance.now();
      void ds.findOneAsync({ _id: idOf(7) }).then(() => {
        longestRead = Math.max(longestRead, performance.now() - asked);
      });
    }, 10);
    const t0 = performance.now();
    const compaction = serializer === "before" ? compactDatafile(ds) : ds.compactDatafileAsync();
    await ds.findOneAsync({ _id: idOf(5) });
    const readWaited = performance.now() - t0;
    await compaction;
    const compactionMs = performance.now() - t0;
    compacting = false;
    clearInterval(lag);
    clearInterval(reads);
    await ds.findOneAsync({ _id: idOf(9) }); // the last periodic read has answered
    const s = (ms: number) => `${Math.round(ms)} ms`;
    console.log(
      `${count.toLocaleString("en")} documents, ${mb.toFixed(0)} MB, Node ${process.version}, ${serializer}: compaction ` +
        `${s(compactionMs)}; a read asked as it started waited ${s(readWaited)}, the longest of those asked ` +
        `every 10 ms ${s(longestRead)}; longest event-loop block ${s(longestBlock)}`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
