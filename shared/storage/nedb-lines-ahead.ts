/**
 * A compaction's lines, made ahead a slice at a time
 * (docs/decisions/0078-nedb-compaction-while-running.md). NeDB's compaction turns every document of the
 * collection into its line in one loop that never gives the event loop a turn: for a large collection
 * the process sends no heartbeat and answers nothing for seconds, and its peers may drop it. Here the
 * lines are made first, in slices of about `SLICE_MS` with a turn of the event loop after each; NeDB's
 * loop then finds each line ready through the serialiser (nedb-serialize), which takes it out again.
 *
 * Lines are kept by document object, and a kept document is never changed (a write replaces it), so a
 * line made for an object is that object's line for good. Most are made before the compaction takes
 * the collection's queue, while operations go on (docs/decisions/0078-nedb-compaction-while-running.md);
 * inside the queue only the documents written meanwhile are left to make.
 */
import { serializeLine } from "./nedb-fast-paths";

/** How long one slice may run before the event loop gets a turn. */
export const SLICE_MS = 10;
/** Documents between two looks at the clock. */
const CHECK_EVERY = 64;

const ready = new Map<object, string>();

/** The line of `doc`: the one made ahead for it (taken out), else made now. */
export function lineOf(doc: unknown): string {
  if (typeof doc === "object" && doc !== null) {
    const line = ready.get(doc);
    if (line !== undefined) {
      ready.delete(doc);
      return line;
    }
  }
  return serializeLine(doc);
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Makes the lines of `docs` ahead, a slice at a time, except those already made; resolves to a function
 * that forgets whatever of them was not taken (call it once the compaction is over, whether or not it
 * succeeded).
 */
export async function makeLinesAhead(docs: readonly object[], sliceMs = SLICE_MS): Promise<() => void> {
  const forget = () => {
    for (const doc of docs) ready.delete(doc);
  };
  try {
    let i = 0;
    while (i < docs.length) {
      const until = performance.now() + sliceMs;
      do {
        if (!ready.has(docs[i])) ready.set(docs[i], serializeLine(docs[i]));
        i++;
      } while (i < docs.length && (i % CHECK_EVERY !== 0 || performance.now() < until));
      if (i < docs.length) await turn();
    }
  } catch (err) {
    forget();
    throw err;
  }
  return forget;
}

/** How many lines wait to be taken (tests). */
export const linesWaiting = (): number => ready.size;
