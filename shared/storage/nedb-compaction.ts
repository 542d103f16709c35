/**
 * When the embedded store compacts a collection's file while running
 * (docs/decisions/0078-nedb-compaction-while-running.md). NeDB appends a line per insert, update and
 * delete, so a file grows with every write even when the data does not, and NeDB compacts only when it
 * loads (at start) unless asked. Every STORE_COMPACTION_INTERVAL_SECONDS (the first time after a random
 * part of it) each collection's file is looked at (one `stat`), and compacted through NeDB's documented
 * `compactDatafileAsync` once it has grown to twice its size after the last compaction, and by at least
 * COMPACTION_MIN_GROWTH: at most half of the file is then dead lines, and rewriting the live half costs
 * at most one byte written per byte appended since. A compaction writes the whole file elsewhere before
 * it replaces the old one, so it is skipped while the file system has less room than twice the file. A
 * file larger than STORE_COMPACTION_MAX_MB is left to the next load or close: NeDB's compaction holds
 * the collection, and for a moment the whole process, for a time that grows with the data
 * (docs/decisions/0108-no-compaction-of-large-files-while-running.md).
 *
 * Not NeDB's `setAutocompactionInterval`: it compacts every file at every tick however little changed,
 * and calls `compactDatafile` without a callback, so a compaction that fails (a full disk) would be an
 * unhandled rejection, which ends the process.
 */
import fs from "node:fs";
import path from "node:path";

/** Growth below which a file is never compacted while running (small files are cheap either way). */
export const COMPACTION_MIN_GROWTH = 1024 * 1024;

/** Whether a file of `size` bytes, `base` bytes after its last compaction, is due. */
export const compactionDue = (size: number, base: number): boolean =>
  size >= 2 * base && size - base >= COMPACTION_MIN_GROWTH;

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

/** Whether the file system of `file` has room for a copy of it, twice over; true when it cannot tell. */
export function roomToCompact(file: string, size: number): boolean {
  try {
    const fsStats = fs.statfsSync(path.dirname(file));
    return fsStats.bavail * fsStats.bsize >= 2 * size;
  } catch {
    return true;
  }
}
