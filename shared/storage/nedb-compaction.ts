/**
 * When the embedded store compacts a collection's file while running
 * (docs/decisions/0078-nedb-compaction-while-running.md). NeDB appends a line per insert, update and
 * delete, so a file grows with every write even when the data does not, and NeDB compacts only when it
 * loads (at start) unless asked. Every STORE_COMPACTION_INTERVAL_SECONDS (the first time after a random
 * part of it) each collection's file is looked at (one `stat`), and compacted through NeDB's documented
 * `compactDatafileAsync` once it has grown to twice its size after the last compaction, by at least
 * COMPACTION_MIN_GROWTH, and at least half of it is dead lines (`mostlyDead`): rewriting the live half
 * then costs at most one byte written per byte appended since, and a file grown by inserts, which a
 * rewrite would not shrink, is left as it is until it has doubled again from its live bytes
 * (docs/decisions/0078-nedb-compaction-while-running.md). A compaction writes the whole file elsewhere
 * before it replaces the old one, so it is skipped while the file system has less room than twice the
 * file. A file larger than STORE_COMPACTION_MAX_MB is left to the next load: NeDB's compaction
 * holds the collection, and for a moment the whole process, for a time that grows with the data
 * (docs/decisions/0078-nedb-compaction-while-running.md).
 *
 * Not NeDB's `setAutocompactionInterval`: it compacts every file at every tick however little changed,
 * and calls `compactDatafile` without a callback, so a compaction that fails (a full disk) would be an
 * unhandled rejection, which ends the process.
 */
import fs from "node:fs";
import path from "node:path";
import { serializeLine } from "./nedb-fast-paths";

/** Growth below which a file is never compacted while running (small files are cheap either way). */
export const COMPACTION_MIN_GROWTH = 1024 * 1024;

/** Whether a file of `size` bytes, `base` bytes after its last compaction, is due. */
export const compactionDue = (size: number, base: number): boolean =>
  size >= 2 * base && size - base >= COMPACTION_MIN_GROWTH;

/** At most this many documents are serialised to estimate a file's live bytes. */
export const LIVE_SAMPLE = 256;

/**
 * About how many bytes a compaction of `docs` would write: their number times the mean line of an
 * even sample of them (every k-th, so the same data gives the same figure). One pass over an array
 * NeDB builds of its documents, and at most LIVE_SAMPLE lines made.
 */
export function liveBytes(docs: readonly unknown[], sample = LIVE_SAMPLE): number {
  if (docs.length === 0) return 0;
  const step = Math.ceil(docs.length / sample);
  let bytes = 0;
  let lines = 0;
  for (let i = 0; i < docs.length; i += step) {
    bytes += Buffer.byteLength(serializeLine(docs[i])) + 1; // and its newline
    lines++;
  }
  return Math.round((bytes / lines) * docs.length);
}

/** Whether at least half of a file of `size` bytes is dead lines, `live` bytes of it being live. */
export const mostlyDead = (size: number, live: number): boolean => size >= 2 * live;

/** When, within the first interval, a store first checks its files: at random, so stores out of step. */
export const compactionPhase = (intervalMs: number, random: () => number = Math.random): number =>
  Math.floor(random() * intervalMs);

/** The size of `file`, or null when it cannot be read. */
export function fileSize(file: string): number | null {
  try {
    return fs.statSync(file).size;
  } catch {
    return null;
  }
}

/**
 * Syncs `file`, then its folder, in the thread pool. Before a compaction: NeDB's compaction syncs both
 * in the collection's queue (the old file before it writes the new one, the folder before and after),
 * and what was appended since the kernel last wrote the file back made those syncs most of the time
 * the collection waited (docs/decisions/0078-nedb-compaction-while-running.md); synced here first, while
 * operations go on, they find only what was appended meanwhile. At close, for a file not compacted:
 * appends are synced only with STORE_FSYNC (docs/decisions/0078-nedb-compaction-while-running.md).
 * Resolves to whether both were synced; never throws: a file that cannot be synced is left as after
 * any write without STORE_FSYNC, and a compaction's own syncs report what fails.
 */
export async function syncToDisk(file: string): Promise<boolean> {
  for (const target of [file, path.dirname(file)]) {
    let handle: fs.promises.FileHandle | undefined;
    try {
      handle = await fs.promises.open(target, "r");
      await handle.sync();
    } catch {
      return false; // a file that is not there (a collection in memory): nor its folder
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }
  return true;
}

/** Whether the file system of `file` has room for a copy of it, twice over; true when it cannot tell. */
export function roomToCompact(file: string, size: number): boolean {
  try {
    const fsStats = fs.statfsSync(path.dirname(file));
    return fsStats.bavail * fsStats.bsize >= 2 * size;
  } catch {
    return true;
  }
}
